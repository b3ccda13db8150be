"""The load benchmark's bounded version: `dialeval serve --workers 2` driven over HTTP by simulated
annotators (dialeval.simulate.load, as in benchmarks/load.py), a worker killed with `kill -9`
mid-run, then the database checks:
no unit over its cap, no assignment held twice, no duplicate judgment, every acknowledged one
stored. Also what the operator sees: the access log, the worker's death and respawn in the log,
SIGTERM leaving no process behind. Asserts invariants, never timings."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from dialeval.simulate import load
from dialeval.store.engine import database_url

ANNOTATORS = 12
SECONDS = 3.5  # a worker is killed at 1.5 s: load before it, and 2 s on the survivor and the respawn


def run_in_thread(fn, *args, **kwargs):
    # Playwright's sync API (browser tests in the same run) keeps an event loop in the main thread
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except OSError:
        return False


def drive_with_kill(folder, db_url):
    host = load.start_host(folder, workers=2, extra=["--access-log"])
    killed: list[int] = []
    try:

        def during(elapsed: float) -> None:
            if elapsed >= 1.5 and not killed:
                pids = host.worker_pids()
                os.kill(pids[-1], signal.SIGKILL)
                killed.append(pids[-1])

        res = run_in_thread(load.run_load, host.url, "load-test", ANNOTATORS, SECONDS, None, during)
        assert killed, "no worker was killed"
        deadline = time.monotonic() + 30  # the supervisor respawns the worker; wait for it to log its start
        while time.monotonic() < deadline and host.log.read_text().count("Started server process") < 3:
            time.sleep(0.2)
        ps = subprocess.run(["ps", "-o", "pid=", "--ppid", str(host.process.pid)], capture_output=True, text=True)
        children = [int(p) for p in ps.stdout.split()]  # workers and multiprocessing's resource tracker
        assert len(children) >= 2
        # SIGTERM: requests in flight finish, then every process of the server is gone
        host.process.send_signal(signal.SIGTERM)
        host.process.wait(timeout=30)
        time.sleep(0.5)
        assert [p for p in children if alive(p)] == []
    finally:
        load.stop_host(host)
    log = host.log.read_text()
    assert f"Child process [{killed[0]}] died" in log  # the death is logged, and the respawn:
    assert log.count("Started server process") >= 3
    access = [line for line in log.splitlines() if " access [" in line]
    assert any(" POST /s/load-test/a/" in line and " 200 " in line for line in access)
    assert all("load" not in line.split("annotator=")[-1] for line in access)  # ids are hashed
    assert res.acknowledged, f"nothing acknowledged: {res.statuses} {res.errors[:3]}"
    assert res.statuses.get(500, 0) == 0, res.statuses
    checks = load.check_invariants(db_url or database_url(folder), res.acknowledged, cap=2)
    assert checks["judgments"] >= len(res.acknowledged)
    # restart on the same data: healthy, and the study goes on
    again = load.start_host(folder, workers=1)
    try:
        more = run_in_thread(load.run_load, again.url, "load-test", 3, 1.0)
        load.check_invariants(db_url or database_url(folder), res.acknowledged + more.acknowledged, cap=2)
    finally:
        load.stop_host(again)


def test_load_and_kill_sqlite(tmp_path):
    folder = load.make_study(tmp_path / "s", conversations_per_pair=40, humans=20)
    drive_with_kill(folder, None)


def test_load_and_kill_postgres(tmp_path, pg_url):
    folder = load.make_study(tmp_path / "s", conversations_per_pair=40, humans=20, database=pg_url)
    drive_with_kill(folder, pg_url)


def test_no_free_connection_is_a_503_never_a_500(tmp_path, pg_url):
    """One connection for the whole server, a short wait: crowding answers 503 + Retry-After."""
    folder = load.make_study(tmp_path / "s", conversations_per_pair=10, humans=5, database=pg_url)
    host = load.start_host(folder, workers=1, extra=["--db-connections", "1"], env={"DIALEVAL_DB_POOL_TIMEOUT": "0.05"})
    try:

        def hammer(n: int) -> list[httpx.Response]:
            with httpx.Client(base_url=host.url, timeout=30) as c:
                return [c.get("/s/load-test/", params={"PROLIFIC_PID": f"busy{n}x{k}"}) for k in range(4)]

        # Make crowding certain instead of a matter of timing: while the test holds a lock on the
        # annotators table, the first request waits on it with the server's only connection checked
        # out, so every other request finds the pool empty. The lock is released after 2 s.
        import psycopg

        with psycopg.connect(pg_url) as blocker:
            blocker.execute("LOCK TABLE annotators IN ACCESS EXCLUSIVE MODE")
            with ThreadPoolExecutor(24) as pool:
                pending = pool.map(hammer, range(24))
                time.sleep(2.0)
                blocker.rollback()  # releases the lock: the waiting request goes on
                answers = [r for rs in pending for r in rs]
        codes = {r.status_code for r in answers}
        assert 500 not in codes
        busy = [r for r in answers if r.status_code == 503]
        assert busy, f"no request found the pool full: {codes}"
        assert busy[0].headers["Retry-After"] == "2"
        assert 'http-equiv="refresh"' in busy[0].text and "tries again by itself" in busy[0].text
        assert any(r.status_code in (200, 303) for r in answers)
    finally:
        load.stop_host(host)


def test_healthz_answers_503_when_the_database_is_gone(tmp_path, pg_url):
    """A TCP relay between the server and PostgreSQL is cut: /healthz says 503, then 200 again."""
    import asyncio
    import threading

    relay_port = load.free_port()
    stop = threading.Event()
    servers: list = []

    async def pipe(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    open_writers: list = []

    async def handle(cr, cw):
        if stop.is_set():
            cw.close()
            return
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", 5432)
        except OSError:
            cw.close()
            return
        open_writers.extend([cw, uw])
        await asyncio.gather(pipe(cr, uw), pipe(ur, cw))

    def cut() -> None:  # refuse new connections and break the open ones (as a database host gone)
        stop.set()
        for w in list(open_writers):
            loop.call_soon_threadsafe(w.close)

    loop = asyncio.new_event_loop()

    def run_relay():
        asyncio.set_event_loop(loop)
        servers.append(loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", relay_port)))
        loop.run_forever()

    threading.Thread(target=run_relay, daemon=True).start()
    time.sleep(0.3)
    relayed = pg_url.replace("127.0.0.1:5432", f"127.0.0.1:{relay_port}")
    assert relayed != pg_url
    folder = load.make_study(tmp_path / "s", conversations_per_pair=5, humans=3, database=relayed)
    host = load.start_host(folder, workers=1)
    try:
        assert httpx.get(host.url + "/healthz").status_code == 200
        cut()
        deadline = time.monotonic() + 20
        code = 200
        while time.monotonic() < deadline and code == 200:
            code = httpx.get(host.url + "/healthz", timeout=30).status_code
            time.sleep(0.2)
        assert code == 503
        stop.clear()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and code != 200:
            code = httpx.get(host.url + "/healthz", timeout=30).status_code
            time.sleep(0.2)
        assert code == 200
    finally:
        load.stop_host(host)
        loop.call_soon_threadsafe(loop.stop)
