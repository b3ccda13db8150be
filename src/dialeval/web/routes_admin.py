"""The admin pages: progress, live headline numbers, annotators (QC, block/unblock), conversations,
export, completion approvals and returned submissions.

Behind a token: $DIALEVAL_ADMIN_TOKEN or the study folder's .admin-token (printed by `serve`).
Opening ``/s/<slug>/admin?token=...`` once sets a signed admin cookie for that study; every other
admin route depends on that cookie (`Admin`), every admin post on its CSRF token too (`AdminForm`).
"""

from __future__ import annotations

import csv
import io
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ..quality.typing import summarise_texts
from ..records import SIMULATED_PLATFORM
from ..store import work
from ..textclean import clean_text
from .auth import ADMIN_COOKIE, token_matches
from .csrf import CSRF_FIELD, CSRF_HEADER, csrf_token, csrf_valid, same_origin
from .deps import Served, posted_form
from .error_pages import WebError
from .limits import PathId
from .pages import render
from .served import ServedStudy

router = APIRouter()


def completion_state(row: dict, meta: dict) -> str:
    """complete | failed (blocked) | returned | in progress | not started, from an admin table row."""
    if meta.get("completed_at"):
        return "complete"
    if row["status"] == "blocked":
        return "failed"
    if meta.get("returned_at"):
        return "returned"
    if row["open"] or row["submitted"] or row["judgments"]:
        return "in progress"
    return "not started"


def admin_nonce(request: Request, served: ServedStudy) -> str:
    """The nonce of this browser's admin session (its CSRF key); 403 without the admin cookie."""
    nonce = served.signer.read_admin(request.cookies.get(ADMIN_COOKIE))
    if nonce is None:
        raise WebError(
            403,
            "The admin pages need the admin token: open the admin link printed by `dialeval serve` (…/admin?token=…).",
        )
    return nonce


async def admin_session(request: Request, served: Served) -> str:
    return admin_nonce(request, served)


Admin = Annotated[str, Depends(admin_session)]


async def admin_form(request: Request, served: Served, nonce: Admin) -> dict[str, Any]:
    """An admin form (or JSON) post: from this site, with the admin session's CSRF token."""
    data = await posted_form(request)
    token = request.headers.get(CSRF_HEADER) or data.get(CSRF_FIELD)
    if not same_origin(request) or not csrf_valid(served.secret, "admin:" + nonce, token):
        raise WebError(403, "The form's security token is missing or out of date.")
    return data


AdminForm = Annotated[dict[str, Any], Depends(admin_form)]


