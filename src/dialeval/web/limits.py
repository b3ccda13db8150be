"""What a request may be: body size, read time, JSON shape and numbers, ids. One place, so that no
request however malformed reaches the code behind with something it cannot handle (a 5xx).

- Bodies: refused above MAX_REQUEST_BYTES before they are read (413), and a client that announces a
  body and stops sending it gets 408 after BODY_READ_TIMEOUT_S instead of holding the request open.
- JSON: nesting refused above MAX_JSON_DEPTH before parsing (Python's parser recurses), no
  NaN/Infinity, no number beyond the database's 64-bit integers (1e400, 10^30 ...).
- Ids in paths, cookies and headers: 1 .. MAX_ID (SQLite and PostgreSQL store 64-bit integers).
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Annotated, Any

from fastapi import Path, Query
from starlette.exceptions import HTTPException as StarletteHTTPException

MAX_ID = 2**63 - 1
MAX_REQUEST_BYTES = 1024 * 1024  # no form or fetch() of dialeval sends more
DRAIN_BYTES = 8 * MAX_REQUEST_BYTES  # a bigger body is refused by closing the connection
BODY_READ_TIMEOUT_S = 20.0  # between two pieces of one body
MAX_JSON_DEPTH = 32  # nesting of a posted JSON object (dialeval's pages send 2 or 3)
MAX_DIGITS = 19  # of a decimal id in a header (2^63 has 19)

PathId = Annotated[int, Path(ge=1, le=MAX_ID)]
CursorParam = Annotated[int, Query(ge=-MAX_ID, le=MAX_ID)]  # a negative one counts as 0


class BadJSON(ValueError):
    """A JSON body that is not a plain object of bounded depth and finite 64-bit numbers."""


def json_depth(body: bytes | str) -> int:
    """The deepest nesting of [ and { outside strings (no recursion, stops past the limit)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    break
        elif ch in "]}":
            depth -= 1
    return deepest


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadJSON(f"the number {text[:20]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS or abs(value := int(text)) > MAX_ID:
        raise BadJSON(f"the number {text[:20]}{'…' if len(text) > 20 else ''} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise BadJSON(f"{name} is not a number a form can send")


def loads_json(body: bytes) -> Any:
    """Parse a request's JSON body within the limits above (BadJSON, a ValueError, otherwise)."""
    # no deeper than the brackets it holds: the scan (a loop in Python over every character) only
    # for a body with more of them than the limit
    opening = body.count(b"[") + body.count(b"{") if isinstance(body, bytes) else body.count("[") + body.count("{")
    if opening > MAX_JSON_DEPTH and json_depth(body) > MAX_JSON_DEPTH:
        raise BadJSON(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        return json.loads(body or b"{}", parse_float=_finite_float, parse_int=_bounded_int, parse_constant=_no_constant)
    except RecursionError:  # belt and braces: the depth scan above should have caught it
        raise BadJSON("the JSON is nested too deeply") from None


def header_id(value: str | None) -> int | None:
    """A decimal id from a header (Last-Event-ID), or None when it is not a plain in-range number."""
    if not value or len(value) > MAX_DIGITS or not (value.isascii() and value.isdigit()):
        return None
    number = int(value)
    return number if number <= MAX_ID else None


def valid_id(value: Any) -> bool:
    """An id from a signed value (cookie, ticket) that the database can hold."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ID


class BodyLimits:
    """ASGI middleware: a request body is refused above `max_bytes` (413, from Content-Length before
    reading, or while a chunked body streams in), and a body that stops arriving for `timeout_s`
    ends the request with 408 (a Content-Length larger than what is sent no longer holds it open)."""

    def __init__(self, app, max_bytes: int = MAX_REQUEST_BYTES, timeout_s: float = BODY_READ_TIMEOUT_S):
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            if not length.isdigit():
                return await _plain(send, 400, "The request's Content-Length is not a number.")
            if len(length) > 12 or int(length) > self.max_bytes:
                if int(length) <= DRAIN_BYTES:  # read and drop it, so the client can read the answer
                    await self._drain(receive)
                return await _plain(send, 413, "The submitted data is too large.")
        received = 0
        started = body_done = False

        async def limited_receive():
            nonlocal received, body_done
            if body_done:  # later calls wait for the client to leave (streams): no time limit
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                raise _BodyError(408, "The request body did not arrive in time.") from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyError(413, "The submitted data is too large.")
                body_done = not message.get("more_body", False)
            else:
                body_done = True
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except* _BodyError as group:  # the app's handlers answer it; raised in a task group it comes here
            if not started:
                exc = group.exceptions[0]
                assert isinstance(exc, _BodyError)
                await _plain(send, exc.status, exc.message)

    async def _drain(self, receive) -> None:
        try:
            while True:
                message = await asyncio.wait_for(receive(), self.timeout_s)
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
        except TimeoutError:
            return


class _BodyError(StarletteHTTPException):
    # an HTTPException, so the app's handlers answer it (JSON or an HTML page) like any 4xx
    def __init__(self, status: int, message: str):
        super().__init__(status, detail=message, headers={"Connection": "close"})
        self.status, self.message = status, message


async def _plain(send, status: int, message: str) -> None:
    body = json.dumps({"ok": False, "error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status in (408, 413):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
