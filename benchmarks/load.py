"""Load and fault benchmark: simulated annotators through the real HTTP flow against `dialeval serve`.

Each simulated annotator is a browser-like httpx client: entry, consent, instructions, then the
Spot The Bot task page (GET, "next unit") and one POST per segment ("submit"; a retry re-sends the
same request id), until its packages are done; then a fresh annotator takes its place, so the
number of annotators working stays N for the whole run. Every acknowledged answer (HTTP 200,
``ok``) is remembered by its request id.

After each run the database is checked (same checks after a ``kill -9``):
  - no unit over its cap (submitted + open assignments <= annotations_per_segment);
  - no assignment held by two annotators (every judgment of an assignment is by its annotator,
    and no annotator holds two open assignments);
  - no duplicate judgment per (annotator, request id);
  - every acknowledged judgment present.

The raw commit rate of the same database (one connection, one-row transactions into a scratch
table, same engine settings as the app) is measured in the same run as the ceiling.

    python benchmarks/load.py --db sqlite --workers 2 --annotators 10 200 --seconds 30
    python benchmarks/load.py --db postgresql://postgres@127.0.0.1/test --workers 2 --annotators 200
    python benchmarks/load.py --db sqlite --annotators 200 --think 5 20      # human pace
    python benchmarks/load.py --db sqlite --annotators 50 --kill-worker 10   # kill -9 a worker at 10 s
    python benchmarks/load.py --db postgresql://... --hosts 2 --workers 2    # 2 hosts behind HAProxy

The pieces (make_study, start_hosts, run_load, check_invariants, commit_rate) are used by the
bounded test in tests/concurrency/test_load_bounded.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ANSWER = {"entity0": "bot", "entity1": "human", "fluency": "0", "sensibleness": "tie", "specificity": "1"}
BOT_PAIRS = (("retrieval", "eliza"), ("retrieval", "repeat"), ("eliza", "repeat"))
BOTS = [
    {"name": "retrieval", "type": "retrieval"},
    {"name": "eliza", "type": "eliza"},
    {"name": "repeat", "type": "repeat"},
]


# -- the study ----------------------------------------------------------------------------------------
def make_study(
    folder: Path,
    *,
    conversations_per_pair: int = 200,
    humans: int = 100,
    database: str | None = None,
    annotations_per_segment: int = 2,
    packages_per_annotator: int = 2,
    name: str = "load-test",
) -> Path:
    """A Spot The Bot study with hand-made conversations (no bot is called): 4 bot + 1 human segment
    per package, 3 segment lengths; 200 conversations per pair give 450 packages."""
    from dialeval.records import Conversation, Turn
    from dialeval.study import open_study

    data = {
        "name": name,
        "method": "spot-the-bot",
        "seed": 1,
        "bots": BOTS,
        "generation": {
            "mode": "bot-bot",
            "conversations": conversations_per_pair,
            "turns": 5,
            "human_conversations": humans,
        },
        "annotation": {"expire_minutes": 30},
        "protocol": {
            "segment_exchanges": [1, 2, 3],
            "bot_segments_per_package": 4,
            "human_segments_per_package": 1,
            "packages_per_annotator": packages_per_annotator,
            "annotations_per_segment": annotations_per_segment,
        },
    }
    if database:
        data["database"] = database
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    study = open_study(folder)
    try:
        from dialeval.records import Dataset

        convs = []
        for a, b in BOT_PAIRS:
            for k in range(conversations_per_pair):
                turns = [
                    Turn("entity0", "Do you like cooking?", is_seed=True),
                    Turn("entity1", "Yes, I bake bread.", is_seed=True),
                ]
                for i in range(5):
                    turns.append(Turn("entity0", f"{a} line {i} ({k})", bot=a))
                    turns.append(Turn("entity1", f"{b} line {i} ({k})", bot=b))
                convs.append(Conversation(id=f"botbot-{a}-{b}-{k:04d}", bots=[a, b], turns=turns, source="bot-bot"))
        for k in range(humans):
            convs.append(
                Conversation(
                    id=f"human-{k:04d}",
                    bots=["human", "human"],
                    source="human",
                    turns=[Turn(f"entity{i % 2}", f"human line {i} of {k}") for i in range(10)],
                )
            )
        study.store.save_dataset(study.id, Dataset(method="spot-the-bot", conversations=convs))
    finally:
        study.close()
    return folder


# -- servers --------------------------------------------------------------------------------------------
def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Host:
    url: str
    process: subprocess.Popen
    folder: Path
    log: Path

    def worker_pids(self) -> list[int]:
        """The uvicorn worker processes (children of the serve process, not multiprocessing's
        resource tracker)."""
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)], capture_output=True, text=True)
        pids = []
        for p in out.stdout.split():
            try:
                if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text(errors="replace"):
                    pids.append(int(p))
            except OSError:
                continue
        return pids


def dialeval_cmd() -> list[str]:
    return [sys.executable, "-m", "dialeval.cli"]


def start_host(
    folder: Path,
    *,
    workers: int,
    host: str = "127.0.0.1",
    extra: list[str] | None = None,
    env: dict | None = None,
    timeout: float = 90,
) -> Host:
    """`dialeval serve FOLDER --workers K` on a free port of `host`; waits for /healthz."""
    port = free_port(host)
    log = folder / f"serve-{host}-{port}.log"
    cmd = [
        *dialeval_cmd(),
        "serve",
        str(folder),
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        *(extra or []),
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, start_new_session=True
        )
    url = f"http://{host}:{port}"
    wait_healthy(url, proc, log, timeout)
    return Host(url=url, process=proc, folder=folder, log=log)


def wait_healthy(url: str, proc: subprocess.Popen | None, log: Path | None, timeout: float = 90) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log.read_text() if log else ''}")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not become healthy in {timeout} s")


def stop_host(h: Host, timeout: float = 20) -> None:
    if h.process.poll() is None:
        h.process.send_signal(signal.SIGTERM)
        try:
            h.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(h.process.pid, signal.SIGKILL)
            h.process.wait()


def kill_host(h: Host) -> None:
    """kill -9 of the serve process and its workers (as a machine that dies)."""
    try:
        os.killpg(h.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    h.process.wait()


# -- the balancer ----------------------------------------------------------------------------------------
@dataclass
class Balancer:
    url: str
    process: subprocess.Popen
    config: Path


def haproxy_config(backends: list[str], host: str, port: int) -> str:
    """Round-robin, no stickiness; a host that stops answering is taken out by its health check."""
    servers = "\n".join(
        f"    server h{i} {b.removeprefix('http://')} check inter 500 fall 2 rise 2" for i, b in enumerate(backends)
    )
    return f"""global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    retries 2
    option redispatch
