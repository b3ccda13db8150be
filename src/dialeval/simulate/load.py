"""The load client: simulated annotators through the real HTTP flow of a `dialeval serve` process,
and the checks of the database after a run (used by benchmarks/load.py and by tests).

The Spot The Bot client (`crowd`, `run_load`) is a browser-like httpx client per annotator: entry,
consent, instructions, then the task page (GET, "next unit") and one POST per segment ("submit"; a
retry re-sends the same request id), until its packages are done; then a fresh annotator takes its
place, so the number of annotators working stays N for the whole run. Every acknowledged answer
(HTTP 200, ``ok``) is remembered by its request id.

`check_invariants` (after a run, and after a ``kill -9``):
  - no unit over its cap (submitted + open assignments <= annotations_per_segment);
  - no assignment held by two annotators (every judgment of an assignment is by its annotator,
    and no annotator holds two open assignments);
  - no duplicate judgment per (annotator, request id);
  - every acknowledged judgment present.

`commit_rate` measures the raw commit rate of the same database (one connection, one-row
transactions into a scratch table, the app's engine settings): the ceiling a run is compared with.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    wait: bool = True,
) -> Host:
    """`dialeval serve FOLDER --workers K` on a free port of `host`; waits for /healthz (with
    wait=False the caller does: `wait_healthy(host.url, host.process, host.log, timeout)`)."""
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
    if wait:
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
    # set (from another thread) to end the run before its seconds are up, e.g. once what had to
    # happen during the load is done
    stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def running(self, stop_at: float) -> bool:
        return time.monotonic() < stop_at and not self.stop.is_set()

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
    while res.running(stop_at):
        t0 = time.perf_counter()
        page = await request("GET", f"/s/{slug}/task")
        res.task_ms.append(1000 * (time.perf_counter() - t0))
        if page is None:
            return
        if page.url.path.endswith("/done") or "data-ajax" not in page.text:
            return
        action_m = re.search(r'<form method="post" action="([^"]+)" data-ajax', page.text)
        pos_m = re.search(r'name="position" value="(\d+)"', page.text)
        if action_m is None or pos_m is None:
            res.errors.append(f"no task form: {page.text[:120]}")
            return
        action, pos = action_m.group(1), pos_m.group(1)
        body = {"csrf": csrf, **ANSWER, "position": pos, "request_id": uuid.uuid4().hex, "elapsed_ms": "4000"}
        if think:
            await asyncio.sleep(rng.uniform(*think))
            if not res.running(stop_at):
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
        while res.running(stop_at):
            # verify=False: plain HTTP, and it spares each client building a TLS context (~40 ms CPU)
            async with httpx.AsyncClient(
                base_url=base_url, timeout=60, follow_redirects=True, limits=limits, verify=False
            ) as c:
                before = len(res.acknowledged)
                await one_annotator(c, slug, res, stop_at, think, rng)
                if len(res.acknowledged) == before and res.running(stop_at):
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
    thread (it may read `res`, which fills while the crowd works, and set `res.stop`)."""
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
    return {"judgments": int(n_judgments or 0), "acknowledged": len(acknowledged), "missing": 0}


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


