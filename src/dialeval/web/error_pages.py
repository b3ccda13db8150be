"""Errors as the annotator sees them: `WebError` and the app's exception handlers.

A browser's navigation gets an HTML page, fetch() and APIs get ``{"ok": false, "error": ...}``
(pages.error_as_html). A busy database is a 503 with Retry-After, never the annotator's fault.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ..errors import DialevalError
from ..store.engine import BUSY_ERRORS
from .pages import error_as_html, render, wants_json

log = logging.getLogger("dialeval.web")
RETRY_AFTER_S = 2  # what a 503 "busy" answer asks the browser to wait


class WebError(Exception):
    """An HTTP error with a message for the annotator (rendered as JSON or HTML)."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


async def web_error(request: Request, exc: WebError):
    if not error_as_html(request):
        return JSONResponse({"ok": False, "error": exc.message}, status_code=exc.status, headers=exc.headers)
    response = render(request, "message.html", status=exc.status, title="Sorry", message=exc.message, study=None)
    response.headers.update(exc.headers)
    return response


async def starlette_error(request: Request, exc: StarletteHTTPException):
    # unknown paths (404) and wrong methods (405) raised by the router, before any route runs
    messages = {404: "There is no such page here.", 405: "This page cannot be used that way."}
    message = messages.get(exc.status_code) or str(exc.detail)
    return await web_error(request, WebError(exc.status_code, message, headers=dict(exc.headers or {})))


async def server_error(request: Request, exc: Exception):
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return await web_error(
        request,
        WebError(500, "Something went wrong on our side; nothing you sent was lost. Please try again in a moment."),
    )


async def store_busy(request: Request, exc: Exception):
    # No free database connection in time, a lock held too long, the database unreachable or
    # out of connections: not the annotator's fault, and repeating the request is safe.
    log.warning("database busy on %s %s: %s", request.method, request.url.path, exc)
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    if wants_json(request):
        return JSONResponse(
            {"ok": False, "retry": True, "error": "The study is busy; trying again in a moment."},
            status_code=503,
            headers=headers,
        )
    html = request.app.state.env.get_template("busy.html").render(retry_after=RETRY_AFTER_S)
    return HTMLResponse(html, status_code=503, headers=headers)


async def client_gone(request: Request, exc: Exception):
    # The browser left (or sent a broken body) before its request was read: nobody reads this
    # answer, and it is not our error to log.
    return JSONResponse({"ok": False, "error": "The request ended before its body arrived."}, status_code=400)


async def dialeval_error(request: Request, exc: DialevalError):
    return await web_error(request, WebError(400, str(exc)))


async def validation_error(request: Request, exc: RequestValidationError):
    return await web_error(
        request,
        WebError(
            422,
            "The request is malformed: "
            + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()),
        ),
    )


def install_error_handlers(app: FastAPI) -> None:
    app.exception_handler(WebError)(web_error)
    # Starlette's class, not FastAPI's subclass: the router's own 404/405 are Starlette's.
    app.exception_handler(StarletteHTTPException)(starlette_error)
    app.exception_handler(Exception)(server_error)
    for busy in BUSY_ERRORS:  # StoreBusy, the pool's timeout, "too many clients", server gone
        app.exception_handler(busy)(store_busy)
    app.exception_handler(DialevalError)(dialeval_error)
    app.exception_handler(ClientDisconnect)(client_gone)
    app.exception_handler(RequestValidationError)(validation_error)
