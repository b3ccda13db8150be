"""A study whose tasks are made before collection (ACUTE-Eval's conversations, a prompt set's
answers) served or simulated before they exist: `serve` says so beside the links, where an
annotator -- a paid one too -- would otherwise consent, read the instructions and find nothing to
do, and `simulate` stops with the same words and exit code 2, leaving nothing behind. The command
line in a subprocess, as the README prints it (init, then serve or simulate, generate forgotten)."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tests.cli.test_prolific_setup import init, served_output

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]
NO_TASK = "has no task to give annotators yet"


def test_simulate_stops_before_the_crowd_when_nothing_was_generated(tmp_path):
    for method, material in (("acute", "the conversations it shows"), ("prompts", "its systems' answers")):
        folder = tmp_path / method
        init(method, folder)
        done = subprocess.run(
            [*DIALEVAL, "simulate", str(folder), "--annotators", "3"], capture_output=True, text=True, timeout=300
        )
        said = " ".join(done.stderr.split())
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
        assert NO_TASK in said and material in said, said
        assert f"dialeval generate {folder}" in said and "no simulated annotator was sent" in said, said
        assert not (folder / "simulation").exists()  # refused before anybody was simulated
        assert "wrote the report" not in done.stdout


def test_serve_warns_beside_the_links(tmp_path):
    folder = tmp_path / "acute"
    init("acute", folder)
    out = " ".join(served_output(folder).split())
    assert "annotator http://" in out  # served all the same: generate may run while it is up
    assert f"warning: {folder.resolve()} {NO_TASK}" in out and "dialeval generate" in out, out


def test_a_study_with_its_tasks_gets_no_such_warning(completed_demo, tmp_path):
    folder = shutil.copytree(completed_demo / "acute", tmp_path / "acute")
    out = " ".join(served_output(folder).split())
    assert "annotator http://" in out and NO_TASK not in out, out
