"""The FastAPI app: entry, consent, instructions, the method's task page, done page, admin.

``create_app(study_folders)`` serves one or several studies, each under ``/s/<slug>/``. Processes
keep no annotator state: identity rides in a signed cookie, progress lives in the database, so
several workers (``uvicorn --workers N``) can serve one study. The method-specific part is the
study's Protocol (protocols/base.py documents the contract).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as SATimeoutError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import METHODS
from ..errors import DialevalError, StoreBusy
from ..protocols import get_protocol
from ..protocols.base import Outcome, Protocol, StudyContext
from ..store import work
from ..store.work import AnnotatorInfo
from ..textclean import clean_value
from . import entry as entry_mod
from .auth import (
    COOKIE_MAX_AGE,
    IDENTITY_COOKIE,
    SESSION_HEADER,
    SESSION_PARAM,
    CookieSigner,
    Identity,
    load_admin_token,
    load_secret,
)
from .csrf import CSRF_FIELD, CSRF_HEADER, csrf_token, csrf_valid, same_origin
from .ratelimit import DatabaseRateLimiter, RateLimiter

log = logging.getLogger("dialeval.web")
HERE = Path(__file__).parent
STUDY_FOLDERS_ENV = "DIALEVAL_STUDY_FOLDERS"
MAX_BODY = 64 * 1024
ACCESS_LOG_ENV = "DIALEVAL_ACCESS_LOG"
RETRY_AFTER_S = 2  # what a 503 "busy" answer asks the browser to wait


class WebError(Exception):
    """An HTTP error with a message for the annotator (rendered as JSON or HTML)."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


@dataclass
class ServedStudy:
    ctx: StudyContext
    protocol: Protocol | None
    secret: str
    admin_token: str
    signer: CookieSigner
    limiter: DatabaseRateLimiter | RateLimiter
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return self.ctx.slug


