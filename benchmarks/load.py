"""Load benchmark: every method with annotation pages, served by `dialeval serve`, driven over real
HTTP by simulated annotators in a separate client process.

For each database (SQLite with 2 workers, PostgreSQL with 4), each method of the registry with
annotation pages (dialeval.simulate.load.annotation_methods) and each pace (annotators answering
without pause; at human pace, a pause of uniform(--think) seconds before each answer and chat
message): a load study (the method's demo with enough work, LOAD_OVERRIDES), `dialeval serve`, the
client process (`python -m dialeval.simulate.load drive`), then the integrity checks (nothing lost,
nothing counted twice, no unit over its cap). Live methods (annotators chat) talk to a stub
OpenAI-compatible bot that answers after 100 ms, streamed word by word.

Beside each figure, the limits measured in the same run: the database's raw commit rate, the
judgments/s the two cores allow at the measured CPU per judgment (server + client, and on PostgreSQL
the local database server's processes), the judgments/s the annotators' own round trips allow
(annotators / seconds per judgment cycle), and, without pause, the framework's: the same server's
/healthz driven by as many keep-alive clients (10 s counted after 2 s; one thread hand-off and a trivial query per
request), divided by the requests the crowd sent per judgment -- what uvicorn, Starlette/FastAPI,
our middleware and the client allow if the method's own work cost nothing. The serve processes' CPU
per /healthz request times the requests per judgment is "framework CPU ms/judgment": of the
server's CPU per judgment, what is not the method's own work. "limit: write lock" is the judgments/s
at which the study's write lock would be held all the time (SQLite's one writer, PostgreSQL's advisory
lock; each serve process adds up its hold time, dialeval/store/lock_time.py): when it is near the
measured rate, the lock, not the cores, bounds the run; "write lock CPU ms/judgment" is the part of
the hold the holding threads computed, the rest they waited (for the GIL behind their process's
other threads, or for the database).

    python benchmarks/load.py                                    # the full run (both databases, 200 annotators)
    python benchmarks/load.py --dbs sqlite --annotators 20 --seconds 20 --methods acute spot-the-bot

Results go to benchmarks/load.json (one row per run). The Spot The Bot fault runs (kill -9 of a worker,
hosts behind HAProxy) are kept: --kill-worker SECONDS, --hosts N (they use the async Spot The Bot
client of dialeval.simulate.load).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dialeval.simulate.load import (
    Host,
    check_invariants,
    commit_rate,
    cpu_seconds,
    kill_host,
    loadavg,
    make_study,
    pct,
    postgres_pids,
    run_load,
    scratch_pg_schema,
    start_balancer,
    start_host,
    stop_balancer,
    stop_host,
)
from dialeval.store.lock_time import LOCK_TIME_DIR_ENV, read_totals


def run_one(args, annotators: int, workdir: Path) -> dict:
    drop = None
    if args.db == "sqlite":
        db_url = None
    else:
        db_url, drop = scratch_pg_schema(args.db)
    try:
        folder = make_study(workdir / f"study-{annotators}", database=db_url)
        from dialeval.store.engine import database_url

        url = database_url(folder, db_url)
        ceiling = commit_rate(url)
        hosts: list[Host] = []
        balancer = None
        addresses = ["127.0.0.1"] if args.hosts == 1 else [f"127.0.0.{2 + i}" for i in range(args.hosts)]
        extra = ["--db-connections", str(args.db_connections)] if args.db_connections else []
        for i, addr in enumerate(addresses):
            f = (
                folder
                if i == 0
                else Path(
                    shutil.copytree(
                        folder, workdir / f"study-{annotators}-host{i}", ignore=shutil.ignore_patterns("*.log")
                    )
                )
            )
            hosts.append(start_host(f, workers=args.workers, host=addr, extra=extra))
        if args.hosts > 1:
            balancer = start_balancer([h.url for h in hosts], workdir)
        base = balancer.url if balancer else hosts[0].url
        events: list[str] = []

        def during(elapsed: float) -> None:
            if args.kill_worker is not None and elapsed >= args.kill_worker and not events:
                if args.hosts > 1:
                    kill_host(hosts[-1])
                    events.append(f"kill -9 host {hosts[-1].url} at {elapsed:.1f} s")
                    return
                pids = hosts[0].worker_pids()
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    events.append(f"kill -9 worker {pids[0]} at {elapsed:.1f} s")

        load_before = loadavg()
        server_pids = [p for h in hosts for p in [h.process.pid, *h.worker_pids()]]  # workers: 1 = in-process
        cpu_before = cpu_seconds(server_pids)
        res = run_load(
            base, "load-test", annotators, args.seconds, tuple(args.think) if args.think else None, during=during
        )
        load_after = loadavg()
        cpu_used = cpu_seconds(server_pids) - cpu_before  # killed workers' time is not counted
        restart = None
        if args.kill_worker is not None and args.hosts == 1:
            kill_host(hosts[0])  # then the whole server, and a restart on the same data
            t0 = time.monotonic()
            hosts[0] = start_host(folder, workers=args.workers, extra=extra)
            restart = time.monotonic() - t0
        checks = check_invariants(url, res.acknowledged, cap=2)
        for h in hosts:
            stop_host(h)
        if balancer:
            stop_balancer(balancer)
        n = len(res.acknowledged)
        return {
            "db": "SQLite" if args.db == "sqlite" else "PostgreSQL",
            "hosts": args.hosts,
            "workers": args.workers,
            "annotators": annotators,
            "pace": f"{args.think[0]:g}-{args.think[1]:g} s" if args.think else "no pause",
            "judgments/s": n / res.seconds,
            "commit/s": ceiling,
            "ratio": (n / res.seconds) / ceiling,
            "submit p50": statistics.median(res.submit_ms) if res.submit_ms else float("nan"),
            "submit p99": pct(res.submit_ms, 0.99),
            "task p50": statistics.median(res.task_ms) if res.task_ms else float("nan"),
            "task p99": pct(res.task_ms, 0.99),
            "server CPU ms/judgment": 1000 * cpu_used / max(1, n),
            "5xx": sum(v for k, v in res.statuses.items() if k >= 500),
            "500": res.statuses.get(500, 0),
            "resets": res.statuses.get(0, 0),
            "acknowledged": n,
            "checks": "ok" if checks else "FAIL",
            "load": f"{load_before} -> {load_after}",
            "events": "; ".join(events) + (f"; restarted healthy in {restart:.1f} s" if restart is not None else ""),
            "statuses": dict(sorted(res.statuses.items())),
        }
    finally:
        if drop is not None:
            drop()


COLUMNS = [
    "db",
    "hosts",
    "workers",
    "annotators",
    "pace",
    "judgments/s",
    "commit/s",
    "ratio",
    "submit p50",
    "submit p99",
    "task p50",
    "task p99",
    "server CPU ms/judgment",
    "5xx",
    "acknowledged",
    "checks",
    "load",
]


def fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.2f}" if v < 10 else f"{v:.0f}"
    return str(v)


def pg_counters(url: str) -> tuple[int, int]:
    """(the server's transaction id counter, rows inserted + updated in the run's schema) so far.

    PostgreSQL gives a transaction an id only when it writes, so the counter's rise over a run is
    the number of write transactions (plus 1, this call's own); pg_stat_database's xact_commit also
    counts the read-only ones (every page view), which is not what one commit per judgment means.
    The counter is the whole server's: run on a server nothing else writes to."""
    import psycopg

    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        commits = conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
        rows = conn.execute(
            "SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables "
            "WHERE schemaname = current_schema()"
        ).fetchone()
    return int(commits[0]), int(rows[0])


def run_method(db: str, method: str, annotators: int, seconds: float, think, workers: int, workdir: Path) -> dict:
    """One run of one method (see the module doc); returns its row."""
    import json
    import subprocess

    from dialeval.registry import get
    from dialeval.simulate.load import check_method, make_method_study, start_stub_bot
    from dialeval.store.engine import database_url

    drop = stub = None
    db_url = None
    if db != "sqlite":
        db_url, drop = scratch_pg_schema(db)
    pace = f"{think[0]:g}-{think[1]:g} s" if think else "no pause"
    out = workdir / f"{method}-{'pg' if db_url else 'sqlite'}-{annotators}-{'human' if think else 'nopause'}"
    try:
        stub_url = None
        if get(method).live:
            stub_url, stub = start_stub_bot(0.1)
        folder = make_method_study(method, out, database=db_url, stub_bot=stub_url)
        url = database_url(folder, db_url)
        ceiling = commit_rate(url)
        lock_dir = out / "lock-time"  # each serve process's write-lock totals (dialeval/store/lock_time.py)
        host = start_host(folder, workers=workers, env={LOCK_TIME_DIR_ENV: str(lock_dir)})
        server_pids = [host.process.pid, *host.worker_pids()]
        pg_before = pg_counters(url) if db_url else None
        lock_before = read_totals(lock_dir)
        cpu_before = cpu_seconds(server_pids)
        # Backends start per connection during the run: the processes are listed at the end, and
        # a backend that ended in the run is not counted (the pools keep theirs open).
        db_cpu_before = dict((pid, cpu_seconds([pid])) for pid in postgres_pids()) if db_url else {}
        load_before = loadavg()
        result_file = out / "client.json"
        cmd = [
            sys.executable,
            "-m",
            "dialeval.simulate.load",
            "drive",
            "--url",
            host.url,
            "--folder",
            str(folder),
            "--slug",
            f"load-{method}",
            "--annotators",
            str(annotators),
            "--seconds",
            str(seconds),
            "--out",
            str(result_file),
        ]
        if think:
            cmd += ["--think", str(think[0]), str(think[1])]
        client = subprocess.Popen(cmd)
        _pid, status, usage = os.wait4(client.pid, 0)
        client.returncode = os.waitstatus_to_exitcode(status)
        cpu_used = cpu_seconds(server_pids) - cpu_before
        db_cpu = sum(cpu_seconds([pid]) - db_cpu_before.get(pid, 0.0) for pid in postgres_pids()) if db_url else 0.0
        pg_after = pg_counters(url) if db_url else None
        load_after = loadavg()
        lock_used = {k: v - lock_before[k] for k, v in read_totals(lock_dir).items()}  # written every 0.5 s
        floor = None if think else serving_floor(host.url, annotators, out, server_pids)
        stop_host(host)
        if client.returncode != 0:
            raise RuntimeError(f"the client process failed ({client.returncode})")
        from dialeval.simulate.load import MethodLoad

        raw = json.loads(result_file.read_text(encoding="utf-8"))
        raw["per_annotator"] = {int(k): v for k, v in raw["per_annotator"].items()}
        raw["statuses"] = {int(k): v for k, v in raw["statuses"].items()}
        res = MethodLoad(**raw)
        try:
            checks = check_method(folder, res)
            verdict = "ok"
        except AssertionError as exc:
            checks, verdict = {}, f"FAIL: {exc}"
        n = res.judgments
        rate = n / res.seconds if res.seconds else 0.0
        server_ms = 1000 * cpu_used / max(1, n)
        client_ms = 1000 * (usage.ru_utime + usage.ru_stime) / max(1, n)
        db_ms = 1000 * db_cpu / max(1, n)
        cores = os.cpu_count() or 1
        requests_per_judgment = res.requests / n if n else None
        floor_rps = floor["requests/s"] if floor else None
        cycle = (statistics.mean(res.task_ms) if res.task_ms else 0) + (
            statistics.mean(res.submit_ms) if res.submit_ms else 0
        )
        row = {
            "db": "PostgreSQL" if db_url else "SQLite",
            "workers": workers,
            "method": method,
            "annotators": annotators,
            "pace": pace,
            "seconds": res.seconds,
            "judgments/s": rate,
            "acknowledged": n,
            "task p50": statistics.median(res.task_ms) if res.task_ms else None,
            "task p99": pct(res.task_ms, 0.99) if res.task_ms else None,
            "submit p50": statistics.median(res.submit_ms) if res.submit_ms else None,
            "submit p99": pct(res.submit_ms, 0.99) if res.submit_ms else None,
            "first word p50": statistics.median(res.first_word_ms) if res.first_word_ms else None,
            "first word p99": pct(res.first_word_ms, 0.99) if res.first_word_ms else None,
            "server CPU ms/judgment": server_ms,
            "client CPU ms/judgment": client_ms,
            "database CPU ms/judgment": db_ms if db_url else None,
            # the limits measured in the same run
            "limit: cores": 1000 * cores / (server_ms + client_ms + db_ms) if n else None,
            "limit: commit/s": ceiling,
            "limit: annotators/cycle": (1000 * annotators / cycle) if cycle and not think else None,
            "limit: framework": floor_rps / requests_per_judgment if floor_rps and requests_per_judgment else None,
            # the judgments/s at which the study's write lock (SQLite's one writer, PostgreSQL's
            # advisory lock) would be held all the time, at the hold time per judgment measured
            "limit: write lock": n / lock_used["held_s"] if n and lock_used["held_s"] > 0 else None,
            "floor requests/s": floor_rps,
            "write lock held ms/judgment": 1000 * lock_used["held_s"] / max(1, n),
            # of the hold, the holding threads' own CPU; the rest they waited (the GIL, the database)
            "write lock CPU ms/judgment": 1000 * lock_used["held_cpu_s"] / max(1, n),
            "write lock busy": lock_used["held_s"] / res.seconds if res.seconds else None,
            # the server's CPU for what the framework alone costs at this run's requests per judgment
            # (the floor's server ms per request x requests per judgment); the rest is the method's
            "framework CPU ms/judgment": floor["server ms/request"] * requests_per_judgment
            if floor and floor.get("server ms/request") and requests_per_judgment
            else None,
            "requests/judgment": requests_per_judgment,
            "db write commits/judgment": (pg_after[0] - pg_before[0] - 1) / max(1, n) if db_url else None,
            "rows written/judgment": (pg_after[1] - pg_before[1]) / max(1, n) if db_url else None,
            "5xx": sum(v for k, v in res.statuses.items() if k >= 500),
            "statuses": dict(sorted(res.statuses.items())),
            "errors": res.errors[:5],
            "checks": verdict,
            "integrity": checks,
            "load": f"{load_before} -> {load_after}",
        }
        return row
    finally:
        if stub is not None:
            stub.kill()
            stub.wait()
        if drop is not None:
            drop()


FLOOR_SECONDS = 10.0


def serving_floor(url: str, annotators: int, out: Path, server_pids: list[int]) -> dict | None:
    """The same server's /healthz driven by as many keep-alive clients as the run had annotators,
    from a separate client process (dialeval.simulate.load.drive_floor): the requests/s the
    framework, the middleware and the client allow when a route costs one thread hand-off and a
    trivial query; and the serve processes' CPU per answered request meanwhile."""
    import json
    import subprocess

    result = out / "floor.json"
    cmd = [sys.executable, "-m", "dialeval.simulate.load", "floor", "--url", url, "--connections", str(annotators)]
    cmd += ["--seconds", str(FLOOR_SECONDS), "--out", str(result)]
    before = cpu_seconds(server_pids)
    if subprocess.run(cmd).returncode != 0:
        return None
    floor = json.loads(result.read_text(encoding="utf-8"))
    used = cpu_seconds(server_pids) - before
    floor["server ms/request"] = 1000 * used / floor["answered"] if floor.get("answered") else None
    return floor


METHOD_COLUMNS = [
    "db",
    "method",
    "annotators",
    "pace",
    "judgments/s",
    "limit: cores",
    "limit: framework",
    "limit: write lock",
    "limit: commit/s",
    "limit: annotators/cycle",
    "requests/judgment",
    "task p50",
    "task p99",
    "submit p99",
    "first word p50",
    "server CPU ms/judgment",
    "framework CPU ms/judgment",
    "client CPU ms/judgment",
    "database CPU ms/judgment",
    "db write commits/judgment",
    "5xx",
    "checks",
    "load",
]
WORKERS = {"sqlite": 2}  # PostgreSQL: 4
PG = "postgresql://postgres@127.0.0.1:5432/test"


def main(argv: list[str] | None = None) -> None:
    import json
    from datetime import UTC, datetime

    from dialeval.simulate.load import annotation_methods

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dbs", nargs="+", default=["sqlite", PG], help="sqlite and/or PostgreSQL URLs (fresh schemas)")
    p.add_argument("--methods", nargs="+", help="default: every method with annotation pages (the registry)")
    p.add_argument("--annotators", type=int, nargs="+", default=[200])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--paces", nargs="+", choices=("nopause", "human"), default=["nopause", "human"])
    p.add_argument("--think", type=float, nargs=2, metavar=("MIN", "MAX"), help="human pace (default 5 20 s)")
    p.add_argument("--workers", type=int, help="default: 2 on SQLite, 4 on PostgreSQL")
    p.add_argument("--out", default=str(Path(__file__).with_name("load.json")))
    # the Spot The Bot fault runs (async client)
    p.add_argument("--db", default=None, help="fault runs: sqlite or a PostgreSQL URL")
    p.add_argument("--hosts", type=int, default=1, help="fault runs: serve processes on 127.0.0.2.. behind HAProxy")
    p.add_argument("--kill-worker", type=float, metavar="SECONDS", help="fault runs: kill -9 a worker (a host)")
    p.add_argument("--db-connections", type=int, help="fault runs: passed to serve --db-connections")
    args = p.parse_args(argv)
    if args.kill_worker is not None or args.hosts > 1 or args.db:
        return fault_main(args)
    methods = args.methods or annotation_methods()
    rows = []
    print("| " + " | ".join(METHOD_COLUMNS) + " |")
    print("|" + "---|" * len(METHOD_COLUMNS), flush=True)
    with tempfile.TemporaryDirectory(prefix="dialeval-load-") as tmp:
        for db in args.dbs:
            workers = args.workers or WORKERS.get(db, 4)
            for method in methods:
                for n in args.annotators:
                    for pace in args.paces:
                        think = tuple(args.think or (5.0, 20.0)) if pace == "human" else None
                        row = run_method(db, method, n, args.seconds, think, workers, Path(tmp))
                        rows.append(row)
                        print("| " + " | ".join(fmt(row[c]) for c in METHOD_COLUMNS) + " |", flush=True)
                        if row["errors"] or row["checks"] != "ok":
                            print(f"  {row['checks']} {row['statuses']} {row['errors']}", file=sys.stderr, flush=True)
                        Path(args.out).write_text(
                            json.dumps(
                                {
                                    "command": "python benchmarks/load.py " + " ".join(argv or sys.argv[1:]),
                                    "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                                    "cpus": os.cpu_count(),
                                    "runs": rows,
                                },
                                indent=1,
                            ),
                            encoding="utf-8",
                        )


def fault_main(args) -> None:
    args.db = args.db or "sqlite"
    args.workers = args.workers or 2
    args.think = tuple(args.think) if args.think else None  # fault runs: no pause unless asked
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    with tempfile.TemporaryDirectory(prefix="dialeval-load-") as tmp:
        for n in args.annotators:
            row = run_one(args, n, Path(tmp))
            print("| " + " | ".join(fmt(row[c]) for c in COLUMNS) + " |", flush=True)
            print(f"  statuses {row['statuses']} {row['events']}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
