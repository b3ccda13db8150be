"""A longer HTTP fuzz than CI's: malformed requests of every class against every route of the served
demo (one study per method), on uvicorn on 127.0.0.1 only. Prints the answers per class.

    PYTHONPATH=src python -m benchmarks.fuzz_http [--cases 3000] [--seconds 600] [--seed 1]

Bounded in count and time. A case fails on a 5xx (other than 503 busy), a traceback in the
answer, no answer in time, or an error the app logged. Exit status 1 when any case failed.
The cases are those of tests/web/http_fuzz.py (the CI test runs fewer).
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import httpx

from dialeval.demo import create_demo
from tests.web import http_fuzz as hf
from tests.web.test_live_support import LiveServer


class Errors(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage() + (f": {record.exc_info[1]!r}" if record.exc_info else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    errors = Errors()
    for name in ("dialeval", "uvicorn.error"):
        logging.getLogger(name).addHandler(errors)
    rng = random.Random(args.seed)
    by_kind: dict[str, Counter] = defaultdict(Counter)
    examples: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folders = create_demo(tmp)
        with LiveServer(folders) as server, httpx.Client(base_url=server.url, timeout=30) as http:
            visitors = [hf.sign_in(http, server.app, slug) for slug in server.app.state.studies]
            routes = hf.app_routes(server.app)
            print(f"{len(routes)} routes, {len(visitors)} studies, up to {args.cases} cases or {args.seconds:.0f} s")
            deadline = time.monotonic() + args.seconds
            t0 = time.monotonic()
            for case in hf.iter_cases(server.app, visitors, rng, args.cases):
                if time.monotonic() > deadline:
                    break
                result = hf.send(http, case)
                count(by_kind[case.kind], result.status, result.problem)
                if result.problem and case.kind not in examples:
                    examples[case.kind] = f"{result.problem}: {case.method} {case.path[:120]}"
            for raw in hf.RAW_REQUESTS:  # bytes no client library sends
                answer = hf.raw_request("127.0.0.1", server.port, raw.replace(b"SLUG", visitors[0].slug.encode()))
                status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None
                count(by_kind["raw_bytes"], status, None if status and status < 500 else f"{status}")
            concurrent_copies(server, http, by_kind["concurrent_copies"])
            elapsed = time.monotonic() - t0
            doubled = sum(duplicate_request_ids(s.ctx.store) for s in server.app.state.studies.values())
    heads = ("sent", "2xx/3xx", "4xx", "closed", "503", "5xx", "traceback", "no answer")
    keys = ("sent", "ok", "4xx", "closed", "503", "5xx", "traceback", "no answer")

    def row(name: str, c: Counter) -> str:
        return f"{name:<18} " + " ".join(f"{c[k]:>{max(6, len(h))}}" for k, h in zip(keys, heads))

    print(f"\n{'class':<18} " + " ".join(f"{h:>{max(6, len(h))}}" for h in heads))
    total: Counter = Counter()
    for kind, c in by_kind.items():
        total.update(c)
        print(row(kind, c))
    print(row("all", total))
    print(f"\n{elapsed:.0f} s; errors logged by the app: {len(errors.messages)}; request ids judged twice: {doubled}")
    for line in sorted(set(errors.messages))[:20]:
        print("  logged:", line[:300])
    for kind, line in examples.items():
        print(f"  {kind}: {line}")
    failed = total["5xx"] + total["traceback"] + total["no answer"] + len(errors.messages) + doubled
    return 1 if failed else 0


def duplicate_request_ids(store) -> int:
    """Request ids with more than one judgment (must be none)."""
    from sqlalchemy import func, select

    from dialeval.store.schema import JudgmentRow

    with store.read() as s:
        q = (
            select(JudgmentRow.annotator_id, JudgmentRow.client_request_id)
            .where(JudgmentRow.client_request_id.is_not(None))
            .group_by(JudgmentRow.annotator_id, JudgmentRow.client_request_id, JudgmentRow.question)
            .having(func.count() > 1)
        )
        return len(s.execute(q).all())


def count(c: Counter, status: int | None, problem: str | None) -> None:
    c["sent"] += 1
    if status is None:
        c["no answer"] += 1
    elif status == hf.CLOSED:
        c["closed"] += 1
    elif problem and "traceback" in problem:
        c["traceback"] += 1
    elif status == 503:
        c["503"] += 1
    elif status >= 500:
        c["5xx"] += 1
    elif status >= 400:
        c["4xx"] += 1
    else:
        c["ok"] += 1


PLAUSIBLE = {"choice": "1", "justification": "it answered the question well", "topic": "cooking", "opinion": "like"}


def concurrent_copies(server, http, c: Counter) -> None:
    """200 concurrent copies of one plausible post (one request id) by a fresh annotator of each study."""
    for slug in server.app.state.studies:
        v = hf.sign_in(http, server.app, slug)
        if v.assignment_id is None or not v.actions:
            continue
        action = next((a for a in v.actions if a not in ("events", "watch", "reply")), v.actions[0])
        body = {f: PLAUSIBLE.get(f, "hello there") for f in v.fields}
        body |= {"csrf": v.csrf, "request_id": "copy-0123456789"}
        cookie = "; ".join(f"{k}={val}" for k, val in v.cookies.items())
        barrier = threading.Barrier(20)

        def post(i, action=action, body=body, cookie=cookie, barrier=barrier, v=v):
            if i < 20:  # the first 20 leave together
                barrier.wait()
            headers = {"Cookie": cookie, "X-CSRF-Token": v.csrf, "Accept": "application/json"}
            try:
                r = httpx.post(f"{server.url}/s/{v.slug}/a/{v.assignment_id}/{action}", data=body, headers=headers)
                return r.status_code
            except httpx.HTTPError:
                return None

        with ThreadPoolExecutor(20) as pool:
            for status in pool.map(post, range(200)):
                count(c, status, None if status and status < 500 else "5xx")


if __name__ == "__main__":
    sys.exit(main())
