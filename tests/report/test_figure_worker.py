"""The report command's figure worker (report/figure_worker.py): the figures it draws in a second process
are the bytes an in-process render gives; without it, or when it fails, the same files are written."""

from __future__ import annotations

import base64
import json
import multiprocessing
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval.report import build, figure_worker

FORK = sys.platform != "darwin" and "fork" in multiprocessing.get_all_start_methods()

# The report command with a note on stderr of whether the worker delivered the figures.
CLI = (
    "import sys; from dialeval.report import figure_worker as fw; receive = fw.FigureWorker.receive\n"
    "def noted(self):\n"
    "    got = receive(self); print('worker delivered' if got else 'worker failed', file=sys.stderr); return got\n"
    "fw.FigureWorker.receive = noted\n"
    "from dialeval.cli import app; app(sys.argv[1:])"
)


def _run(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def study(completed_demo, tmp_path_factory):
    """An arena study completed by simulated annotators: a copy of the suite's completed demo's (tests/conftest.py:
    `dialeval demo --simulate 8 --no-serve`, made once per test run), as the tests below write its report."""
    return Path(shutil.copytree(completed_demo / "arena", tmp_path_factory.mktemp("worker") / "arena"))


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "plots").iterdir())}


def _embedded(page: str) -> list[bytes]:
    return [base64.b64decode(data) for data in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)]


@pytest.mark.skipif(not FORK, reason="the worker is forked only where fork is usual")
def test_the_report_command_draws_in_its_worker_the_bytes_of_an_in_process_render(study):
    done = _run("-c", CLI, "report", str(study), "--png")
    assert "worker delivered" in done.stderr and "Traceback" not in done.stderr
    out = study / "report"
    files = _files(out)
    assert {"leaderboard.svg", "win-rates.svg", "leaderboard.png", "win-rates.png"} <= set(files)
    # the page carries every SVG file's bytes, in the order of the figures
    page = (out / "index.html").read_text(encoding="utf-8")
    here = build.rendered_figures(json.loads((out / "report.json").read_text(encoding="utf-8")), png=True)
    assert _embedded(page) == [svg for svg, _ in here.values()]
    assert all("plots/" + name + ".svg" in page for name in here)
    # byte for byte what this process renders from the report alone
    assert files == {
        **{f"{name}.svg": svg for name, (svg, _) in here.items()},
        **{f"{name}.png": png for name, (_, png) in here.items()},
    }


def test_without_a_worker_the_command_writes_the_same_files(study):
    with_worker = _run("-c", CLI, "report", str(study))
    first = _files(study / "report")
    no_worker = "import sys, dialeval.report.figure_worker as w; w.start = lambda: None\n" + CLI
    done = _run("-c", no_worker, "report", str(study))
    assert "worker" not in done.stderr  # nothing forked, nothing received: drawn in-process
    assert _files(study / "report") == first and first
    assert "Traceback" not in with_worker.stderr


def _report(study) -> dict:
    if not (study / "report" / "report.json").exists():
        _run("-m", "dialeval.cli", "report", str(study))
    return json.loads((study / "report" / "report.json").read_text(encoding="utf-8"))


@pytest.mark.skipif(not FORK, reason="the worker is forked only where fork is usual")
def test_a_worker_that_died_leaves_the_figures_to_this_process(study, tmp_path, monkeypatch):
    report = _report(study)
    build.write_report(report, tmp_path / "here")
    monkeypatch.setattr("threading.active_count", lambda: 1)  # pytest may run threads; this test forks anyway
    with figure_worker.figure_worker() as worker:
        assert worker is not None
        worker._process.kill()
        worker._process.join()
        build.write_report(report, tmp_path / "dead", worker=worker)
    assert _files(tmp_path / "dead") == _files(tmp_path / "here")
    assert not multiprocessing.active_children()


@pytest.mark.skipif(not FORK, reason="the worker is forked only where fork is usual")
def test_a_live_worker_gives_the_in_process_bytes_and_is_gone_after(study, tmp_path, monkeypatch):
    report = _report(study)
    build.write_report(report, tmp_path / "here", png=True)
    monkeypatch.setattr("threading.active_count", lambda: 1)
    with figure_worker.figure_worker() as worker:
        assert worker is not None
        sent = worker.send(report, True)
        got = worker.receive()
    assert sent and got is not None
    assert {f"{n}.svg": svg for n, (svg, _) in got.items()} | {f"{n}.png": png for n, (_, png) in got.items()} == (
        _files(tmp_path / "here")
    )
    assert not multiprocessing.active_children()


@pytest.mark.skipif(not FORK, reason="the worker is forked only where fork is usual")
def test_no_worker_is_left_behind_by_an_error(monkeypatch):
    monkeypatch.setattr("threading.active_count", lambda: 1)
    with pytest.raises(RuntimeError), figure_worker.figure_worker() as worker:
        assert worker is not None
        process = worker._process
        raise RuntimeError("the statistics failed")
    assert process._closed and not multiprocessing.active_children()


def test_no_fork_from_a_process_with_other_threads(monkeypatch):
    monkeypatch.setattr("threading.active_count", lambda: 2)
    assert figure_worker.start() is None
    monkeypatch.setattr("threading.active_count", lambda: 1)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert figure_worker.start() is None
