"""Benchmark: conversation generation against a 100 ms OpenAI-compatible stub on loopback.

Target (issue 14, part 4): replies per second >= 90% of concurrency / latency at concurrency 16 and
64. The stub is the tests' fake server (tests/bots/fake_openai_server.py, mode "slow"); every bot is
an `openai` bot with its own `max_concurrency`, so both its own limit and the global one matter.
Self-chat, 4 bots (16) / 8 bots (64), each bot's max_concurrency = 2 x its share of the global limit;
no corpus seeding and no personas, so only the request path is measured. The stub runs in its own
process (`--same-process`: a thread of the client's process, sharing its GIL).

Two stubs (`--stub`): "raw" (default), a minimal HTTP/1.1 keep-alive server on asyncio's protocol
API that answers every POST after `latency` seconds with a fixed chat completion (~0.1 ms of CPU
per request, so at 640 requests/s it uses a small share of one core); "fastapi", the tests' fake
server (uvicorn + FastAPI, ~1 ms of CPU per request: on a 2-core machine at concurrency 64 the stub
itself then competes with the client for the cores). The stub's own CPU per request is reported.

Run: PYTHONPATH=src:. .venv/bin/python benchmarks/generation_rate.py [--latency 0.1] [--turns 3] [--stub raw]
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


class _RawStub(asyncio.Protocol):
    """One keep-alive connection of the raw stub: each request (head + Content-Length body) is
    answered `latency` seconds after it arrived. The client sends one request at a time per
    connection, so answers go out in order."""

    def __init__(self, latency: float, state: SimpleNamespace) -> None:
        self.latency, self.state = latency, state
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in self.buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            body = json.loads(self.buffer[end + 4 : end + 4 + length] or b"{}")
            self.buffer = self.buffer[end + 4 + length :]
            st = self.state
            st.requests += 1
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
            asyncio.get_running_loop().call_later(self.latency, self._answer, st.requests, body.get("model"))

    def _answer(self, number: int, model: str | None) -> None:
        self.state.in_flight -= 1
        payload = json.dumps(
            {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine, thanks"}}],
            }
        ).encode()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(payload)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(head + payload)


def _serve_raw(latency: float, urls, stop, states) -> None:
    state = SimpleNamespace(requests=0, in_flight=0, max_in_flight=0, cpu0=0.0)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _RawStub(latency, state), "127.0.0.1", 0, backlog=1024)
        port = server.sockets[0].getsockname()[1]
        state.cpu0 = time.process_time()
        urls.put(f"http://127.0.0.1:{port}/v1")
        await loop.run_in_executor(None, stop.wait)
        server.close()

    asyncio.run(main())
    cpu = time.process_time() - state.cpu0
    states.put({"requests": state.requests, "max_in_flight": state.max_in_flight, "cpu_s": cpu})


def _serve(latency: float, urls, stop, states) -> None:
    """The stub in its own process (so it does not share the client's GIL), until `stop` is set."""
    with start_fake_openai(mode="slow", delay=latency, reply="fine, thanks") as url:
        cpu0 = time.process_time()
        urls.put(str(url))
        stop.wait()
        cpu = time.process_time() - cpu0
        states.put({"requests": url.state.requests, "max_in_flight": url.state.max_in_flight, "cpu_s": cpu})


class _Remote(str):
    state: Any


@contextmanager
def stub_process(latency: float, separate: bool, stub: str = "raw"):
    if not separate:
        with start_fake_openai(mode="slow", delay=latency, reply="fine, thanks") as url:
            yield url
        return
    ctx = mp.get_context("spawn")
    urls, states, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve_raw if stub == "raw" else _serve, args=(latency, urls, stop, states))
    proc.start()
    remote = _Remote(urls.get(timeout=60))
    remote.state = SimpleNamespace()
    try:
        yield remote
    finally:
        stop.set()
        remote.state.__dict__.update(states.get(timeout=60))
        proc.join()


def run(
    concurrency: int,
    bots: int,
    latency: float,
    turns: int,
    conversations: int,
    separate: bool = True,
    stub: str = "raw",
) -> dict:
    with stub_process(latency, separate, stub) as url:
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
        "stub": (stub + ", own process") if separate else "fastapi, thread of the client process",
        "client_cpu_ms_per_reply" if separate else "cpu_ms_per_reply_client_and_stub": round(1000 * cpu / replies, 2),
        **({"stub_cpu_ms_per_reply": round(1000 * url.state.cpu_s / replies, 2)} if separate else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--stub", choices=("raw", "fastapi"), default="raw")
    parser.add_argument("--concurrency", default="4,16,64", help="global limits to run, e.g. 16,64")
    parser.add_argument(
        "--same-process", action="store_true", help="run the (fastapi) stub as a thread of this process"
    )
    args = parser.parse_args()
    for concurrency in (int(c) for c in args.concurrency.split(",")):
        bots = {4: 2, 16: 4}.get(concurrency, 8)
        conversations = max(4, 120 * concurrency // bots // (2 * args.turns))  # ~12 s of ideal work
        r = run(concurrency, bots, args.latency, args.turns, conversations, not args.same_process, args.stub)
        with open("/proc/loadavg") as f:
            r["loadavg"] = f.read().split()[:3]
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