def postgres_pids() -> list[int]:
    """The local PostgreSQL server's processes (postmaster and backends): on a one-machine run they
    share the cores with the app and the client, so their CPU counts against the same limit."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- the benchmark --------------------------------------------------------------------------------------------
def scratch_pg_schema(base_url: str) -> tuple[str, Callable[[], None]]:
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


# -- every method with annotation pages ------------------------------------------------------------------
# A load study is the method's demo study (Method.demo) made big enough that 200 annotators do not run
# out of work in a run, by rules on what the study file has, never by method id: every cap on how
# often a unit or a bot pair is judged (UNIT_CAP_OPTIONS, annotations_per_pair) at its upper bound,
# pre-generated conversations among five bots (ten pairs), ten conversations per bot or pair.
LOAD_BOTS = [  # five bots, all bundled and offline
    {"name": "retrieval", "type": "retrieval"},
    {"name": "eliza", "type": "eliza"},
    {"name": "repeat", "type": "repeat"},
    {"name": "echo", "type": "repeat", "options": {"mode": "echo"}},
    {"name": "retrieval-k9", "type": "retrieval", "options": {"top_k": 9, "seed": 3}},
]
LOAD_CONVERSATIONS = 10
MAX_CAP = 100_000


def annotation_methods() -> list[str]:
    """The registered methods with annotation pages that a simulated annotator can work through."""
    from ..registry import all_methods

    return [m.id for m in all_methods().values() if m.protocol and m.simulation and m.demo is not None]


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_study_data(method: str, *, database: str | None = None, stub_bot: str | None = None, overrides=None) -> dict:
    """The study file of a load study (see above), or the demo's with `overrides` merged in when
    given; in a live method every bot but a QC (degraded) one is an OpenAI-compatible endpoint at
    `stub_bot`."""
    from ..config import protocol_options
    from ..demo import demo_study_data
    from ..registry import get

    data = demo_study_data(method)
    if overrides is not None:
        data = _merge(data, overrides)
    else:
        protocol = dict(data.get("protocol") or {})
        for name, f in protocol_options(method).model_fields.items():
            if name in (*UNIT_CAP_OPTIONS, "annotations_per_pair"):
                bound = next((m.le for m in f.metadata if getattr(m, "le", None) is not None), MAX_CAP)
                protocol[name] = min(bound, MAX_CAP)
        data["protocol"] = protocol
        generation = dict(data.get("generation") or {})
        if generation.get("mode") in ("self-chat", "bot-bot"):
            data["bots"] = LOAD_BOTS + [b for b in data["bots"] if b.get("type") == "degraded"]
            generation["conversations"] = LOAD_CONVERSATIONS
            if generation.get("human_conversations"):
                generation["human_conversations"] = 2 * LOAD_CONVERSATIONS
            data["generation"] = generation
    data["name"] = f"load-{method}"
    if get(method).live and stub_bot:
        data["bots"] = [
            b
            if b.get("type") == "degraded"
            else {"name": b["name"], "type": "openai", "options": {"base_url": stub_bot, "model": "stub"}}
            for b in data["bots"]
        ]
    if database:
        data["database"] = database
    return data


def make_method_study(
    method: str, out: Path, *, database: str | None = None, stub_bot: str | None = None, overrides=None
) -> Path:
    """Write and prepare the load study of `method` under out/<method> (conversations generated with
    the bundled bots, as the demo does); returns the folder."""
    from ..demo import create_demo
    from ..study import write_study_file

    folder = Path(out) / method
    write_study_file(folder, load_study_data(method, database=database, stub_bot=stub_bot, overrides=overrides))
    create_demo(out, methods=(method,))
    return folder


# -- a stub OpenAI-compatible bot: answers after `delay` seconds, streamed word by word ----------------------
STUB_REPLY = "That sounds lovely, tell me more about what you enjoy most and why it matters to you."


def stub_bot_app(delay: float):
    import asyncio as aio
    import json

    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    async def models(_request):
        return JSONResponse({"object": "list", "data": [{"id": "stub", "object": "model"}]})

    async def chat(request):
        body = await request.json()
        await aio.sleep(delay)
        if not body.get("stream"):
            return JSONResponse({"choices": [{"index": 0, "message": {"role": "assistant", "content": STUB_REPLY}}]})

        async def words():
            for w in STUB_REPLY.split(" "):
                chunk = {"choices": [{"index": 0, "delta": {"content": w + " "}}]}
                yield f"data: {json.dumps(chunk)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(words(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])


def start_stub_bot(delay: float = 0.1, host: str = "127.0.0.1") -> tuple[str, subprocess.Popen]:
    """The stub bot in its own process; returns (base URL ending in /v1, process)."""
    port = free_port(host)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dialeval.simulate.load", "stub-bot", "--port", str(port), "--delay", str(delay)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://{host}:{port}"
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        try:
            if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                return url + "/v1", proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the stub bot did not start")


# -- the client for every method: the simulated annotators of simulate/annotator.py, timed -------------------
@dataclass
class MethodLoad:
    """What the crowd of one run saw (the client process writes it as JSON)."""

    method: str
    annotators: int
    seconds: float = 0.0
    judgments: int = 0  # acknowledged judgments (a double submit counts once)
    per_annotator: dict[int, int] = field(default_factory=dict)  # annotator id -> acknowledged
    request_ids: list[str] = field(default_factory=list)
    # until a task page was shown: its GET, the answer whose reply brought it (inline_next_page), or
    # for a session's first, the instructions' post and what it then loaded
    task_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    first_word_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    sessions: int = 0
    requests: int = 0  # every HTTP request the crowd sent (pages, forms, fetch()es)


def drive_method(
    base_url: str,
    folder: Path,
    slug: str,
    annotators: int,
    seconds: float,
    think: tuple[float, float] | None = None,
    seed: int = 1,
    min_judgments: int = 0,
) -> MethodLoad:
    """`annotators` simulated people (careful, never abandoning) working for `seconds` on the study
    served at base_url; one who finishes is replaced by a new one. With `think`, each answer and
    chat message waits uniform(think) seconds first (human pace). With `min_judgments`, the run goes
    on past `seconds` until that many judgments were acknowledged (a test on a loaded machine), for
    at most ten times `seconds`."""
    from concurrent.futures import ThreadPoolExecutor

    from ..corpus import load_corpus
    from ..registry import get
    from ..store import work
    from ..study import open_study
    from .annotator import SimulatedAnnotator, SimulationError
    from .crowd import study_truth
    from .model import sample_profile

    class _RunOver(SimulationError):
        """Raised at the next task page once the run's time is over (the annotator's run() ends)."""

        def __init__(self) -> None:
            super().__init__("_RunOver")

    opened = open_study(folder)
    spec = get(opened.config.method)
    simulation = spec.simulation
    if simulation is None:
        opened.close()
        raise ValueError(f"method '{spec.id}' has no simulated annotators")
    judgment_actions = set(simulation.judgment_actions)
    truth = study_truth(opened.config)
    corpus = load_corpus() if simulation.corpus else None
    res = MethodLoad(method=spec.id, annotators=annotators)
    lock = threading.Lock()
    conversations: dict[str, Any] = {}  # shared by all simulated annotators: a conversation never changes
    stop_at = time.monotonic() + seconds
    give_up_at = time.monotonic() + 10 * seconds

    def over() -> bool:
        now = time.monotonic()
        return now >= give_up_at or (now >= stop_at and len(res.submit_ms) >= min_judgments)

    def status(code: int) -> None:
        with lock:
            res.statuses[code] = res.statuses.get(code, 0) + 1

    arrived: list[int] = []  # marked simulated after the run: the client's own writes would queue
    # with the server's for SQLite's one writer (a tenth of the writer's time in an ACUTE run)

    class Timed(SimulatedAnnotator):
        _chat_started: float | None = None
        _beginning = False  # inside the instructions' post: its task page is timed there, once

        def submit(self, path, data):
            # The first task page of a session: from the instructions' Begin until it is shown,
            # whether the reply brought it or the browser then loaded it (a live method's).
            if not path.endswith("/instructions"):
                return super().submit(path, data)
            t0 = time.perf_counter()
            self._beginning = True
            try:
                page = super().submit(path, data)
            finally:
                self._beginning = False
            if page.path.endswith("/task") and not page.external:
                with lock:
                    res.task_ms.append(1000 * (time.perf_counter() - t0))
                status(page.resp.status_code)
            return page

        def mark_simulated(self, annotator_id: int) -> None:
            with lock:
                arrived.append(annotator_id)

        def get(self, path, params=None):
            if path.endswith("/task") and not self._beginning:
                if over():
                    raise _RunOver()
                t0 = time.perf_counter()
                page = super().get(path, params)
                ms = 1000 * (time.perf_counter() - t0)
                with lock:
                    res.task_ms.append(ms)
                status(page.resp.status_code)
                return page
            return super().get(path, params)

        def next_page(self):
            if self._landed is not None and over():  # a page an answer brought: no GET to stop at
                raise _RunOver()
            return super().next_page()

        def conversation(self, conv_id):
            if conv_id not in conversations:
                conversations[conv_id] = self.store.get_conversation(self.study_id, conv_id)
            return conversations[conv_id]

        def post_json(self, path, data, request_id=None):
            code, payload = super().post_json(path, data, request_id)
            status(code)
            return code, payload

        def act(self, aid, action, data, judgment=None):
            is_judgment = action in judgment_actions if judgment is None else judgment
            if think and (is_judgment or action == "send"):
                time.sleep(self.rng.uniform(*think))
            t0 = time.perf_counter()
            if action in ("send", "reply"):
                self._chat_started = t0
            out = super().act(aid, action, data, judgment)
            if is_judgment:
                ms = 1000 * (time.perf_counter() - t0)
                with lock:
                    res.submit_ms.append(ms)
                    if out and isinstance(out.get("page"), str):  # the next task page came with it
                        res.task_ms.append(ms)
            if action == "watch" and out and self._chat_started is not None:
                if any(e.get("event") == "chunk" for e in out.get("events", [])):
                    with lock:
                        res.first_word_ms.append(1000 * (time.perf_counter() - self._chat_started))
                    self._chat_started = None
            return out

    def slot(i: int) -> None:
        rng = random.Random(seed * 100_003 + i)
        if think:  # people do not all arrive in the same second
            time.sleep(rng.uniform(0, think[1]))
        k = 0
        while not over():
            name = f"load{seed}-{i}-{k}-{uuid.uuid4().hex[:6]}"
            k += 1
            profile = sample_profile(rng, name, False, abandon_p=0.0, refresh_p=0.0, double_submit_p=0.0)
            sim = Timed(base_url, slug, spec.id, opened.store, opened.id, truth, profile, rng, corpus)
            log = sim.run()
            with lock:
                res.sessions += 1
                res.requests += sim.client.requests
                res.judgments += log.judgments
                res.request_ids.extend(log.request_ids)
                if log.annotator_id is not None:
                    res.per_annotator[log.annotator_id] = res.per_annotator.get(log.annotator_id, 0) + log.judgments
                res.errors.extend(f"{name}: {e}" for e in log.errors if "_RunOver" not in e)
            if log.judgments == 0 and not over():
                time.sleep(0.5)  # nothing left for a new annotator: do not spin

    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=annotators) as pool:
            list(pool.map(slot, range(annotators)))
        res.seconds = time.monotonic() - t0
        if spec.settle:  # the crowd has left: held votes (arena) become final
            from ..registry import load_part

            load_part(spec.settle)(opened, gone=set(res.per_annotator))
    finally:
        work.mark_simulated(opened.store, *arrived)
        opened.close()
    return res


FLOOR_WARMUP_S = 2.0  # the clients' threads and connections start before the counted window


def drive_floor(base_url: str, path: str, connections: int, seconds: float) -> dict[str, float]:
    """The server's floor: `connections` keep-alive clients (the crowd's browser) asking for `path`
    without pause; counted are the answers that arrive in a window of `seconds` opening
    FLOOR_WARMUP_S after the start. With /healthz (one worker-thread hand-off and a trivial query),
    this is what the framework, our middleware and this client allow per second when a route costs
    nothing else: the load benchmark's "limit: framework" divides it by the requests per judgment."""
    from concurrent.futures import ThreadPoolExecutor

    from .browser import Browser, BrowserError

    opens_at = time.monotonic() + FLOOR_WARMUP_S
    closes_at = opens_at + seconds
    counts = [0] * connections
    failures = [0] * connections
    answered = [0] * connections  # all the 200s, the warm-up's too (the server's CPU per request)

    def client(i: int) -> None:
        browser = Browser(base_url, timeout=30)
        try:
            while time.monotonic() < closes_at:
                try:
                    ok = browser.get(path).status_code == 200
                except BrowserError:
                    ok = False
                answered[i] += ok
                if opens_at <= time.monotonic() < closes_at:  # answered inside the window
                    counts[i] += ok
                    failures[i] += not ok
        finally:
            browser.close()

    with ThreadPoolExecutor(max_workers=connections) as pool:
        list(pool.map(client, range(connections)))
    return {"requests/s": sum(counts) / seconds, "seconds": seconds, "failed": sum(failures), "answered": sum(answered)}


