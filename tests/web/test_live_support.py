"""Helpers of the live chat tests: a study folder, the real app served by uvicorn on loopback, and an
annotator client speaking HTTP to it (httpx, cookies kept). Also used by the e2e and concurrency tests.
"""

from __future__ import annotations

import re
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Self

import httpx
import uvicorn
from sqlalchemy import event, text

from dialeval.web.app import create_app
from dialeval.web.ratelimit import RateLimiter

from .studies import write_study

LIVE_BOTS = {
    "repeat": {"name": "repeat", "type": "repeat", "options": {"mode": "echo", "prefix": "You said: "}},
    "eliza": {"name": "eliza", "type": "eliza"},
    "retrieval": {"name": "retrieval", "type": "retrieval", "options": {"max_conversations": 200}},
    "qc": {"name": "qc", "type": "degraded", "options": {"seed": 7, "max_conversations": 200}},
}


def make_live_study(
    folder: Path,
    method: str,
    bots: list[dict] | list[str],
    *,
    protocol: dict | None = None,
    onboarding: dict | None = None,
    annotation: dict | None = None,
    database: str | None = None,
    name: str | None = None,
    questions: list[dict] | None = None,
) -> Path:
    data: dict[str, Any] = {
        "name": name or f"{method}-live",
        "method": method,
        "seed": 3,
        "bots": [LIVE_BOTS[b] if isinstance(b, str) else b for b in bots],
        "annotation": {"expire_minutes": 30, "min_justification_words": 2, **(annotation or {})},
        "protocol": protocol or {},
    }
    if onboarding is not None:
        data["onboarding"] = onboarding
    if questions is not None:
        data["questions"] = questions
    if database:
        data["database"] = database
    return write_study(folder, data)


class LiveServer:
    """create_app(folders) served by uvicorn on 127.0.0.1:<free port> in a background thread."""

    def __init__(self, folders: list[Path], fast_limits: bool = True):
        self.app = create_app(folders)
        if fast_limits:
            for served in self.app.state.studies.values():
                served.limiter = RateLimiter(rate=1000, burst=1000)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the app server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        for served in self.app.state.studies.values():
            served.ctx.store.close()

    @property
    def served(self):
        return next(iter(self.app.state.studies.values()))

    @property
    def slug(self) -> str:
        return self.served.slug

    @property
    def store(self):
        return self.served.ctx.store

    @property
    def study_id(self) -> int:
        return self.served.ctx.study_id


class WriteTransactions:
    """Counts the committed transactions of an engine that wrote something (INSERT, UPDATE, DELETE)."""

    def __init__(self, engine):
        self.count = 0
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._commit)
        event.listen(engine, "rollback", self._rollback)

    def _statement(self, conn, cursor, statement, parameters, context, executemany):
        first = statement.lstrip().split(None, 1)[0].upper()
        # (a WITH statement writes when one of its CTEs does: PostgreSQL's data-modifying CTEs)
        if first in ("INSERT", "UPDATE", "DELETE") or (
            first == "WITH" and re.search(r"\b(INSERT|UPDATE|DELETE)\b", statement, re.IGNORECASE)
        ):
            conn.info["wrote"] = True

    def _commit(self, conn):
        if conn.info.pop("wrote", False):
            self.count += 1

    def _rollback(self, conn):
        conn.info.pop("wrote", False)


def break_first_choice(monkeypatch, protocol, *, in_sql: bool = False) -> list[int]:
    """Make the protocol's next `choose` raise once (a broken scheduler; `in_sql`: a statement of
    its fails, which leaves a PostgreSQL transaction aborted), then choose as before; the returned
    list grows by one per call."""
    real_choose, calls = protocol.choose, []

    def choose_once_broken(view):
        calls.append(1)
        if len(calls) == 1:
            if in_sql:
                view.session.execute(text("SELECT no_such_column FROM assignments"))
            raise RuntimeError("a broken scheduler")
        return real_choose(view)

    monkeypatch.setattr(protocol, "choose", choose_once_broken)
    return calls


def rid() -> str:
    return uuid.uuid4().hex


class LiveClient:
    """One annotator: enters the study link, consents, reads the task page, posts actions as JSON."""

    def __init__(self, server: LiveServer):
        self.server = server
        self.http = httpx.Client(base_url=server.url, timeout=60, follow_redirects=True)
        self.csrf = ""
        self.assignment_id: int | None = None
        self.generation: str | None = None  # the key of the last bot reply asked for

    def close(self) -> None:
        self.http.close()

    def url(self, path: str = "") -> str:
        return f"/s/{self.server.slug}/{path}"

    def enter(self) -> httpx.Response:
        self.http.get(self.url())
        r = self.http.post(self.url("start"), data={})
        self.csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
        self.http.post(self.url("consent"), data={"csrf": self.csrf, "agree": "yes"})
        return self.http.post(self.url("instructions"), data={"csrf": self.csrf})

    def task(self) -> httpx.Response:
        r = self.http.get(self.url("task"))
        m = re.search(r"/a/(\d+)/", r.text)
        if m:
            self.assignment_id = int(m.group(1))
        return r

    def act(
        self, action: str, data: dict | None = None, *, assignment_id: int | None = None, request_id: str | None = None
    ) -> httpx.Response:
        aid = assignment_id or self.assignment_id
        body = {"request_id": request_id or rid(), **(data or {})}
        return self.http.post(
            self.url(f"a/{aid}/{action}"), json=body, headers={"X-CSRF-Token": self.csrf, "Accept": "application/json"}
        )

    def follow(self, timeout: float = 60, generation: str | None = None) -> list[dict]:
        """Watch the running bot reply until it ends; returns every event seen."""
        events: list[dict] = []
        cursor = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.act("watch", {"cursor": cursor, "generation": generation or self.generation})
            assert r.status_code == 200, r.text
            body = r.json()
            events.extend(body["events"])
            cursor = body["cursor"]
            if body["finished"] or any(e["event"] in ("done", "error") for e in body["events"]):
                return events
        raise AssertionError("the bot reply did not end in time")

    def await_reply(self) -> list[dict]:
        """Ask for the pending bot reply (as the page does on load) and follow it."""
        r = self.act("reply")
        assert r.status_code == 200, r.text
        if r.json().get("finished"):
            return [{"event": "done"}]
        self.generation = r.json().get("generation")
        return self.follow()

    def say(self, text: str) -> list[dict]:
        r = self.act("send", {"text": text})
        assert r.status_code == 200, r.text
        self.generation = r.json().get("generation")
        return self.follow()


def test_support_serves_the_app(tmp_path):
    folder = make_live_study(tmp_path / "s", "single-model", ["repeat"])
    with LiveServer([folder]) as server:
        assert httpx.get(server.url + "/healthz").json()["ok"] is True
