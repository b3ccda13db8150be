"""The deployment how-to (docs/how-to/deploy.md), run as written: every command of its three ```bash blocks in
order (a `serve` or `haproxy` line runs in the background until its block ends), with the
`haproxy.cfg` it shows. Only ports, the folder and the PostgreSQL URL are replaced by the test's.
Simulated annotators work through each server started, and the database checks follow."""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from dialeval.simulate import load
from dialeval.store.engine import make_engine

README = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "deploy.md"  # the page that shows them
README_PG = "postgresql://postgres@127.0.0.1:5432/test"


def deployment_blocks() -> tuple[list[list[str]], str]:
    section = README.read_text().split("\n## Deployment\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, flags=re.S)
    commands = [[ln for ln in body.splitlines() if ln.strip()] for lang, body in blocks if lang == "bash"]
    configs = [body for lang, body in blocks if lang == ""]
    assert len(commands) == 3 and len(configs) == 1
    return commands, configs[0]


def judgments_in(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as c:
            return {r for (r,) in c.execute(text("SELECT client_request_id FROM judgments"))}
    finally:
        engine.dispose()


def drive(url: str, n: int = 4) -> load.LoadResult:
    """n simulated annotators at once until 2n judgments are acknowledged (60 s at most): a fixed 2 s
    run acknowledged nothing on a machine at load 9, and on a fast one ends later than it needs to."""
    res = load.LoadResult()

    def enough(_elapsed: float) -> None:
        if len(res.acknowledged) >= 2 * n:
            res.stop.set()

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API may hold the main thread's loop
        pool.submit(load.run_load, url, "load-test", n, 60.0, None, enough, res).result()
    assert res.acknowledged and res.statuses.get(500, 0) == 0, (res.statuses, res.errors[:3])
    return res


def test_readme_deployment_as_written(tmp_path, pg_url):
    if shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists():
        pytest.fail("HAProxy is missing: scripts/setup.sh installs it (apt-get install haproxy)")
    blocks, haproxy_cfg = deployment_blocks()
    load.make_study(tmp_path / "my-study", conversations_per_pair=20, humans=10, name="load-test")
    port = load.free_port("127.0.0.2")
    front = load.free_port()
    cfg = haproxy_cfg.replace(":8000", f":{port}").replace("127.0.0.1:8080", f"127.0.0.1:{front}")
    (tmp_path / "haproxy.cfg").write_text(cfg)

    def concrete(line: str) -> str:
        return line.replace(README_PG, pg_url).replace("--port 8000", f"--port {port}")

    acknowledged: list[str] = []
    backups: dict[str, str] = {}

    def settle(starting: list[tuple[str, subprocess.Popen, Path]]) -> None:
        """Wait for the servers started since the last command (they start side by side, as a
        user's would) and drive the one on 127.0.0.1."""
        for host, proc, log in starting:
            load.wait_healthy(f"http://{host}:{port}", proc, log)
        for host, _proc, _log in starting:
            if host == "127.0.0.1":
                acknowledged.extend(drive(f"http://{host}:{port}").acknowledged)
        starting.clear()

    for block in blocks:
        background: list[subprocess.Popen] = []
        starting: list[tuple[str, subprocess.Popen, Path]] = []  # serve lines not yet waited for
        try:
            for line in block:
                argv = shlex.split(concrete(line))
                if argv[0] == "dialeval":
                    argv = [sys.executable, "-m", "dialeval.cli", *argv[1:]]
                if "serve" in argv:
                    host = argv[argv.index("--host") + 1]
                    log = tmp_path / f"serve-{host}.log"
                    with open(log, "wb") as out:
                        proc = subprocess.Popen(argv, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
                    background.append(proc)
                    starting.append((host, proc, log))
                    continue
                settle(starting)
                if argv[0] == "haproxy":
                    exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
                    proc = subprocess.Popen(
                        [exe, *argv[1:], "-db"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    )
                    background.append(proc)
                    balancer = f"http://127.0.0.1:{front}"
                    load.wait_healthy(balancer, proc, None, 30)
                    acknowledged += drive(balancer, n=6).acknowledged
                    token = (tmp_path / "my-study" / ".admin-token").read_text().strip()
                    for _ in range(2):  # whichever host answers, the admin token is valid
                        assert (
                            httpx.get(
                                f"{balancer}/s/load-test/admin", params={"token": token}, follow_redirects=True
                            ).status_code
                            == 200
                        )
                else:
                    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
                    assert done.returncode == 0, (line, done.stdout, done.stderr)
                    if "backup" in argv:
                        backups[argv[-1]] = list(acknowledged)
            settle(starting)
        finally:
            for proc in background:
                proc.send_signal(signal.SIGTERM)
            for proc in background:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    pytest.fail(f"{proc.args} did not stop on SIGTERM")
    assert len(backups) == 2
    for dest, acked in backups.items():
        assert acked and set(acked) <= judgments_in(f"sqlite:///{tmp_path / dest}")
    assert f"database: {pg_url}" in (tmp_path / "my-study" / "study.yaml").read_text()
    load.check_invariants(pg_url, acknowledged, cap=2)  # everything, SQLite era included, is in PostgreSQL