def check_method(folder: Path, res: MethodLoad) -> dict[str, Any]:
    """The integrity checks of a run on any method (AssertionError on a violation):
    nothing lost and nothing counted twice (stored judgments per annotator = acknowledged ones; no
    two judgments with one request id), no unit over its cap (`unit_cap`), no annotator holding two
    open assignments, every judgment of an assignment by its annotator."""
    from collections import Counter

    from ..store import work
    from ..study import open_study

    opened = open_study(folder)
    try:
        store, sid = opened.store, opened.id
        judgments = work.list_judgments(store, sid, include_excluded=True)
        stored = Counter(j.annotator_id for j in judgments)
        lost = {a: (n, stored.get(a, 0)) for a, n in res.per_annotator.items() if stored.get(a, 0) != n}
        caps = unit_caps(opened)
        units = {u.id: u for u in work.list_units(store, sid)}
        load = _unit_load(store, sid)
        over: list[tuple[Any, int, Any]] = []
        for uid, used in load.items():
            cap = caps(units[uid]) if uid in units else None
            if cap is not None and used > cap:
                over.append((uid, used, cap))
        target = getattr(opened.config.options, "annotations_per_pair", None)
        if target is not None:  # ACUTE: the cap is per (question, bot pair)
            groups: Counter[tuple] = Counter()
            for uid, used in load.items():
                p = units[uid].payload if uid in units else {}
                if "bot_pair" in p and not p.get("is_onboarding"):
                    groups[(p.get("question"), *sorted(p["bot_pair"]))] += used
            over += [(g, n, target) for g, n in groups.items() if n > target]
        open_twice, foreign, twice = _assignment_checks(store, sid)
    finally:
        opened.close()
    assert not lost, (
        f"stored != acknowledged for {len(lost)} annotators (acknowledged, stored): {list(lost.items())[:5]}"
    )
    assert not twice, f"judgments stored twice under one request id: {twice[:5]}"
    assert not over, f"units over their cap (unit, used, cap): {over[:5]}"
    assert not open_twice, f"annotators holding two open assignments: {open_twice[:5]}"
    assert not foreign, f"{foreign} judgments on an assignment held by another annotator"
    return {"judgments": len(judgments), "acknowledged": res.judgments, "units_checked": len(load)}