@router.get("/s/{slug}/admin", response_class=HTMLResponse)
async def admin(request: Request, served: Served, token: str | None = None):
    if token is not None:
        if not token_matches(token, served.admin_token):
            raise WebError(403, "Wrong admin token.")
        response = RedirectResponse(served.ctx.url("admin"), status_code=303)
        response.set_cookie(
            ADMIN_COOKIE,
            served.signer.admin_cookie(),
            max_age=12 * 3600,
            path=f"/s/{served.slug}",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response
    nonce = admin_nonce(request, served)
    store, sid = served.ctx.store, served.ctx.study_id
    counts = await run_in_threadpool(store.counts, sid)
    statuses = await run_in_threadpool(work.assignment_status_counts, store, sid)
    annotators = await run_in_threadpool(work.list_annotators, store, sid)
    summary = None
    if served.protocol is not None:
        summary = await run_in_threadpool(served.protocol.admin_summary)
    incidents = await run_in_threadpool(work.bot_incidents, store, sid)
    texts, bot_texts = await run_in_threadpool(work.typed_inputs, store, sid)
    typed = summarise_texts(texts, bot_texts, served.ctx.config.quality.paste_flag)
    completions = {r["id"]: r for r in await run_in_threadpool(completion_rows, served, annotators)}
    for a in annotators:
        a["completion"] = completions.get(a["id"], {})
    return render(
        request,
        "admin.html",
        study=served.ctx,
        counts=counts,
        statuses=statuses,
        annotators=annotators,
        summary=summary,
        incidents=incidents,
        typed=typed,
        limits=served.ctx.config.limits,
        error=served.error,
        csrf=csrf_token(served.secret, "admin:" + nonce),
    )


# Before the /{what} route below, which would take "returned" for an unknown status (routes
# match in the order they are added).
@router.post("/s/{slug}/admin/annotators/{annotator_id}/returned")
async def mark_returned(request: Request, served: Served, _form: AdminForm, annotator_id: PathId):
    ann = await run_in_threadpool(work.get_annotator, served.ctx.store, annotator_id)
    if ann is None or ann.study_id != served.ctx.study_id:
        raise WebError(404, "No such annotator.")
    await run_in_threadpool(work.mark_returned, served.ctx.store, served.ctx.study_id, annotator_id)
    return RedirectResponse(served.ctx.url("admin"), status_code=303)


@router.post("/s/{slug}/admin/annotators/{annotator_id}/{what}")
async def set_status(request: Request, served: Served, data: AdminForm, annotator_id: PathId, what: str):
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


@router.get("/s/{slug}/admin/conversations", response_class=HTMLResponse)
async def conversations(request: Request, served: Served, _admin: Admin):
    rows = await run_in_threadpool(work.list_conversations, served.ctx.store, served.ctx.study_id)
    return render(request, "admin_conversations.html", study=served.ctx, conversations=rows)


@router.get("/s/{slug}/admin/conversations/{conversation_id:path}", response_class=HTMLResponse)
async def conversation(request: Request, served: Served, _admin: Admin, conversation_id: str):
    conv = await run_in_threadpool(
        served.ctx.store.get_conversation, served.ctx.study_id, clean_text(conversation_id)
    )  # no NUL towards PostgreSQL
    return render(request, "admin_conversation.html", study=served.ctx, conversation=conv)


@router.get("/s/{slug}/admin/export.csv")
async def export(request: Request, served: Served, _admin: Admin):

    def build() -> bytes:
        from ..formats.tidy import export_judgments

        dataset = served.ctx.store.load_dataset(served.ctx.study_id)
        with tempfile.TemporaryDirectory() as tmp:
            path = export_judgments(dataset, Path(tmp) / "judgments.csv", "csv")
            return Path(path).read_bytes()

    body = await run_in_threadpool(build)
    name = f"{served.slug}-judgments.csv"
    return Response(body, media_type="text/csv", headers={"Content-Disposition": f'attachment; filename="{name}"'})


# -- completion, approvals, returns (issue 8) ---------------------------------------------
@router.post("/s/{slug}/admin/returned")
async def mark_returned_list(request: Request, served: Served, data: AdminForm):
    """Paste the ids of returned or timed-out submissions (Prolific participant ids, MTurk worker
    ids) to free their unfinished work for others. JSON {"ids": [...]} works too."""
    raw = data.get("ids") or ""
    ids = [str(i).strip() for i in raw] if isinstance(raw, list) else re.split(r"[\s,;]+", str(raw))
    ids = [i for i in ids if i]
    if not ids:
        raise WebError(400, "Give the participant or worker ids of the returned submissions.")
    freed, unknown = 0, []
    for external in ids:
        ann = await run_in_threadpool(work.find_annotator, served.ctx.store, served.ctx.study_id, external)
        if ann is None:
            unknown.append(external)
            continue
        freed += await run_in_threadpool(work.mark_returned, served.ctx.store, served.ctx.study_id, ann.id)
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse(
            {"ok": True, "marked": len(ids) - len(unknown), "assignments_freed": freed, "unknown": unknown}
        )
    return RedirectResponse(served.ctx.url("admin"), status_code=303)


@router.get("/s/{slug}/admin/approvals.csv")
async def approvals_csv(request: Request, served: Served, _admin: Admin):
    """Every annotator with completion state, code and the suggested decision."""
    rows = await run_in_threadpool(completion_rows, served)
    fields = [
        "platform",
        "participant_id",
        "state",
        "completion_code",
        "completed_at",
        "decision",
        "reason",
        "mturk_assignment_id",
    ]
    return csv_response(rows, fields, f"{served.slug}-approvals.csv")


@router.get("/s/{slug}/admin/approvals/prolific.txt")
async def approvals_prolific_txt(request: Request, served: Served, _admin: Admin):
    """Prolific's bulk approve: participant ids to approve, one per line (paste into the dialog)."""
    rows = await run_in_threadpool(completion_rows, served)
    ids = [r["participant_id"] for r in rows if r["platform"] == "prolific" and r["decision"] == "approve"]
    return Response(
        "\n".join(ids) + ("\n" if ids else ""),
        media_type="text/plain",
        headers={"Content-Disposition": f'attachment; filename="{served.slug}-prolific-approve.txt"'},
    )


@router.get("/s/{slug}/admin/approvals/prolific.json")
async def approvals_prolific_json(request: Request, served: Served, _admin: Admin):
    """The body of Prolific's bulk-approve API call: {"study_id", "participant_ids"}."""
    rows = await run_in_threadpool(completion_rows, served)
    approve = [r for r in rows if r["platform"] == "prolific" and r["decision"] == "approve"]
    study_ids = sorted({r["prolific_study_id"] for r in approve if r.get("prolific_study_id")})
    body = {
        "study_id": study_ids[0] if len(study_ids) == 1 else None,
        "participant_ids": [r["participant_id"] for r in approve],
    }
    return JSONResponse(
        body, headers={"Content-Disposition": f'attachment; filename="{served.slug}-prolific-bulk-approve.json"'}
    )


@router.get("/s/{slug}/admin/approvals/mturk.csv")
async def approvals_mturk_csv(request: Request, served: Served, _admin: Admin):
    """MTurk's batch review upload: one row per MTurk assignment, "x" in Approve or a reason in Reject."""
    rows = await run_in_threadpool(mturk_rows, served)
    return csv_response(
        rows, ["HITId", "AssignmentId", "WorkerId", "Approve", "Reject"], f"{served.slug}-mturk-review.csv"
    )


def csv_response(rows: list[dict], fields: list[str], name: str) -> Response:
    from ..formats.tidy import neutralise_formula

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: neutralise_formula(r.get(k)) for k in fields})
    return Response(
        buf.getvalue(), media_type="text/csv", headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )


