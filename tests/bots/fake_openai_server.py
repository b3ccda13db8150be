"""A real OpenAI-compatible HTTP server on loopback for tests, with switchable misbehaviour.

    from tests.bots.fake_openai_server import start_fake_openai

    with start_fake_openai(mode="ok") as base_url:      # e.g. "http://127.0.0.1:54321/v1"
        bot = build_bot("b", "openai", {"base_url": base_url, "model": "fake"})
        ...
        base_url.state.requests                          # what the server saw

Modes: ok | slow (waits `delay` s, then answers) | error500 | garbage (200, not JSON) |
bad_request (400 with an OpenAI-style error message) | flaky (500 for the first `fail_first`
requests, then ok) | no_content (JSON without choices) | rate_limit (429, Retry-After: 0).
The default answer is "reply to: <last user message>"; pass `reply=` a string or a function of the
request body to change it. Streaming requests ("stream": true) get server-sent events, one word each
(unless ignore_stream=True: then a plain JSON answer, like servers that do not stream); `word_delay`
seconds pass between words, and `state.first_chunk_at` notes when each stream's first word left.
`GET /v1/models` lists `models` (default: "fake"), as the endpoint check at start reads it
(counted in `state.model_lists`, not in `state.requests`). `long_markdown(words)` is an answer
as current LLM assistants write them: headings, lists, bold and code, ~`words` words.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

MODES = ("ok", "slow", "error500", "garbage", "bad_request", "flaky", "no_content", "rate_limit")


@dataclass
class ServerState:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    first_chunk_at: list[float] = field(default_factory=list)  # time.time() of each stream's first chunk
    model_lists: int = 0  # GET /v1/models requests


class FakeServerURL(str):
    """The base URL (ending in /v1), carrying the server's counters as `.state`."""

    state: ServerState


def default_reply(body: dict[str, Any]) -> str:
    users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return f"reply to: {users[-1] if users else '(nothing)'}"


def make_app(
    mode: str,
    delay: float,
    state: ServerState,
    reply: str | Callable[[dict[str, Any]], str] | None,
    fail_first: int,
    ignore_stream: bool = False,
    word_delay: float = 0.0,
    models: tuple[str, ...] = ("fake",),
) -> FastAPI:
    app = FastAPI()
    lock = threading.Lock()

    @app.get("/v1/models")
    async def list_models():
        with lock:
            state.model_lists += 1
        return {"object": "list", "data": [{"id": m, "object": "model"} for m in models]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        with lock:
            state.requests += 1
            number = state.requests
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            state.bodies.append(body)
            state.headers.append(dict(request.headers))
        try:
            if delay:
                await asyncio.sleep(delay)
            if mode == "error500" or (mode == "flaky" and number <= fail_first):
                return JSONResponse({"error": {"message": "the model crashed"}}, status_code=500)
            if mode == "garbage":
                return PlainTextResponse("<html>this is not json</html>")
            if mode == "bad_request":
                return JSONResponse(
                    {"error": {"message": "model 'nope' does not exist", "type": "invalid_request_error"}},
                    status_code=400,
                )
            if mode == "rate_limit":
                return JSONResponse({"error": {"message": "slow down"}}, status_code=429, headers={"Retry-After": "0"})
            if mode == "no_content":
                return JSONResponse({"id": "x", "choices": []})
            text = reply(body) if callable(reply) else (reply or default_reply(body))
            if body.get("stream") and not ignore_stream:
                return StreamingResponse(_events(text, state, word_delay), media_type="text/event-stream")
            return JSONResponse(
                {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                }
            )
        finally:
            with lock:
                state.in_flight -= 1

    return app


async def _events(text: str, state: ServerState | None = None, word_delay: float = 0.0):
    words = text.split(" ")
    for i, word in enumerate(words):
        piece = word if i == 0 else " " + word
        if i and word_delay:
            await asyncio.sleep(word_delay)  # a model writing word by word
        if i == 0 and state is not None:
            state.first_chunk_at.append(time.time())
        yield f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': piece}}]})}\n\n"
    yield "data: [DONE]\n\n"


@contextmanager
def start_fake_openai(
    mode: str = "ok",
    delay: float = 0.0,
    reply: str | Callable[[dict[str, Any]], str] | None = None,
    fail_first: int = 1,
    ignore_stream: bool = False,
    word_delay: float = 0.0,
    models: tuple[str, ...] = ("fake",),
) -> Iterator[FakeServerURL]:
    """Serve the fake API on a free 127.0.0.1 port in a background thread; yield its base URL."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    state = ServerState()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        make_app(mode, delay, state, reply, fail_first, ignore_stream, word_delay, models),
        log_level="warning",
        timeout_graceful_shutdown=1,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake OpenAI server did not start")
        time.sleep(0.01)
    url = FakeServerURL(f"http://127.0.0.1:{port}/v1")
    url.state = state
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        sock.close()


_SECTION = (
    "The short answer is that it depends on **what you measure** and on the `data` you have. "
    "A careful comparison looks at several cases, checks each assumption in turn, and reports "
    "the uncertainty alongside the estimate, so that a reader can judge how far to trust it."
)


def long_markdown(words: int = 750, tag: str = "") -> str:
    """A Markdown answer of about `words` words (sections of ~50 words), as LLM assistants write:
    a heading, numbered sections with bold and code, a bullet list; `tag` opens it (tells two apart)."""
    parts = [f"## Overview {tag}".rstrip(), ""]
    n = 0
    section = 1
    while n < words:
        parts += [f"### {section}. Step {section}", "", _SECTION, "", f"- point {section}a: see `x{section}`", ""]
        n += len(_SECTION.split()) + 8
        section += 1
    parts.append("**In short:** measure first, then decide.")
    return "\n".join(parts)


def closed_port_url() -> str:
    """A loopback URL where nothing listens (a port bound and released just now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