def slugify(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug[:60] or "study"


async def call(fn, *args, **kwargs):
    """Await an async hook, run a plain one in a worker thread (blocking DB work is fine there)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    result = await run_in_threadpool(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def run_hook_blocking(fn, *args):
    """Run a sync or async hook to completion from sync code (even inside a running event loop)."""
    if not inspect.iscoroutinefunction(fn):
        return fn(*args)
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(fn(*args))
    with ThreadPoolExecutor(1) as pool:  # e.g. under Playwright's sync API, which keeps a loop running
        return pool.submit(lambda: asyncio.run(fn(*args))).result()


def partition_last_cookie(response: Response) -> None:
    """Add the CHIPS `Partitioned` attribute to the cookie just set (Python < 3.14's http.cookies,
    which Starlette uses, cannot write it), so the cookie is kept in a cross-site iframe where
    third-party cookies are blocked."""
    for i in range(len(response.raw_headers) - 1, -1, -1):
        name, value = response.raw_headers[i]
        if name == b"set-cookie":
            if b"partitioned" not in value.lower():
                response.raw_headers[i] = (name, value + b"; Partitioned")
            return


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE / "templates")),
        autoescape=True,  # every piece of bot and annotator text is escaped
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tojson_attr"] = lambda v: json.dumps(v)
    env.globals["methods"] = METHODS
    return env


def open_served(folder: Path, slugs: set[str], prepare: bool) -> ServedStudy:
    from ..study import open_study

    study = open_study(folder)
    slug = base = slugify(study.config.name)
    n = 2
    while slug in slugs:
        slug, n = f"{base}-{n}", n + 1
    slugs.add(slug)
    ctx = StudyContext(folder=study.folder, config=study.config, store=study.store, study_id=study.id, slug=slug)
    secret = load_secret(study.folder, study.store, study.id)
    served = ServedStudy(
        ctx=ctx,
        protocol=None,
        secret=secret,
        admin_token=load_admin_token(study.folder, study.store, study.id),
        signer=CookieSigner(secret, slug),
        limiter=DatabaseRateLimiter(study.store, f"study{study.id}", rate=0.5, burst=6),
    )
    try:
        served.protocol = get_protocol(study.config.method)(ctx)
    except DialevalError as exc:
        served.error = str(exc)
    return served


def create_app(study_folders: list[Path] | list[str], *, prepare: bool = True) -> FastAPI:
    """The app serving these study folders (each holding a study.yaml).

    With `prepare` (default) each protocol's prepare step (building units) runs first; `serve`
    runs it once before starting several workers and passes prepare=False to them.
    """
    if not study_folders:
        raise DialevalError("no study folder to serve")
    slugs: set[str] = set()
    studies: dict[str, ServedStudy] = {}
    for folder in study_folders:
        served = open_served(Path(folder), slugs, prepare)
        studies[served.slug] = served
    if prepare:
        for served in studies.values():
            if served.protocol is not None:
                run_hook_blocking(served.protocol.prepare)

    app = FastAPI(title="dialeval", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.studies = studies
    env = make_environment()
    app.state.env = env
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    # -- helpers ------------------------------------------------------------------------------
    def wants_json(request: Request) -> bool:
        return "application/json" in request.headers.get("accept", "") or request.headers.get(
            "content-type", ""
        ).startswith("application/json")

    def error_as_html(request: Request) -> bool:
        """Errors are pages for a browser's navigation (Accept: text/html), JSON for fetch() and APIs."""
        return "text/html" in request.headers.get("accept", "") and not wants_json(request)

    def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("request", request)
        context.setdefault("csrf", "")
        context.setdefault("session_token", getattr(request.state, "session_token", None))
        html = env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status)

    def get_served(slug: str) -> ServedStudy:
        served = studies.get(slug)
        if served is None:
            raise WebError(404, "There is no such study here.")
        return served

    def session_values(request: Request) -> list[tuple[str, bool]]:
        """The signed session: the cookie, then the token carried by the page (header or ?sid=) for
        browsers that keep no cookie in a cross-site iframe. [(value, came from the token)]."""
        out = []
        cookie = request.cookies.get(IDENTITY_COOKIE)
        if cookie:
            out.append((cookie, False))
        token = request.headers.get(SESSION_HEADER) or request.query_params.get(SESSION_PARAM)
        if token and token != cookie:
            out.append((token, True))
        return out

    def identity(request: Request, served: ServedStudy) -> tuple[Identity, AnnotatorInfo] | None:
        for value, from_token in session_values(request):
            ident = served.signer.read_identity(value)
            if ident is None:
                continue
            annotator = work.get_annotator(served.ctx.store, ident.annotator_id)
            if annotator is None or annotator.study_id != served.ctx.study_id:
                continue
            bound = annotator.meta.get("session_nonce")
            if bound and bound != ident.nonce:  # the id was moved to another browser: this one is signed out
                continue
            if from_token:
                request.state.session_token = value  # carried on in every link and redirect (see url_for)
            return ident, annotator
        return None

    def require_identity(request: Request, served: ServedStudy) -> tuple[Identity, AnnotatorInfo]:
        found = identity(request, served)
        if found is None:
            raise WebError(403, "Your session was not found. Please open the study link again.")
        return found

    def url_for(request: Request, served: ServedStudy, path: str) -> str:
        """A study URL; with ?sid= when this browser is identified by the page's token, not a cookie."""
        url = served.ctx.url(path)
        token = getattr(request.state, "session_token", None)
        if token:
            url += ("&" if "?" in url else "?") + urlencode({SESSION_PARAM: token})
        return url

    def embedded_or_https(request: Request) -> bool:
        return request.url.scheme == "https"

    def set_identity(
        response: Response, request: Request, served: ServedStudy, annotator_id: int, nonce: str | None = None
    ) -> str:
        """Sign the annotator in: the cookie (partitioned, SameSite=None over https, so it also works in
        MTurk's cross-site iframe) and the same signed value as a token; binds the annotator's platform
        id to this browser session. Returns the token."""
        nonce = nonce or secrets.token_urlsafe(16)
        value = served.signer.identity_cookie(annotator_id, nonce)
        work.update_annotator_meta(served.ctx.store, annotator_id, session_nonce=nonce)
        secure = embedded_or_https(request)
        response.set_cookie(
            IDENTITY_COOKIE,
            value,
            max_age=COOKIE_MAX_AGE,
            path=f"/s/{served.slug}",
            httponly=True,
            secure=secure,
            samesite="none" if secure else "lax",
        )
        if secure:
            partition_last_cookie(response)
        # The token rides in the URLs only where a cookie may be dropped: in a frame (browsers that do
        # not send Sec-Fetch-Dest are treated alike); a top-level tab keeps its cookie.
        if request.headers.get("sec-fetch-dest", "iframe") in ("iframe", "frame", "embed", "object"):
            request.state.session_token = value
        return value

    async def read_form(request: Request) -> dict[str, Any]:
        body = await request.body()
        if len(body) > MAX_BODY:
            raise WebError(413, "The submitted data is too large.")
        ctype = request.headers.get("content-type", "")
        if ctype.startswith("application/json"):
            try:
                data = json.loads(body or b"{}")
            except ValueError:
                raise WebError(400, "The request body is not valid JSON.") from None
            if not isinstance(data, dict):
                raise WebError(400, "The request body must be a JSON object.")
            return data
        form = await request.form()
        fields: dict[str, Any] = {}
        for key in form:
            values = [v for v in form.getlist(key) if isinstance(v, str)]
            fields[key] = values if len(values) > 1 else (values[0] if values else "")
        return fields

    async def read_clean_form(request: Request) -> dict[str, Any]:
        """The posted form or JSON, every text without NUL and other control characters (textclean.py)."""
        return clean_value(await read_form(request))

    def check_post(request: Request, served: ServedStudy, ident: Identity, data: dict[str, Any]) -> None:
        if not same_origin(request):
            raise WebError(403, "This form was sent from another site and was refused.")
        token = request.headers.get(CSRF_HEADER) or data.get(CSRF_FIELD)
        if not isinstance(token, str) or not csrf_valid(served.secret, ident.nonce, token):
            raise WebError(403, "The form's security token is missing or out of date. Reload the page and try again.")

    def outcome_response(request: Request, served: ServedStudy, outcome: Outcome) -> Response:
        target = outcome.redirect or served.ctx.url("task")
        if target.startswith(f"/s/{served.slug}/"):
            target = url_for(request, served, target.removeprefix(f"/s/{served.slug}/"))
        if wants_json(request):
            return JSONResponse({"ok": True, "done": outcome.done, "redirect": target, **(outcome.data or {})})
        return RedirectResponse(target, status_code=303)

    def security_headers(response: Response, admin: bool = False) -> None:
        frame = "'none'" if admin else "*"  # MTurk shows the task in an iframe
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'; form-action 'self' https://www.mturk.com https://workersandbox.mturk.com; "
            f"frame-ancestors {frame}; base-uri 'none'"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"

    access_log = access_logger() if os.environ.get(ACCESS_LOG_ENV) else None

    def hashed_annotator(request: Request) -> str:
        parts = request.url.path.split("/")
        served = studies.get(parts[2]) if len(parts) > 2 and parts[1] == "s" else None
        ident = served.signer.read_identity(request.cookies.get(IDENTITY_COOKIE)) if served else None
        if served is None or ident is None:
            return "-"
        # a pseudonym per study: the log never holds a platform id or a database id
        return hashlib.sha256(f"{served.secret}:annotator:{ident.annotator_id}".encode()).hexdigest()[:12]

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

    @app.exception_handler(WebError)
    async def web_error(request: Request, exc: WebError):
        if not error_as_html(request):
            return JSONResponse({"ok": False, "error": exc.message}, status_code=exc.status, headers=exc.headers)
        response = render(request, "message.html", status=exc.status, title="Sorry", message=exc.message, study=None)
        response.headers.update(exc.headers)
        return response

    # Starlette's class, not FastAPI's subclass: the router's own 404/405 are Starlette's.
    @app.exception_handler(StarletteHTTPException)
    async def starlette_error(request: Request, exc: StarletteHTTPException):
        # unknown paths (404) and wrong methods (405) raised by the router, before any route runs
        messages = {404: "There is no such page here.", 405: "This page cannot be used that way."}
        message = messages.get(exc.status_code) or str(exc.detail)
        return await web_error(request, WebError(exc.status_code, message, headers=dict(exc.headers or {})))

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return await web_error(
            request,
            WebError(500, "Something went wrong on our side; nothing you sent was lost. Please try again in a moment."),
        )

    @app.exception_handler(StoreBusy)
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
        html = env.get_template("busy.html").render(retry_after=RETRY_AFTER_S)
        return HTMLResponse(html, status_code=503, headers=headers)

    app.add_exception_handler(SATimeoutError, store_busy)  # the connection pool had nothing free
    app.add_exception_handler(OperationalError, store_busy)  # e.g. "too many clients", server gone

    @app.exception_handler(DialevalError)
    async def dialeval_error(request: Request, exc: DialevalError):
        return await web_error(request, WebError(400, str(exc)))

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        return await web_error(
            request,
            WebError(
                422,
                "The request is malformed: "
                + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()),
            ),
        )

    # -- public pages -------------------------------------------------------------------------
    @app.get("/healthz")
    async def healthz():
        """200 when every study's database answers a query, else 503 (balancers take the host out)."""
        failed = []
        for served in studies.values():
            try:
                await run_in_threadpool(served.ctx.store.ping)
            except Exception as exc:  # noqa: BLE001 - any failure means: not healthy
                failed.append(f"{served.slug}: {type(exc).__name__}")
        if failed:
            return JSONResponse(
                {"ok": False, "studies": len(studies), "failed": failed},
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        return {"ok": True, "studies": len(studies)}

    @app.get("/", response_class=HTMLResponse)
    async def start(request: Request):
        rows = [
            {
                "slug": s.slug,
                "method": s.ctx.method,
                "title": s.ctx.title,
                "error": s.error,
                "description": s.ctx.config.description,
            }
            for s in studies.values()
        ]
        return render(request, "start.html", studies=rows)

    @app.get("/s/{slug}/", response_class=HTMLResponse)
    async def entry_page(request: Request, slug: str):
        served = get_served(slug)
        params = dict(request.query_params)
        ent = entry_mod.parse_entry(params)
        if ent.error:
            raise WebError(400, ent.error)
        if ent.preview:
            return render(request, "entry.html", study=served.ctx, preview=True, entry=ent, existing=False)
        if ent.external_id is not None:  # Prolific or MTurk: the platform names the annotator
            return await platform_entry(request, served, ent)
        existing = await run_in_threadpool(identity, request, served) is not None
        return render(
            request,
            "entry.html",
            study=served.ctx,
            preview=False,
            entry=ent,
            existing=existing,
            sid=getattr(request.state, "session_token", None),
        )

    async def platform_entry(request: Request, served: ServedStudy, ent: entry_mod.Entry) -> Response:
        """A Prolific/MTurk arrival. The platform id is bound to the first browser session that used it;
        another browser is refused or asked to confirm (recruitment.second_browser)."""
        store, sid = served.ctx.store, served.ctx.study_id
        row = await run_in_threadpool(store.get_or_create_annotator, sid, ent.external_id, ent.platform, ent.meta)
        annotator = await run_in_threadpool(work.get_annotator, store, row.id)
        if annotator is None:  # created just above; gone only if the study was deleted meanwhile
            raise WebError(404, "This study is no longer available.")
        current = await run_in_threadpool(identity, request, served)
        same_browser = current is not None and current[1].id == annotator.id
        if not same_browser and annotator.meta.get("session_nonce"):
            if served.ctx.config.recruitment.second_browser == "refuse":
                raise WebError(
                    403,
                    "This study was already started with your id in another browser or "
                    "device. Please continue there; if you cannot, contact the researcher.",
                )
            return render(
                request,
                "confirm_browser.html",
                study=served.ctx,
                annotator=annotator,
                ticket=served.signer.confirm_token(annotator.id),
                meta=json.dumps({k: v for k, v in ent.meta.items() if v}),
            )
        await run_in_threadpool(record_platform_meta, served, annotator, ent.meta)
        response = RedirectResponse("", status_code=303)
        nonce = current[0].nonce if current is not None and same_browser else None
        await run_in_threadpool(set_identity, response, request, served, annotator.id, nonce)
        response.headers["location"] = url_for(request, served, "consent")
        return response

    def record_platform_meta(served: ServedStudy, annotator: AnnotatorInfo, meta: dict[str, Any]) -> None:
        """Keep the platform's ids; MTurk assignment ids are recorded one per MTurk assignment, never
        overwritten (the current one is what the done page submits)."""
        meta = {k: v for k, v in meta.items() if v}
        if not meta:
            return
        extra: dict[str, Any] = {}
        if annotator.platform == "mturk" and meta.get("mturk_assignment_id"):
            seen = list(annotator.meta.get("mturk_assignments") or [])
            if not any(m.get("assignment_id") == meta["mturk_assignment_id"] for m in seen):
                seen.append(
                    {
                        "assignment_id": meta["mturk_assignment_id"],
                        "hit_id": meta.get("mturk_hit_id"),
                        "first_seen": work.utcnow().isoformat(),
                    }
                )
            extra["mturk_assignments"] = seen
        work.update_annotator_meta(served.ctx.store, annotator.id, **meta, **extra)

    @app.post("/s/{slug}/confirm-browser")
    async def confirm_browser(request: Request, slug: str):
        served = get_served(slug)
        if not same_origin(request):
            raise WebError(403, "This form was sent from another site and was refused.")
        data = await read_clean_form(request)
        annotator_id = served.signer.read_confirm(data.get("ticket"))
        if annotator_id is None or served.ctx.config.recruitment.second_browser != "confirm":
            raise WebError(403, "This confirmation is out of date. Please open the study link again.")
        annotator = await run_in_threadpool(work.get_annotator, served.ctx.store, annotator_id)
        if annotator is None or annotator.study_id != served.ctx.study_id:
            raise WebError(404, "There is no such participant in this study.")
        try:
            meta = json.loads(data.get("meta") or "{}")
        except ValueError:
            meta = {}
        if isinstance(meta, dict):
            allowed = {
                "prolific_study_id",
                "prolific_session_id",
                "mturk_assignment_id",
                "mturk_hit_id",
                "mturk_submit_to",
            }
            await run_in_threadpool(
                record_platform_meta,
                served,
                annotator,
                {k: v for k, v in meta.items() if k in allowed and isinstance(v, str)},
            )
        await run_in_threadpool(served.ctx.store.log_event, served.ctx.study_id, "session-moved", {}, annotator.id)
        response = RedirectResponse("", status_code=303)
        await run_in_threadpool(set_identity, response, request, served, annotator.id)  # signs out the old one
        response.headers["location"] = url_for(request, served, "consent")
        return response

    @app.post("/s/{slug}/start")
    async def start_post(request: Request, slug: str):
        served = get_served(slug)
        if not same_origin(request):
            raise WebError(403, "This form was sent from another site and was refused.")
        data = await read_clean_form(request)
        found = await run_in_threadpool(identity, request, served)
        if found is not None and data.get("new") != "1":
            return RedirectResponse(url_for(request, served, "consent"), status_code=303)
        platform = "volunteer" if data.get("volunteer") == "1" else "link"
        external = entry_mod.new_external_id(platform)
        row = await run_in_threadpool(
            served.ctx.store.get_or_create_annotator, served.ctx.study_id, external, platform, {}
        )
        response = RedirectResponse("", status_code=303)
        await run_in_threadpool(set_identity, response, request, served, row.id)
        response.headers["location"] = url_for(request, served, "consent")
        return response

    def page_context(served: ServedStudy, ident: Identity, annotator: AnnotatorInfo) -> dict[str, Any]:
        return {"study": served.ctx, "annotator": annotator, "csrf": csrf_token(served.secret, ident.nonce)}

    @app.get("/s/{slug}/consent", response_class=HTMLResponse)
    async def consent(request: Request, slug: str):
        served = get_served(slug)
        ident, annotator = await run_in_threadpool(require_identity, request, served)
        return render(request, "consent.html", **page_context(served, ident, annotator))

    @app.post("/s/{slug}/consent")
    async def consent_post(request: Request, slug: str):
        served = get_served(slug)
        ident, annotator = await run_in_threadpool(require_identity, request, served)
        data = await read_clean_form(request)
        check_post(request, served, ident, data)
        if data.get("agree") != "yes":
            raise WebError(400, "Please tick the box to agree before you continue, or close this page to leave.")
        await run_in_threadpool(
            work.update_annotator_meta, served.ctx.store, annotator.id, consented_at=work.utcnow().isoformat()
        )
        return RedirectResponse(url_for(request, served, "instructions"), status_code=303)

    @app.get("/s/{slug}/instructions", response_class=HTMLResponse)
    async def instructions(request: Request, slug: str):
        served = get_served(slug)
        ident, annotator = await run_in_threadpool(require_identity, request, served)
        if not annotator.meta.get("consented_at"):
            return RedirectResponse(url_for(request, served, "consent"), status_code=303)
        return render(request, "instructions.html", **page_context(served, ident, annotator))

    @app.post("/s/{slug}/instructions")
    async def instructions_post(request: Request, slug: str):
        served = get_served(slug)
        ident, annotator = await run_in_threadpool(require_identity, request, served)
        data = await read_clean_form(request)
        check_post(request, served, ident, data)
        await run_in_threadpool(
            work.update_annotator_meta, served.ctx.store, annotator.id, instructed_at=work.utcnow().isoformat()
        )
        return RedirectResponse(url_for(request, served, "task"), status_code=303)

    def not_ready(request: Request, served: ServedStudy, annotator: AnnotatorInfo) -> Response | None:
        """A redirect to consent or instructions when the annotator has not been through them."""
        if not annotator.meta.get("consented_at"):
            return RedirectResponse(url_for(request, served, "consent"), status_code=303)
        if not annotator.meta.get("instructed_at"):
            return RedirectResponse(url_for(request, served, "instructions"), status_code=303)
        return None

    async def current_assignment(served: ServedStudy, annotator: AnnotatorInfo, *, assign: bool = True):
        """(assignment or None, notice): the annotator's own unfinished assignment (also one that expired
        while nobody else took its unit), else new work from the protocol when `assign`."""
        protocol = served.protocol
        if protocol is None:
            raise WebError(503, served.error or "This study's pages are not available.")
        assignment, notice = await run_in_threadpool(
            work.resume_assignment, served.ctx.store, served.ctx.study_id, annotator.id, protocol.expiry()
        )
        if assignment is None and assign:
            assignment = await call(protocol.assign, annotator)
        return assignment, notice

    @app.get("/s/{slug}/task", response_class=HTMLResponse)
    async def task(request: Request, slug: str):
        served = get_served(slug)
        ident, annotator = await run_in_threadpool(require_identity, request, served)
        redirect = not_ready(request, served, annotator)
        if redirect is not None:
            return redirect
        if annotator.status == "blocked":
            return RedirectResponse(url_for(request, served, "done"), status_code=303)
        protocol = served.protocol
        if protocol is None:
            raise WebError(503, served.error or "This study's pages are not available.")
        assignment, notice = await current_assignment(served, annotator)
        if assignment is None:
            return RedirectResponse(
                url_for(request, served, "done" + ("?reassigned=1" if notice else "")), status_code=303
            )
        context = await call(protocol.render, annotator, assignment)
        progress = await call(protocol.progress, annotator, assignment)
        base = page_context(served, ident, annotator)
        page = {
            "assignment": assignment,
            "progress": progress,
            "notice": notice,
            "show_howto": True,
            "action_url": lambda action: url_for(request, served, f"a/{assignment.id}/{action}"),
            "new_request_id": lambda: uuid.uuid4().hex,
            **base,
        }
        page.update({k: v for k, v in context.items() if k != "notice" or v})
        return render(request, protocol.template, **page)

    @app.post("/s/{slug}/a/{assignment_id}/{action}")
    async def act(request: Request, slug: str, assignment_id: int, action: str):
        served = get_served(slug)
        ident, annotator = await run_in_threadpool(require_identity, request, served)
        data = await read_clean_form(request)
        check_post(request, served, ident, data)
        protocol = served.protocol
        if protocol is None:
            raise WebError(503, served.error or "This study's pages are not available.")
        if not re.fullmatch(r"[a-z][a-z0-9_\-]{0,39}", action):
            raise WebError(404, "Unknown action.")
        assignment = await run_in_threadpool(work.get_assignment, served.ctx.store, assignment_id)
        if assignment is None or assignment.study_id != served.ctx.study_id:
            raise WebError(404, "There is no such task.")
        if assignment.annotator_id != annotator.id:
            raise WebError(403, "This task belongs to somebody else.")
        request_id = data.get("request_id")
        if not isinstance(request_id, str) or not re.fullmatch(r"[A-Za-z0-9_\-]{8,100}", request_id):
            raise WebError(400, "The form has no valid request id; reload the page and try again.")
        if assignment.status == "expired" and await run_in_threadpool(
            work.revive_assignment, served.ctx.store, served.ctx.study_id, assignment.id, protocol.expiry()
        ):
            assignment.status = "assigned"  # a late answer on a task nobody else took still counts
        if not assignment.is_open:
            if await run_in_threadpool(work.judgment_exists, served.ctx.store, annotator.id, request_id):
                return outcome_response(request, served, Outcome(done=True, data={"repeat": True}))
            raise WebError(
                409,
                "This task is already finished or has expired. Continue with the next one.",
                headers={"X-Dialeval-Next": url_for(request, served, "task")},
            )
        if annotator.status == "blocked":
            raise WebError(403, "You cannot continue with this study.")
        allowed, wait_s = (
            await run_in_threadpool(served.limiter.check, f"{annotator.id}:{action}")
            if action in protocol.rate_limited_actions
            else (True, 0.0)
        )
        if not allowed:
            wait = max(1, round(wait_s))
            raise WebError(
                429,
                f"You are sending messages too fast; wait {wait} s and try again.",
                headers={"Retry-After": str(wait)},
            )
        outcome = await call(protocol.act, annotator, assignment, action, data)
        if not isinstance(outcome, Outcome):
            outcome = Outcome()
        return outcome_response(request, served, outcome)

    def completion_code(served: ServedStudy, annotator: AnnotatorInfo) -> str:
        return served.ctx.config.recruitment.completion_code or served.signer.completion_code(annotator.id)

    def return_link(served: ServedStudy, annotator: AnnotatorInfo) -> dict[str, str] | None:
        """Where an annotator who cannot go on returns the study (the failed-practice page)."""
        rec = served.ctx.config.recruitment
        if rec.return_url:
            return {"url": rec.return_url, "label": "Return the study"}
        if annotator.platform == "prolific":
            return {"url": entry_mod.PROLIFIC_SUBMISSIONS, "label": "Return the study on Prolific"}
        return None

    @app.get("/s/{slug}/a/{assignment_id}/events")
    async def events(request: Request, slug: str, assignment_id: int, generation: str = "", cursor: int = 0):
        """A live reply as Server-Sent Events: each chunk is sent as soon as the bot produced it."""
        served = get_served(slug)
        _ident, annotator = await run_in_threadpool(require_identity, request, served)
        protocol = served.protocol
        if protocol is None or not hasattr(protocol, "event_stream"):
            raise WebError(404, "This page has no live replies.")
        assignment = await run_in_threadpool(work.get_assignment, served.ctx.store, assignment_id)
        if assignment is None or assignment.study_id != served.ctx.study_id:
            raise WebError(404, "There is no such task.")
        if assignment.annotator_id != annotator.id:
            raise WebError(403, "This task belongs to somebody else.")
        last = request.headers.get("last-event-id", "")
        start = int(last) if last.isdigit() else max(0, cursor)

        async def stream():
            yield "retry: 1500\n\n"
            async for event, position in protocol.event_stream(annotator, assignment, generation, start):
                if event is None:
                    yield ": keep-alive\n\n"
                else:
                    yield f"id: {position}\ndata: {json.dumps(event)}\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        )

    @app.get("/s/{slug}/done", response_class=HTMLResponse)
    async def done(request: Request, slug: str):
        """The completion page: a code, the Prolific redirect or the MTurk submit only for a complete
        session (protocols' `completion`); otherwise back to the task, or why nothing is left."""
        served = get_served(slug)
        _ident, annotator = await run_in_threadpool(require_identity, request, served)
        page: dict[str, Any] = {
            "study": served.ctx,
            "annotator": annotator,
            "code": None,
            "mturk": None,
            "csrf": "",
            "state": None,
            "return_link": return_link(served, annotator),
            "sid": None,
        }
        if annotator.status == "blocked":
            return render(request, "done.html", **{**page, "state": "failed", "blocked": True})
        redirect = not_ready(request, served, annotator)
        if redirect is not None:
            return redirect
        protocol = served.protocol
        if protocol is None:
            raise WebError(503, served.error or "This study's pages are not available.")
        notice = "reassigned" if request.query_params.get("reassigned") else None
        if not annotator.meta.get("completed_at"):
            assignment, resumed = await current_assignment(served, annotator, assign=False)
            if assignment is not None:  # unfinished work: back to it
                return RedirectResponse(url_for(request, served, "task"), status_code=303)
            if resumed:
                notice = "reassigned"
            completion = await run_in_threadpool(protocol.completion, annotator, False)
            if completion.done < completion.quota:
                more, _ = await current_assignment(served, annotator)  # is there more work for them?
                if more is not None:
                    return RedirectResponse(url_for(request, served, "task"), status_code=303)
            if completion.state != "complete":
                await run_in_threadpool(
                    served.ctx.store.log_event,
                    served.ctx.study_id,
                    "nothing-left",
                    {"done": completion.done},
                    annotator.id,
                )
                return render(
                    request, "done.html", **{**page, "state": "nothing-left", "blocked": False, "notice": notice}
                )
            mturk_id = annotator.meta.get("mturk_assignment_id")
            await run_in_threadpool(
                work.update_annotator_meta,
                served.ctx.store,
                annotator.id,
                completed_at=work.utcnow().isoformat(),
                completion={
                    "state": "complete",
                    "done": completion.done,
                    "quota": completion.quota,
                    "reason": completion.reason,
                },
                **({"completed_mturk_assignment": mturk_id} if mturk_id else {}),
            )
            reread = await run_in_threadpool(work.get_annotator, served.ctx.store, annotator.id)
            annotator = reread or annotator
        rec = served.ctx.config.recruitment
        code = completion_code(served, annotator)
        if annotator.platform == "prolific" and rec.completion_code:
            return RedirectResponse(entry_mod.prolific_done_url(rec.completion_code), status_code=303)
        mturk = None
        if annotator.platform == "mturk":
            current = annotator.meta.get("mturk_assignment_id", "")
            finished_with = annotator.meta.get("completed_mturk_assignment") or current
            if current and current != finished_with:
                # the same worker in a new HIT of this study: their session is already paid for there
                return render(
                    request,
                    "done.html",
                    **{**page, "state": "already-done", "blocked": False, "finished_with": finished_with},
                )
            mturk = {"url": entry_mod.mturk_submit_url(annotator.meta), "assignment_id": current}
        return render(
            request,
            "done.html",
            **{**page, "state": "complete", "blocked": False, "code": code, "mturk": mturk, "notice": notice},
        )

    from .admin import add_admin_routes

    add_admin_routes(app, studies, render=render, get_served=get_served, read_form=read_clean_form, WebError=WebError)
    return app


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


def app_from_env() -> FastAPI:
    """App factory for `uvicorn --factory --workers N`: study folders from $DIALEVAL_STUDY_FOLDERS."""
    folders = [Path(p) for p in os.environ.get(STUDY_FOLDERS_ENV, "").split(os.pathsep) if p]
    return create_app(folders, prepare=False)


def new_token() -> str:
    return secrets.token_urlsafe(16)