def completion_rows(served: ServedStudy, annotators: list[dict] | None = None) -> list[dict]:
    """One row per annotator: completion state, the code they were shown, a suggested decision."""
    rec = served.ctx.config.recruitment
    out = []
    if annotators is None:
        annotators = work.list_annotators(served.ctx.store, served.ctx.study_id)
    for a in annotators:
        meta = a.get("meta") or {}
        state = completion_state(a, meta)
        code = None
        if state == "complete":
            code = rec.completion_code or served.signer.completion_code(a["id"])
        if a["platform"] == SIMULATED_PLATFORM:  # `dialeval simulate`: nobody to pay or reject
            decision, reason = "none", "simulated annotator (dialeval simulate)"
        elif state == "complete" and a["status"] == "active":
            decision, reason = "approve", ""
        elif state == "complete":
            decision, reason = "review", "; ".join(a["reasons"]) or a["status"]
        elif state == "failed":
            decision, reason = "return", "; ".join(a["reasons"]) or "did not pass the practice"
        elif state == "returned":
            decision, reason = "none", "submission returned"
        else:
            decision, reason = "reject", "the session was not completed"
        out.append(
            {
                "id": a["id"],
                "platform": a["platform"],
                "participant_id": a["external_id"],
                "state": state,
                "completion_code": code,
                "completed_at": meta.get("completed_at"),
                "decision": decision,
                "reason": reason,
                "mturk_assignment_id": meta.get("completed_mturk_assignment") or meta.get("mturk_assignment_id"),
                "prolific_study_id": meta.get("prolific_study_id"),
                "meta": meta,
            }
        )
    return out


def mturk_rows(served: ServedStudy) -> list[dict]:
    out = []
    for r in completion_rows(served):
        if r["platform"] != "mturk":
            continue
        meta = r["meta"]
        seen = list(meta.get("mturk_assignments") or [])
        if not seen and meta.get("mturk_assignment_id"):
            seen = [{"assignment_id": meta["mturk_assignment_id"], "hit_id": meta.get("mturk_hit_id")}]
        paid = meta.get("completed_mturk_assignment")
        for m in seen:
            approve = reject = ""
            if r["decision"] == "approve" and m["assignment_id"] == paid:
                approve = "x"
            elif r["decision"] == "reject":
                reject = "The task was not completed."
            out.append(
                {
                    "HITId": m.get("hit_id") or "",
                    "AssignmentId": m["assignment_id"],
                    "WorkerId": r["participant_id"],
                    "Approve": approve,
                    "Reject": reject,
                }
            )
    return out