def _unit_load(store, sid: int) -> dict[int, int]:
    from ..store import work

    with store.read() as s:
        return {u: v["submitted"] + v["assigned"] for u, v in work.unit_load(s, sid).items()}


def _assignment_checks(store, sid: int) -> tuple[list, int, list]:
    from sqlalchemy import text

    with store.read() as s:
        open_twice = s.execute(
            text(
                "SELECT annotator_id FROM assignments WHERE study_id = :s AND status = 'assigned' "
                "GROUP BY annotator_id HAVING count(*) > 1"
            ),
            {"s": sid},
        ).all()
        foreign = s.execute(
            text(
                "SELECT count(*) FROM judgments j JOIN assignments a ON a.id = j.assignment_id "
                "WHERE a.study_id = :s AND a.annotator_id <> j.annotator_id"
            ),
            {"s": sid},
        ).scalar()
        twice = s.execute(
            text(
                "SELECT annotator_id, client_request_id FROM judgments WHERE study_id = :s "
                "AND client_request_id IS NOT NULL GROUP BY annotator_id, client_request_id HAVING count(*) > 1"
            ),
            {"s": sid},
        ).all()
    return [tuple(r) for r in open_twice], int(foreign or 0), [tuple(r) for r in twice]


# the protocol option that caps how many annotators one unit is given to, per method's options
UNIT_CAP_OPTIONS = (
    "annotations_per_segment",  # Spot The Bot: a package
    "annotations_per_item",  # prompt sets: a prompt and pair
    "battles_per_pair",  # arena: a bot pair
    "conversations_per_pair",  # PW-Turn: a bot pair and question
    "conversations_per_bot",  # single model: a bot
)


