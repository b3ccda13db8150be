"""What every response gets: security headers, no caching of study pages, the optional access log."""

from __future__ import annotations

import hashlib
import logging
import os
import time

from fastapi import FastAPI, Request
from fastapi.responses import Response

from .auth import IDENTITY_COOKIE

ACCESS_LOG_ENV = "DIALEVAL_ACCESS_LOG"


def security_headers(response: Response, admin: bool = False) -> None:
    frame = "'none'" if admin else "*"  # MTurk shows the task in an iframe
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; form-action 'self' https://www.mturk.com https://workersandbox.mturk.com; "
        f"frame-ancestors {frame}; base-uri 'none'"
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"


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


def install_middleware(app: FastAPI) -> None:
    access_log = access_logger() if os.environ.get(ACCESS_LOG_ENV) else None

    @app.middleware("http")
    async def headers_middleware(request: Request, call_next):
        t0 = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            security_headers(response, admin="/admin" in request.url.path)
            if request.url.path.startswith("/s/"):
                response.headers.setdefault("Cache-Control", "no-store")
            return response
        finally:
            if access_log is not None:
                access_log.info(
                    "%s %s %d %.1fms annotator=%s",
                    request.method,
                    request.url.path,
                    status,
                    1000 * (time.perf_counter() - t0),
                    hashed_annotator(request),
                )
