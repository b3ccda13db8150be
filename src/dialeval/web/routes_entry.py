"""How annotators arrive: the start page, a study's entry link (plain, volunteer, Prolific, MTurk),
moving a session to another browser, and the health check of load balancers."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from .. import clock
from ..store import work
from ..store.work import AnnotatorInfo
from . import entry as entry_mod
from .csrf import csrf_token
from .deps import SameSiteForm, Served
from .error_pages import RETRY_AFTER_S, WebError
from .pages import form_reply, render, render_html, wants_next_page
from .served import ServedStudy
from .session import find_session, new_nonce, set_identity, url_for

router = APIRouter()

# What a confirmed second browser may add to the annotator's platform ids.
PLATFORM_META = {"prolific_study_id", "prolific_session_id", "mturk_assignment_id", "mturk_hit_id", "mturk_submit_to"}


@router.get("/healthz")
async def healthz(request: Request):
    """200 when every study's database answers a query, else 503 (balancers take the host out)."""
    studies = request.app.state.studies
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


@router.get("/", response_class=HTMLResponse)
async def start(request: Request):
    rows = [
        {
            "slug": s.slug,
            "method": s.ctx.method,
            "title": s.ctx.title,
            "error": s.error,
            "description": s.ctx.config.description,
        }
        for s in request.app.state.studies.values()
    ]
    return render(request, "start.html", studies=rows)


@router.get("/s/{slug}/", response_class=HTMLResponse)
async def entry_page(request: Request, served: Served):
    params = dict(request.query_params)
    ent = entry_mod.parse_entry(params)
    if ent.error:
        raise WebError(400, ent.error)
    if ent.preview:
        return render(request, "entry.html", study=served.ctx, preview=True, entry=ent, existing=False)
    if ent.external_id is not None:  # Prolific or MTurk: the platform names the annotator
        return await platform_entry(request, served, ent)
    existing = await run_in_threadpool(find_session, request, served) is not None
    return render(
        request,
        "entry.html",
        study=served.ctx,
        preview=False,
        entry=ent,
        existing=existing,
        sid=getattr(request.state, "session_token", None),
        next_page_inline=True,  # the start form asks for the consent page in its reply
    )


async def platform_entry(request: Request, served: ServedStudy, ent: entry_mod.Entry) -> Response:
    """A Prolific/MTurk arrival. The platform id is bound to the first browser session that used it;
    another browser is refused or asked to confirm (recruitment.second_browser)."""
    assert ent.external_id is not None  # entry_page sends only arrivals the platform names here
    external_id = ent.external_id

    def arrive() -> Response:  # one worker thread for its reads and writes (they were five)
        store, sid = served.ctx.store, served.ctx.study_id
        annotator = store.get_or_create_annotator(sid, external_id, ent.platform, ent.meta)
        current = find_session(request, served)
        same_browser = current is not None and current.annotator.id == annotator.id
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
        record_platform_meta(served, annotator, ent.meta)
        response = RedirectResponse("", status_code=303)
        nonce = current.identity.nonce if current is not None and same_browser else None
        set_identity(response, request, served, annotator.id, nonce)
        response.headers["location"] = url_for(request, served, "consent")
        return response

    return await run_in_threadpool(arrive)


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
                    "first_seen": clock.now().isoformat(),
                }
            )
        extra["mturk_assignments"] = seen
    changes = {**meta, **extra}
    if all(annotator.meta.get(k) == v for k, v in changes.items()):
        return  # already kept (an arrival just registered with them): no write transaction
    work.update_annotator_meta(served.ctx.store, annotator.id, **changes)


@router.post("/s/{slug}/confirm-browser")
async def confirm_browser(request: Request, served: Served, data: SameSiteForm):
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
        await run_in_threadpool(
            record_platform_meta,
            served,
            annotator,
            {k: v for k, v in meta.items() if k in PLATFORM_META and isinstance(v, str)},
        )
    await run_in_threadpool(served.ctx.store.log_event, served.ctx.study_id, "session-moved", {}, annotator.id)
    response = RedirectResponse("", status_code=303)
    await run_in_threadpool(set_identity, response, request, served, annotator.id)  # signs out the old one
    response.headers["location"] = url_for(request, served, "consent")
    return response


@router.post("/s/{slug}/start")
async def start_post(request: Request, served: Served, data: SameSiteForm):
    signed_in = Response()  # carries the identity cookie set_identity writes, for the reply made below
    inline = wants_next_page(request)

    def sign_in() -> str | None:  # one worker thread: the session read, the new annotator, the cookie
        found = find_session(request, served)
        if found is not None and data.get("new") != "1":  # already signed in: on to consent
            annotator, nonce = found.annotator, found.identity.nonce
        else:
            platform = "volunteer" if data.get("volunteer") == "1" else "link"
            external = entry_mod.new_external_id(platform)
            nonce = new_nonce()  # a new annotator is made bound to this browser: one commit, not two
            annotator = served.ctx.store.get_or_create_annotator(
                served.ctx.study_id, external, platform, {"session_nonce": nonce}
            )
            bound = annotator.meta.get("session_nonce") == nonce  # else an id made twice: bind it now
            set_identity(signed_in, request, served, annotator.id, nonce, stored=bound)
        if not inline:
            return None
        return render_html(  # the consent page, as its GET shows it (routes_annotator.consent)
            request,
            "consent.html",
            study=served.ctx,
            annotator=annotator,
            csrf=csrf_token(served.secret, nonce),
            next_page_inline=True,
        )

    consent_page = await run_in_threadpool(sign_in)
    # the consent URL after signing in: with the new session's token where the page carries it
    return form_reply(request, url_for(request, served, "consent"), consent_page, cookies_from=signed_in)
