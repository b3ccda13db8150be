"""The admin pages: progress, live headline numbers, annotators (QC, block/unblock), conversations, export.

Behind a token: $DIALEVAL_ADMIN_TOKEN or the study folder's .admin-token (printed by `serve`).
Opening ``/s/<slug>/admin?token=...`` once sets a signed admin cookie for that study.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ..store import work
from .auth import ADMIN_COOKIE, token_matches
from .csrf import CSRF_FIELD, csrf_token, csrf_valid, same_origin


def add_admin_routes(app: FastAPI, studies: dict, *, render, get_served, read_form, WebError) -> None:
    def admin_nonce(request: Request, served) -> str:
        nonce = served.signer.read_admin(request.cookies.get(ADMIN_COOKIE))
        if nonce is None:
            raise WebError(403, "The admin pages need the admin token: open the admin link printed by "
                                "`dialeval serve` (…/admin?token=…).")
        return nonce

    @app.get("/s/{slug}/admin", response_class=HTMLResponse)
    async def admin(request: Request, slug: str, token: str | None = None):
        served = get_served(slug)
        if token is not None:
            if not token_matches(token, served.admin_token):
                raise WebError(403, "Wrong admin token.")
            response = RedirectResponse(served.ctx.url("admin"), status_code=303)
            response.set_cookie(ADMIN_COOKIE, served.signer.admin_cookie(), max_age=12 * 3600,
                                path=f"/s/{served.slug}", httponly=True, samesite="strict",
                                secure=request.url.scheme == "https")
            return response
        nonce = admin_nonce(request, served)
        store, sid = served.ctx.store, served.ctx.study_id
        counts = await run_in_threadpool(store.counts, sid)
        statuses = await run_in_threadpool(work.assignment_status_counts, store, sid)
        annotators = await run_in_threadpool(work.list_annotators, store, sid)
        summary = None
        if served.protocol is not None:
            summary = await run_in_threadpool(served.protocol.admin_summary)
        return render(request, "admin.html", study=served.ctx, counts=counts, statuses=statuses,
                      annotators=annotators, summary=summary, error=served.error,
                      csrf=csrf_token(served.secret, "admin:" + nonce))

    @app.post("/s/{slug}/admin/annotators/{annotator_id}/{what}")
    async def set_status(request: Request, slug: str, annotator_id: int, what: str):
        served = get_served(slug)
        nonce = admin_nonce(request, served)
        data = await read_form(request)
        if not same_origin(request) or not csrf_valid(served.secret, "admin:" + nonce, data.get(CSRF_FIELD)):
            raise WebError(403, "The form's security token is missing or out of date.")
        if what not in {"block", "unblock", "flag"}:
            raise WebError(404, "Unknown admin action.")
        ann = await run_in_threadpool(work.get_annotator, served.ctx.store, annotator_id)
        if ann is None or ann.study_id != served.ctx.study_id:
            raise WebError(404, "No such annotator.")
        reasons = list(ann.qc.get("reasons", []))
        if what == "block":
            status, reasons = "blocked", reasons + (["blocked by admin"] if "blocked by admin" not in reasons else [])
        elif what == "flag":
            status = "flagged"
        else:
            status, reasons = "active", [r for r in reasons if r != "blocked by admin"]
        await run_in_threadpool(served.ctx.store.set_annotator_status, annotator_id, status, reasons)
        return RedirectResponse(served.ctx.url("admin"), status_code=303)

    @app.get("/s/{slug}/admin/conversations", response_class=HTMLResponse)
    async def conversations(request: Request, slug: str):
        served = get_served(slug)
        admin_nonce(request, served)
        rows = await run_in_threadpool(work.list_conversations, served.ctx.store, served.ctx.study_id)
        return render(request, "admin_conversations.html", study=served.ctx, conversations=rows)

    @app.get("/s/{slug}/admin/conversations/{conversation_id:path}", response_class=HTMLResponse)
    async def conversation(request: Request, slug: str, conversation_id: str):
        served = get_served(slug)
        admin_nonce(request, served)
        conv = await run_in_threadpool(served.ctx.store.get_conversation, served.ctx.study_id, conversation_id)
        return render(request, "admin_conversation.html", study=served.ctx, conversation=conv)

    @app.get("/s/{slug}/admin/export.csv")
    async def export(request: Request, slug: str):
        served = get_served(slug)
        admin_nonce(request, served)

        def build() -> bytes:
            from ..formats.tidy import export_judgments

            dataset = served.ctx.store.load_dataset(served.ctx.study_id)
            with tempfile.TemporaryDirectory() as tmp:
                path = export_judgments(dataset, Path(tmp) / "judgments.csv", "csv")
                return Path(path).read_bytes()

        body = await run_in_threadpool(build)
        name = f"{served.slug}-judgments.csv"
        return Response(body, media_type="text/csv",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})