def unit_caps(opened):
    """unit -> the most assignments (submitted + open) it may have: the method's option of
    UNIT_CAP_OPTIONS; None for onboarding units, for attention checks (a prompt set's check items
    go to every annotator every `attention_every` items: shared, never capped) and for methods
    without a per-unit cap (ACUTE caps its bot pairs: check_method checks annotations_per_pair
    per question and pair)."""
    options = opened.config.options
    limit = next((getattr(options, o) for o in UNIT_CAP_OPTIONS if hasattr(options, o)), None)

    def cap(unit) -> int | None:
        if unit.payload.get("is_onboarding") or unit.payload.get("is_check") or "onboarding" in unit.kind:
            return None
        return limit

    return cap


def main(argv: list[str] | None = None) -> None:
    """`python -m dialeval.simulate.load stub-bot|drive|floor ...`: the stub bot, the client and the
    floor's client, each in its own process (benchmarks/load.py starts them)."""
    import argparse
    import json
    from dataclasses import asdict

    p = argparse.ArgumentParser(prog="python -m dialeval.simulate.load")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stub-bot")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--delay", type=float, default=0.1)
    d = sub.add_parser("drive")
    d.add_argument("--url", required=True)
    d.add_argument("--folder", required=True)
    d.add_argument("--slug", required=True)
    d.add_argument("--annotators", type=int, required=True)
    d.add_argument("--seconds", type=float, required=True)
    d.add_argument("--think", type=float, nargs=2)
    d.add_argument("--out", required=True)
    f = sub.add_parser("floor")
    f.add_argument("--url", required=True)
    f.add_argument("--path", default="/healthz")
    f.add_argument("--connections", type=int, required=True)
    f.add_argument("--seconds", type=float, required=True)
    f.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.cmd == "floor":
        floor = drive_floor(args.url, args.path, args.connections, args.seconds)
        Path(args.out).write_text(json.dumps(floor), encoding="utf-8")
        return
    if args.cmd == "stub-bot":
        import uvicorn

        uvicorn.run(stub_bot_app(args.delay), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
        return
    res = drive_method(
        args.url, Path(args.folder), args.slug, args.annotators, args.seconds, tuple(args.think) if args.think else None
    )
    Path(args.out).write_text(json.dumps(asdict(res)), encoding="utf-8")


if __name__ == "__main__":
    main()
