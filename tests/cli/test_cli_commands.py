"""The commands of the app, simulation and planning issues, run as a user runs them."""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from dialeval import METHODS
from dialeval.cli import app
from tests.conftest import strict_json_loads

runner = CliRunner()
DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited early: {proc.stdout.read() if proc.stdout else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("the server did not answer /healthz in time")


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def test_plan_from_expectations(tmp_path):
    out = tmp_path / "plan.json"
    plot = tmp_path / "plan.png"
    result = invoke(
        "plan", "--method", "acute", "--expect", "a>b:0.65", "--expect", "b>c:0.55", "--json", out, "--plot", plot
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(out.read_text())
    needed = {(p["a"], p["b"]): p["judgments_needed"] for p in plan["pairs"]}
    assert 0 < needed[("a", "b")] < needed[("b", "c")]  # a smaller effect needs more judgments
    assert plan["ranking"]["judgments_needed"] > 0
    assert plot.stat().st_size > 1000


def test_plan_rejects_a_bad_expectation():
    result = invoke("plan", "--method", "acute", "--expect", "a>b:1.6")
    assert result.exit_code == 2 and "rate above 1" in result.output


def test_bench_adaptive_quick(tmp_path):
    out = tmp_path / "bench.json"
    result = invoke("bench", "adaptive", "--quick", "--json", out)
    assert result.exit_code == 0, result.output
    bench = json.loads(out.read_text())
    for key in ("uniform_judgments", "adaptive_judgments", "aa_false_positive_rate"):
        assert key in bench
    assert bench["adaptive_judgments"] < bench["uniform_judgments"]


def test_simulate_and_report_a_study(tmp_path):
    folder = tmp_path / "sim"
    assert invoke("init", "acute", folder).exit_code == 0
    text = (folder / "study.yaml").read_text().replace("conversations: 10", "conversations: 4")
    (folder / "study.yaml").write_text(text.replace("turns: 6 ", "turns: 3 "))
    assert invoke("generate", folder).exit_code == 0
    result = invoke("simulate", folder, "--annotators", "12", "--seed", "1")
    assert result.exit_code == 0, result.output
    report = strict_json_loads((folder / "report" / "report.json").read_text())
    assert report["method"] == "acute" and len(report["systems"]) == 3
    assert sum(m["wins_a"] + m["wins_b"] for m in report["matchups"]) > 0
    assert (folder / "report" / "index.html").read_text().count("<img") >= 2
    # `report` pauses the cyclic garbage collector only while it runs, also when it refuses
    assert invoke("report", folder, "--png").exit_code == 0 and gc.isenabled()
    plots = {p.name for p in (folder / "report" / "plots").iterdir()}
    assert "leaderboard.svg" in plots and "leaderboard.png" in plots
    empty = tmp_path / "empty"
    assert invoke("init", "acute", empty).exit_code == 0
    refused = runner.invoke(app, ["report", str(empty)])
    assert refused.exit_code == 2 and "nothing to report" in refused.output and gc.isenabled()


def start_serve(folder: Path) -> tuple[int, subprocess.Popen]:
    """`dialeval serve FOLDER` on a free port, its output piped (not waited for)."""
    port = free_port()
    proc = subprocess.Popen(
        [*DIALEVAL, "serve", str(folder), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    return port, proc


def serve_new_study(folder: Path) -> tuple[int, subprocess.Popen]:
    """`dialeval init single-model FOLDER`, then `dialeval serve FOLDER` on a free port (not waited for)."""
    invoke("init", "single-model", folder)
    return start_serve(folder)


def test_serve_prints_links_and_answers(tmp_path):
    port, proc = serve_new_study(tmp_path / "served")
    try:
        wait_healthy(port, proc)
        page = httpx.get(f"http://127.0.0.1:{port}/s/served/?volunteer=1", follow_redirects=True)
        assert page.status_code == 200
    finally:
        out = stop(proc)
    assert f"http://127.0.0.1:{port}/s/served/" in out
    assert "PROLIFIC_PID" in out and "admin?token=" in out


def read_response(sock: socket.socket) -> str:
    """One whole HTTP/1.1 response (headers, then Content-Length bytes of body); '' when closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data.decode(errors="replace")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(v)
            for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
            if k.strip().lower() == b"content-length"
        ),
        0,
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return (head + b"\r\n\r\n" + body).decode(errors="replace")


def test_serve_keeps_an_idle_connection_longer_than_client_pools(tmp_path):
    """A connection idle for 6 s still answers its next request: uvicorn's default (5 s) closed it
    at the moment httpx's pool (keepalive_expiry 5 s) reused it, and load runs saw 'Server
    disconnected without sending a response'. Raw socket: httpx would quietly open a new one."""
    port, proc = serve_new_study(tmp_path / "served")
    request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    try:
        wait_healthy(port, proc)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            answers = []
            for pause in (0, 6):
                time.sleep(pause)
                sock.sendall(request)
                answers.append(read_response(sock))
    finally:
        stop(proc)
    assert [a.split("\r\n", 1)[0] for a in answers] == ["HTTP/1.1 200 OK"] * 2, answers


def test_demo_serves_every_method(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [*DIALEVAL, "demo", "--out", str(tmp_path / "demo"), "--port", str(port), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        wait_healthy(port, proc, seconds=240)
        start = httpx.get(f"http://127.0.0.1:{port}/").text
        for method in METHODS:
            assert method in start
            assert f"/s/demo-{method}/" in start
    finally:
        stop(proc)


def test_demo_simulated_into_reports(completed_demo):
    out = completed_demo  # `dialeval demo --simulate 8 --no-serve` in a subprocess (tests/conftest.py)
    for method in METHODS:
        report = strict_json_loads((out / method / "report" / "report.json").read_text())
        assert report["method"] == method
        assert report["systems"], f"{method}: no systems in the report"
        assert Path(out / method / "report" / "index.html").exists()


def test_generate_runs_where_an_event_loop_is_already_running(tmp_path):
    """A notebook cell (Jupyter runs an event loop) or Playwright's sync API calls the blocking
    commands with a loop running in the thread: generation must still run, not refuse."""
    import asyncio

    folder = tmp_path / "nb"
    assert invoke("init", "acute", folder).exit_code == 0
    text = (folder / "study.yaml").read_text().replace("conversations: 10", "conversations: 2")
    (folder / "study.yaml").write_text(text.replace("turns: 6 ", "turns: 2 "))

    async def notebook_cell():
        asyncio.get_running_loop()  # the situation under test: this thread runs a loop
        return invoke("generate", folder)

    result = asyncio.run(notebook_cell())
    assert result.exit_code == 0, result.output
    from dialeval.study import open_study

    opened = open_study(folder)
    try:
        assert len(opened.store.load_dataset(opened.id).conversations) >= 2
    finally:
        opened.close()
