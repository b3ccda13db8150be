"""What every response gets: security headers, no caching of study pages, the optional access log."""

from __future__ import annotations

import hashlib
import logging
import os
import time

from fastapi import FastAPI, Request
from starlette.datastructures import MutableHeaders

from .auth import IDENTITY_COOKIE

ACCESS_LOG_ENV = "DIALEVAL_ACCESS_LOG"


def security_header_values(admin: bool = False) -> list[tuple[str, str]]:
    frame = "'none'" if admin else "*"  # MTurk shows the task in an iframe
    return [
        (
            "Content-Security-Policy",
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'; form-action 'self' https://www.mturk.com https://workersandbox.mturk.com; "
            f"frame-ancestors {frame}; base-uri 'none'",
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
    ]


def security_headers(headers: MutableHeaders, admin: bool = False) -> None:
    for name, value in security_header_values(admin):
        headers[name] = value


# The same headers as raw ASGI pairs, made once: a response that has none of them yet (every one the
# app makes) gets them appended as they are, without a MutableHeaders per response.
_RAW_SECURITY = {
    admin: [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in security_header_values(admin)]
    for admin in (False, True)
}
_SECURITY_NAMES = frozenset(name for name, _ in _RAW_SECURITY[False])
_NO_STORE = (b"cache-control", b"no-store")


def add_headers(message: dict, admin: bool, study_page: bool) -> None:
    """The security headers (and no-store on a study page without its own Cache-Control) of a
    response start message."""
    raw = message.get("headers") or ()
    names = {name.lower() for name, _ in raw}
    if names.isdisjoint(_SECURITY_NAMES):
        extra = _RAW_SECURITY[admin]
        # a new list: the response's own raw_headers stay as they were (MutableHeaders copied too)
        message["headers"] = (
            [*raw, *extra, _NO_STORE] if study_page and b"cache-control" not in names else [*raw, *extra]
        )
        return
    headers = MutableHeaders(scope=message)  # a response that set one of them itself: replaced as before
    security_headers(headers, admin=admin)
    if study_page and "cache-control" not in headers:
        headers["Cache-Control"] = "no-store"


def access_logger() -> logging.Logger:
    """The `serve --access-log` logger: one line per request on stderr."""
    logger = logging.getLogger("dialeval.access")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s access [%(process)d] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def hashed_annotator(request: Request) -> str:
    parts = request.url.path.split("/")
    served = request.app.state.studies.get(parts[2]) if len(parts) > 2 and parts[1] == "s" else None
    ident = served.signer.read_identity(request.cookies.get(IDENTITY_COOKIE)) if served else None
    if served is None or ident is None:
        return "-"
    # a pseudonym per study: the log never holds a platform id or a database id
    return hashlib.sha256(f"{served.secret}:annotator:{ident.annotator_id}".encode()).hexdigest()[:12]


class ResponseHeaders:
    """ASGI middleware: the headers of every response, and the access log when asked for.

    A plain ASGI wrapper of `send` rather than Starlette's `@app.middleware("http")`
    (BaseHTTPMiddleware), which runs each request in a task of its own with memory streams between
    the two: about a fifth of the server's CPU per judgment under load (py-spy, ACUTE, 2026-11-26)."""

    def __init__(self, app, access_log: logging.Logger | None = None):
        self.app, self.access_log = app, access_log

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        admin, study_page = "/admin" in path, path.startswith("/s/")
        t0 = time.perf_counter()
        status = 500

        async def send_with_headers(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                add_headers(message, admin, study_page)
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            if self.access_log is not None:
                request = Request(scope)
                self.access_log.info(
                    "%s %s %d %.1fms annotator=%s",
                    request.method,
                    path,
                    status,
                    1000 * (time.perf_counter() - t0),
                    hashed_annotator(request),
                )


def install_middleware(app: FastAPI) -> None:
    app.add_middleware(ResponseHeaders, access_log=access_logger() if os.environ.get(ACCESS_LOG_ENV) else None)