frontend web
    bind {host}:{port}
    default_backend dialeval
backend dialeval
    balance roundrobin
    option httpchk GET /healthz
{servers}
"""


def start_balancer(backends: list[str], workdir: Path, host: str = "127.0.0.1") -> Balancer:
    exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not Path(exe).exists():
        raise RuntimeError("HAProxy is not installed (apt-get install haproxy; scripts/setup.sh does it)")
    port = free_port(host)
    cfg = workdir / "haproxy.cfg"
    cfg.write_text(haproxy_config(backends, host, port), encoding="utf-8")
    proc = subprocess.Popen(
        [exe, "-f", str(cfg), "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    url = f"http://{host}:{port}"
    wait_healthy(url, proc, None, 30)
    return Balancer(url=url, process=proc, config=cfg)


def stop_balancer(b: Balancer) -> None:
    if b.process.poll() is None:
        b.process.terminate()
        try:
            b.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            b.process.kill()
            b.process.wait()


# -- the simulated annotators ----------------------------------------------------------------------------
@dataclass
class LoadResult:
    seconds: float = 0.0
    acknowledged: list[str] = field(default_factory=list)  # request ids answered 200 ok
    submit_ms: list[float] = field(default_factory=list)
    task_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    annotators: int = 0

    def count(self, status: int) -> None:
        self.statuses[status] = self.statuses.get(status, 0) + 1


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def one_annotator(
    client: httpx.AsyncClient,
    slug: str,
    res: LoadResult,
    stop_at: float,
    think: tuple[float, float] | None,
    rng: random.Random,
) -> None:
    """One annotator from entry to done (or until the run ends). Retries what the server asks to retry."""

    async def request(method: str, url: str, **kw) -> httpx.Response | None:
        for _attempt in range(20):
            try:
                r = await client.request(method, url, **kw)
            except httpx.HTTPError as exc:  # a killed host: the balancer or the client sees a reset
                res.errors.append(f"{method} {url}: {type(exc).__name__}")
                res.count(0)
                await asyncio.sleep(0.2)
                continue
            res.count(r.status_code)
            if r.status_code in (502, 503, 504):
                await asyncio.sleep(float(r.headers.get("Retry-After", "0.2") or 0.2) * rng.uniform(0.5, 1.0))
                continue
            return r
        return None

    pid = f"load{uuid.uuid4().hex[:16]}"
    r = await request("GET", f"/s/{slug}/", params={"PROLIFIC_PID": pid, "STUDY_ID": "load", "SESSION_ID": pid})
    if r is None:
        return
    m = re.search(r'name="csrf" value="([^"]+)"', r.text)
    if m is None:
        res.errors.append(f"no consent form: {r.status_code} {r.text[:120]}")
        return
    csrf = m.group(1)
    await request("POST", f"/s/{slug}/consent", data={"csrf": csrf, "agree": "yes"})
    await request("POST", f"/s/{slug}/instructions", data={"csrf": csrf})
    res.annotators += 1
    while time.monotonic() < stop_at:
        t0 = time.perf_counter()
        page = await request("GET", f"/s/{slug}/task")
        res.task_ms.append(1000 * (time.perf_counter() - t0))
        if page is None:
            return
        if page.url.path.endswith("/done") or "data-ajax" not in page.text:
            return
        action = re.search(r'<form method="post" action="([^"]+)" data-ajax', page.text).group(1)
        pos = re.search(r'name="position" value="(\d+)"', page.text).group(1)
        body = {"csrf": csrf, **ANSWER, "position": pos, "request_id": uuid.uuid4().hex, "elapsed_ms": "4000"}
        if think:
            await asyncio.sleep(rng.uniform(*think))
            if time.monotonic() >= stop_at:
                return
        t0 = time.perf_counter()
        ans = await request("POST", action, data=body, headers={"Accept": "application/json"})
        res.submit_ms.append(1000 * (time.perf_counter() - t0))
        if ans is None:
            return
        if ans.status_code == 200 and ans.json().get("ok"):
            res.acknowledged.append(body["request_id"])
        elif ans.status_code != 409:  # 409: the assignment was closed meanwhile (a retry after a kill)
            res.errors.append(f"submit {ans.status_code}: {ans.text[:160]}")


async def crowd(
    base_url: str,
    slug: str,
    annotators: int,
    seconds: float,
    think: tuple[float, float] | None,
    seed: int = 1,
    res: LoadResult | None = None,
) -> LoadResult:
    """N annotators working for `seconds`; a finished annotator is replaced by a new one."""
    res = res if res is not None else LoadResult()
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)

    async def slot(i: int) -> None:
        rng = random.Random(seed * 100_003 + i)
        if think:  # people do not all arrive in the same second
            await asyncio.sleep(rng.uniform(0, think[1]))
        while time.monotonic() < stop_at:
            # verify=False: plain HTTP, and it spares each client building a TLS context (~40 ms CPU)
            async with httpx.AsyncClient(
                base_url=base_url, timeout=60, follow_redirects=True, limits=limits, verify=False
            ) as c:
                before = len(res.acknowledged)
                await one_annotator(c, slug, res, stop_at, think, rng)
                if len(res.acknowledged) == before and time.monotonic() < stop_at:
                    await asyncio.sleep(0.5)  # nothing left for a new annotator: do not spin

    t0 = time.monotonic()
    await asyncio.gather(*(slot(i) for i in range(annotators)))
    res.seconds = time.monotonic() - t0
    return res


def run_load(
    base_url: str,
    slug: str,
    annotators: int,
    seconds: float,
    think: tuple[float, float] | None = None,
    during=None,
    res: LoadResult | None = None,
) -> LoadResult:
    """Run the crowd (in its own event loop); `during(elapsed)` is polled every 0.25 s from another
    thread (it may read `res`, which fills while the crowd works)."""
    import threading

    done = threading.Event()
    if during is not None:

        def poll():
            t0 = time.monotonic()
            while not done.wait(0.25):
                during(time.monotonic() - t0)

        threading.Thread(target=poll, daemon=True).start()
    try:
        return asyncio.run(crowd(base_url, slug, annotators, seconds, think, res=res))
    finally:
        done.set()


# -- the database --------------------------------------------------------------------------------------------
def check_invariants(database_url: str, acknowledged: list[str], cap: int) -> dict[str, int]:
    """The database checks of the module doc; returns the counts (AssertionError on a violation)."""
    from sqlalchemy import text

    from dialeval.store.engine import make_engine

    engine = make_engine(database_url)
    try:
        with engine.connect() as c:
            over = c.execute(
                text(
                    "SELECT unit_id, count(*) FROM assignments WHERE status IN ('assigned','submitted') "
                    "GROUP BY unit_id HAVING count(*) > :cap"
                ),
                {"cap": cap},
            ).all()
            foreign = c.execute(
                text(
                    "SELECT count(*) FROM judgments j JOIN assignments a ON a.id = j.assignment_id "
                    "WHERE a.annotator_id <> j.annotator_id"
                )
            ).scalar()
            two_open = c.execute(
                text(
                    "SELECT annotator_id FROM assignments WHERE status = 'assigned' "
                    "GROUP BY annotator_id HAVING count(*) > 1"
                )
            ).all()
            dupes = c.execute(
                text(
                    "SELECT annotator_id, client_request_id FROM judgments WHERE client_request_id IS NOT NULL "
                    "GROUP BY annotator_id, client_request_id HAVING count(*) > 1"
                )
            ).all()
            dupes_seg = c.execute(
                text("SELECT assignment_id, meta FROM judgments WHERE assignment_id IS NOT NULL")
            ).all()
            stored = {
                r
                for (r,) in c.execute(
                    text("SELECT client_request_id FROM judgments WHERE client_request_id IS NOT NULL")
                )
            }
            n_judgments = c.execute(text("SELECT count(*) FROM judgments")).scalar()
    finally:
        engine.dispose()
    import json

    per_segment: dict[tuple, int] = {}
    for aid, meta in dupes_seg:
        meta = json.loads(meta) if isinstance(meta, str) else (meta or {})
        key = (aid, meta.get("position"))
        per_segment[key] = per_segment.get(key, 0) + 1
    missing = [r for r in acknowledged if r not in stored]
    assert not over, f"units over their cap of {cap}: {over[:5]}"
    assert foreign == 0, f"{foreign} judgments on an assignment held by another annotator"
    assert not two_open, f"annotators holding two open assignments: {two_open[:5]}"
    assert not dupes, f"duplicate judgments per request id: {dupes[:5]}"
    assert max(per_segment.values(), default=1) == 1, "a segment of an assignment answered twice"
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged judgments missing"
    return {"judgments": int(n_judgments), "acknowledged": len(acknowledged), "missing": 0}


def commit_rate(database_url: str, seconds: float = 2.0) -> float:
    """One-row transactions per second on this database, one connection, the app's engine settings."""
    from sqlalchemy import text

    from dialeval.store.engine import make_engine

    engine = make_engine(database_url)
    table = f"bench_commit_{uuid.uuid4().hex[:8]}"
    try:
        with engine.begin() as c:
            c.execute(text(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, v TEXT)"))
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            with engine.begin() as c:
                c.execute(text(f"INSERT INTO {table} (id, v) VALUES (:i, 'x')"), {"i": n})
            n += 1
        rate = n / (time.perf_counter() - t0)
        with engine.begin() as c:
            c.execute(text(f"DROP TABLE {table}"))
        return rate
    finally:
        engine.dispose()


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (those still alive)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- the benchmark --------------------------------------------------------------------------------------------
def scratch_pg_schema(base_url: str) -> tuple[str, callable]:
    """A fresh schema on the server (so runs never see each other's rows) and its cleanup."""
    import psycopg

    plain = base_url.replace("postgresql+psycopg://", "postgresql://")
    schema = f"load_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")

    def drop() -> None:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")

    sep = "&" if "?" in plain else "?"
    return f"{plain}{sep}options=-csearch_path%3D{schema}", drop


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
    if isinstance(v, float):
        return f"{v:.2f}" if v < 10 else f"{v:.0f}"
    return str(v)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default="sqlite", help="sqlite, or a PostgreSQL URL (a fresh schema is used)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--hosts", type=int, default=1, help="serve processes on 127.0.0.2.. behind HAProxy")
    p.add_argument("--annotators", type=int, nargs="+", default=[10, 50, 200])
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--think", type=float, nargs=2, metavar=("MIN", "MAX"), help="seconds between answers")
    p.add_argument("--kill-worker", type=float, metavar="SECONDS", help="kill -9 a worker (a host) at this time")
    p.add_argument("--db-connections", type=int, help="passed to serve --db-connections")
    args = p.parse_args(argv)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    with tempfile.TemporaryDirectory(prefix="dialeval-load-") as tmp:
        for n in args.annotators:
            row = run_one(args, n, Path(tmp))
            print("| " + " | ".join(fmt(row[c]) for c in COLUMNS) + " |", flush=True)
            print(f"  statuses {row['statuses']} {row['events']}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
