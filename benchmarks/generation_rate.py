"""Benchmark: conversation generation against a 100 ms OpenAI-compatible stub on loopback.

Target (issue 14, part 4): replies per second >= 90% of concurrency / latency at concurrency 16 and
64. The stub is the tests' fake server (tests/bots/fake_openai_server.py, mode "slow"); every bot is
an `openai` bot with its own `max_concurrency`, so both its own limit and the global one matter.
Self-chat, 4 bots (16) / 8 bots (64), each bot's max_concurrency = 2 x its share of the global limit;
no corpus seeding and no personas, so only the request path is measured. The stub runs in its own
process (`--same-process`: a thread of the client's process, sharing its GIL).

Run: PYTHONPATH=src:. .venv/bin/python benchmarks/generation_rate.py [--latency 0.1] [--turns 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import time
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from dialeval.bots.registry import build_bot
from dialeval.dialogue.generate import GenerationPlan, generate
from tests.bots.fake_openai_server import start_fake_openai


def _serve(latency: float, urls, stop, states) -> None:
    """The stub in its own process (so it does not share the client's GIL), until `stop` is set."""
    with start_fake_openai(mode="slow", delay=latency, reply="fine, thanks") as url:
        urls.put(str(url))
        stop.wait()
        states.put({"requests": url.state.requests, "max_in_flight": url.state.max_in_flight})


class _Remote(str):
    state: Any


@contextmanager
def stub_process(latency: float, separate: bool):
    if not separate:
        with start_fake_openai(mode="slow", delay=latency, reply="fine, thanks") as url:
            yield url
        return
    ctx = mp.get_context("spawn")
    urls, states, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(latency, urls, stop, states))
    proc.start()
    remote = _Remote(urls.get(timeout=60))
    remote.state = SimpleNamespace()
    try:
        yield remote
    finally:
        stop.set()
        remote.state.__dict__.update(states.get(timeout=60))
        proc.join()


def run(concurrency: int, bots: int, latency: float, turns: int, conversations: int, separate: bool = True) -> dict:
    with stub_process(latency, separate) as url:
        names = [f"b{k}" for k in range(bots)]
        per_bot = 2 * concurrency // bots
        made = {
            n: build_bot(n, "openai", {"base_url": url, "model": "stub", "max_concurrency": per_bot, "timeout": 30})
            for n in names
        }
        plan = GenerationPlan(
            mode="self-chat",
            bots=names,
            conversations=conversations,
            turns=turns,
            personas=False,
            seed_from_corpus=False,
            concurrency=concurrency,
        )
        c0, t0 = time.process_time(), time.perf_counter()
        result = asyncio.run(generate(plan, made))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    replies = url.state.requests
    ideal = concurrency / latency
    return {
        "concurrency": concurrency,
        "bots": bots,
        "bot_max_concurrency": per_bot,
        "latency_s": latency,
        "conversations": len(result.made),
        "failed": len(result.failed),
        "replies": replies,
        "seconds": round(wall, 2),
        "replies_per_s": round(replies / wall, 1),
        "ideal_per_s": ideal,
        "share_of_ideal": round(replies / wall / ideal, 3),
        "max_in_flight": url.state.max_in_flight,
        "stub": "own process" if separate else "thread of the client process",
        "client_cpu_ms_per_reply" if separate else "cpu_ms_per_reply_client_and_stub": round(1000 * cpu / replies, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--same-process", action="store_true", help="run the stub as a thread of this process")
    args = parser.parse_args()
    for concurrency, bots in ((16, 4), (64, 8)):
        conversations = max(4, 120 * concurrency // bots // (2 * args.turns))  # ~12 s of ideal work
        r = run(concurrency, bots, args.latency, args.turns, conversations, separate=not args.same_process)
        with open("/proc/loadavg") as f:
            r["loadavg"] = f.read().split()[:3]
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
