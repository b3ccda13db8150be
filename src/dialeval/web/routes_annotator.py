"""The signed-in annotator's pages: consent, instructions, the method's task page, its actions,
and the done page (completion code, Prolific redirect, MTurk submit).

What is method-specific comes from the study's Protocol (protocols/base.py documents the
contract); identity, CSRF, Origin, ownership, double submits and rate limits are done here once
for every method.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import re
import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from .. import clock
from ..protocols.base import Outcome
from ..quality import typing as input_signals
from ..store import work
from ..store.work import AnnotatorInfo, AssignmentInfo
from . import entry as entry_mod
from .csrf import csrf_token
from .deps import (
    Served,
    Session,
    annotator_session,
    check_action_name,
    form_or_error,
    owned,
    protocol_of,
    signed_in_sender,
)
from .error_pages import WebError
from .limits import PathId
from .pages import form_reply, render, render_html, wants_json, wants_next_page
from .served import ServedStudy, call, hook_in_thread
from .session import AnnotatorSession, url_for

router = APIRouter()
log = logging.getLogger("dialeval.web")

REQUEST_ID = re.compile(r"[A-Za-z0-9_\-]{8,100}")


def page_context(served: ServedStudy, session: AnnotatorSession) -> dict[str, Any]:
    return {
        "study": served.ctx,
        "annotator": session.annotator,
        "csrf": csrf_token(served.secret, session.identity.nonce),
    }


def not_ready(request: Request, served: ServedStudy, annotator: AnnotatorInfo) -> Response | None:
    """A redirect to consent or instructions when the annotator has not been through them."""
    if not annotator.meta.get("consented_at"):
        return RedirectResponse(url_for(request, served, "consent"), status_code=303)
    if not annotator.meta.get("instructed_at"):
        return RedirectResponse(url_for(request, served, "instructions"), status_code=303)
    return None


def outcome_response(request: Request, served: ServedStudy, outcome: Outcome, next_page: str | None = None) -> Response:
    """The answer's reply: JSON for fetch() (with the next task page's HTML when `next_page` is
    given, see NEXT_PAGE_HEADER), else a 303 to where the outcome sends the annotator."""
    target = outcome.redirect or served.ctx.url("task")
    if target.startswith(f"/s/{served.slug}/"):
        target = url_for(request, served, target.removeprefix(f"/s/{served.slug}/"))
    if wants_json(request):
        reply = {"ok": True, "done": outcome.done, "redirect": target, **(outcome.data or {})}
        if next_page is not None:
            reply["page"] = next_page
        return JSONResponse(reply)
    return RedirectResponse(target, status_code=303)


@router.get("/s/{slug}/consent", response_class=HTMLResponse)
async def consent(request: Request, served: Served, session: Session):
    return render(request, "consent.html", **session_page_context(served, session))


def session_page_context(served: ServedStudy, session: AnnotatorSession) -> dict[str, Any]:
    """A session page's values (entry, consent, instructions): its form is sent with fetch() and
    asks for the next page in the reply (`next_page_inline`, see NEXT_PAGE_HEADER)."""
    return {**page_context(served, session), "next_page_inline": True}


@router.post("/s/{slug}/consent")
async def consent_post(request: Request, served: Served):
    data, form_error = await form_or_error(request)
    agreed = data.get("agree") == "yes"
    inline = wants_next_page(request)

    def checked_then_stored() -> tuple[AnnotatorSession, str | None]:  # one worker thread: checks, write
        session = signed_in_sender(request, served, data, form_error)
        if not agreed:
            return session, None
        merged = work.update_annotator_meta(
            served.ctx.store, session.annotator.id, consented_at=clock.now().isoformat()
        )
        if not inline:
            return session, None
        if merged is not None:  # the annotator as the next page shows them, without reading them again
            session = dataclasses.replace(session, annotator=dataclasses.replace(session.annotator, meta=merged))
        return session, render_html(request, "instructions.html", **session_page_context(served, session))

    session, next_page = await run_in_threadpool(checked_then_stored)
    if not agreed:  # the form again, with the message beside its box (also without JavaScript)
        message = "Please tick the box to agree before you continue, or close this page to leave."
        if wants_json(request):
            return JSONResponse({"ok": False, "error": message, "invalid": "agree"}, status_code=400)
        return render(request, "consent.html", status=400, error=message, **session_page_context(served, session))
    return form_reply(request, url_for(request, served, "instructions"), next_page)


@router.get("/s/{slug}/instructions", response_class=HTMLResponse)
async def instructions(request: Request, served: Served, session: Session):
    if not session.annotator.meta.get("consented_at"):
        return RedirectResponse(url_for(request, served, "consent"), status_code=303)
    return render(request, "instructions.html", **session_page_context(served, session))


@router.post("/s/{slug}/instructions")
async def instructions_post(request: Request, served: Served):
    data, form_error = await form_or_error(request)
    begin = Outcome()  # on to the task page, brought with the reply when the page asks for it

    def checked_then_stored() -> tuple[Any, ...] | str | None:  # one worker thread: checks, write, next page
        session = signed_in_sender(request, served, data, form_error)
        work.update_annotator_meta(served.ctx.store, session.annotator.id, instructed_at=clock.now().isoformat())
        return next_page_reads(request, served, begin)

    following = await run_in_threadpool(checked_then_stored)
    outcome, page = next_page_reply(request, served, begin, following)
    return outcome_response(request, served, outcome, page)


_LATER = object()  # a task page's part not made in its worker thread (an async hook's): made on the loop


def task_blocking(request: Request, served: ServedStudy, hooks_in_thread: bool) -> tuple[Any, ...]:
    """What a task page needs from the database, in one worker thread: the session (403 without
    one), the redirects of an annotator not ready or blocked, the assignment to show (resumed or
    new), and -- when the protocol's hooks are plain functions -- its render context and progress.
    (session, redirect, assignment, notice, context, progress); _LATER or an awaitable for a part
    the loop still has to make. Its reads share one read transaction (Store.shared_reads)."""
    with served.ctx.store.shared_reads():
        return _task_reads(request, served, hooks_in_thread)


def _task_reads(request: Request, served: ServedStudy, hooks_in_thread: bool) -> tuple[Any, ...]:
    # the session read again with the rows the assignment is resumed from (after an answer too:
    # the answer may have flagged or blocked the annotator, and it chose their next assignment)
    session = annotator_session(request, served, resume_rows=True)
    annotator = session.annotator
    redirect = not_ready(request, served, annotator)
    if redirect is not None:
        return session, redirect, None, None, None, None
    if annotator.status == "blocked":
        return session, RedirectResponse(url_for(request, served, "done"), status_code=303), None, None, None, None
    protocol = protocol_of(served)
    resumed, notice = work.resume_assignment(
        served.ctx.store, served.ctx.study_id, annotator.id, protocol.expiry(), rows=session.resume_rows
    )
    assignment: Any = resumed
    context: Any = _LATER
    progress: Any = _LATER
    if assignment is None:
        assignment = protocol.assign(annotator) if hooks_in_thread else _LATER
    if hooks_in_thread and assignment is not None and not inspect.isawaitable(assignment):
        with protocol.page_reads():
            context = protocol.render(annotator, assignment)
            if not inspect.isawaitable(context):
                progress = protocol.progress(annotator, assignment)
    return session, None, assignment, notice, context, progress


async def finish_hook(value: Any, fn, *args) -> Any:
    """A part task_blocking left: the hook called now (_LATER), or its awaitable awaited."""
    if value is _LATER:
        return await call(fn, *args)
    if inspect.isawaitable(value):
        return await value
    return value


def hooks_run_in_thread(protocol: Any) -> bool:
    """True when the task page's hooks are plain functions (task_blocking calls them in its thread)."""
    return protocol is not None and not any(
        inspect.iscoroutinefunction(hook) for hook in (protocol.assign, protocol.render, protocol.progress)
    )


def task_page_values(
    request: Request,
    served: ServedStudy,
    session: AnnotatorSession,
    assignment: AssignmentInfo,
    notice: str | None,
    context: dict[str, Any],
    progress: Any,
) -> dict[str, Any]:
    """The task template's context: the framework's values (protocols/base.py lists them) and the
    protocol's render context over them."""
    protocol = protocol_of(served)
    page = {
        "assignment": assignment,
        "progress": progress,
        "notice": notice,
        "show_howto": True,
        "next_page_inline": protocol.inline_next_page,
        "action_url": lambda action: url_for(request, served, f"a/{assignment.id}/{action}"),
        "new_request_id": lambda: uuid.uuid4().hex,
        **page_context(served, session),
    }
    page.update({k: v for k, v in context.items() if k != "notice" or v})
    return page


@router.get("/s/{slug}/task", response_class=HTMLResponse)
async def task(request: Request, served: Served):
    # One worker thread for the session and everything the page reads (it was one per step: the
    # session, the resumed assignment, the render context, the progress).
    hooks_in_thread = hooks_run_in_thread(served.protocol)
    session, redirect, assignment, notice, context, progress = await run_in_threadpool(
        task_blocking, request, served, hooks_in_thread
    )
    if redirect is not None:
        return redirect
    protocol = protocol_of(served)
    annotator = session.annotator
    assignment = await finish_hook(assignment, protocol.assign, annotator)
    if assignment is None:
        return RedirectResponse(url_for(request, served, "done" + ("?reassigned=1" if notice else "")), status_code=303)
    context = await finish_hook(context, protocol.render, annotator, assignment)
    progress = await finish_hook(progress, protocol.progress, annotator, assignment)
    page = task_page_values(request, served, session, assignment, notice, context, progress)
    return render(request, protocol.template, **page)


def next_page_reads(request: Request, served: ServedStudy, outcome: Any) -> tuple[Any, ...] | str | None:
    """After an answer (or the instructions), in its worker thread: the next task page's parts (as task_blocking gives
    them) when the reply can carry it; the done page's study path when no task is left (the reply
    sends the page there, not through the task page); None when the page must load the task page
    itself (another page next, a protocol hook left to the loop, no Outcome, or the reads failed:
    the answer is stored by now, so its reply says so and the task page shows any error)."""
    if not isinstance(outcome, Outcome) or outcome.redirect is not None or not wants_next_page(request):
        return None
    protocol = protocol_of(served)
    if not protocol.inline_next_page or not hooks_run_in_thread(protocol):
        return None
    try:
        parts = task_blocking(request, served, True)
    except Exception:  # a busy database, a protocol's bug: never a failed reply to a stored answer
        log.warning("the next task page was not made with the answer; the page will load it", exc_info=True)
        return None
    _session, redirect, assignment, notice, context, progress = parts
    if redirect is not None:
        return None
    if assignment is None:
        return served.ctx.url("done" + ("?reassigned=1" if notice else ""))
    if _LATER in (context, progress) or any(inspect.isawaitable(p) for p in (assignment, context, progress)):
        return None
    return parts


def next_page_reply(
    request: Request, served: ServedStudy, outcome: Outcome, following: tuple[Any, ...] | str | None
) -> tuple[Outcome, str | None]:
    """The outcome to reply with and the next task page's HTML, from next_page_reads' answer."""
    if isinstance(following, str):
        return dataclasses.replace(outcome, redirect=following), None
    if following is None:
        return outcome, None
    session, _redirect, assignment, notice, context, progress = following
    page = task_page_values(request, served, session, assignment, notice, context, progress)
    return outcome, render_html(request, protocol_of(served).template, **page)


def act_blocking(
    request: Request,
    served: ServedStudy,
    assignment_id: int,
    action: str,
    data: dict[str, Any],
    form_error: WebError | None,
    act_in_thread: bool,
    signals: dict[str, int] | None,
) -> tuple[AnnotatorSession, AssignmentInfo, Any, tuple[Any, ...] | str | None]:
    """A task post's checks, in the order the dependencies of the other posts apply them, and --
    when the protocol's `act` is a plain function -- the act itself: one worker thread for the
    whole answer (it was three: the session, the ownership, the act). (session, assignment,
    Outcome, or _LATER when an async `act` is left to the loop, or an Outcome that ends here;
    next_page_reads' answer: what the reply brings or where it sends the page)."""
    session = signed_in_sender(request, served, data, form_error)  # 403, 413/400, 403
    protocol = protocol_of(served)  # 503
    check_action_name(action)  # 404
    assignment = owned(served, session, assignment_id)  # 404/403
    annotator = session.annotator
    request_id = data.get("request_id")
    if not isinstance(request_id, str) or not REQUEST_ID.fullmatch(request_id):
        raise WebError(400, "The form has no valid request id; reload the page and try again.")
    store, study_id = served.ctx.store, served.ctx.study_id
    if assignment.status == "expired" and work.revive_assignment(store, study_id, assignment.id, protocol.expiry()):
        assignment.status = "assigned"  # a late answer on a task nobody else took still counts
    if not assignment.is_open:
        if work.judgment_exists(store, annotator.id, request_id):
            repeat = Outcome(done=True, data={"repeat": True})
            return session, assignment, repeat, next_page_reads(request, served, repeat)
        raise WebError(
            409,
            "This task is already finished or has expired. Continue with the next one.",
            headers={"X-Dialeval-Next": url_for(request, served, "task")},
        )
    if annotator.status == "blocked":
        raise WebError(403, "You cannot continue with this study.")
    if action in protocol.rate_limited_actions:
        allowed, wait_s = served.limiter.check(f"{annotator.id}:{action}")
        if not allowed:
            wait = max(1, round(wait_s))
            raise WebError(
                429,
                f"You are sending messages too fast; wait {wait} s and try again.",
                headers={"Retry-After": str(wait)},
            )
    if not act_in_thread:
        return session, assignment, _LATER, None
    with input_signals.use(signals):
        outcome = protocol.act(annotator, assignment, action, data)
    return session, assignment, outcome, next_page_reads(request, served, outcome)


@router.post("/s/{slug}/a/{assignment_id}/{action}")
async def act(request: Request, served: Served, assignment_id: PathId, action: str):
    """Every form and fetch() of a task page: checked here, then handed to ``protocol.act``.
    Its checks are not FastAPI dependencies: resolving six of them cost about a tenth of the
    server's CPU per answer (py-spy, ACUTE under load); act_blocking applies them in their order."""
    data, form_error = await form_or_error(request)
    protocol = served.protocol
    act_in_thread = protocol is not None and not inspect.iscoroutinefunction(protocol.act)
    # how the texts of this form were entered (pasted, typed; counts only): stored with what it makes
    signals = input_signals.parse_signals(data.get("input_signals"))
    session, assignment, outcome, next_page = await run_in_threadpool(
        act_blocking, request, served, assignment_id, action, data, form_error, act_in_thread, signals
    )
    if outcome is _LATER:
        with input_signals.use(signals):
            outcome = await call(protocol_of(served).act, session.annotator, assignment, action, data)
    elif inspect.isawaitable(outcome):
        outcome = await outcome
    if not isinstance(outcome, Outcome):
        outcome = Outcome()
    outcome, page = next_page_reply(request, served, outcome, next_page)
    return outcome_response(request, served, outcome, page)


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


def done_blocking(request: Request, served: ServedStudy) -> tuple[AnnotatorSession, Response | None, dict[str, Any]]:
    """The done page's reads and writes in one worker thread (they were up to six): the session
    (403), the redirects of an annotator not ready or with work left, and what the page shows --
    {"state": "failed" | "nothing-left" | "complete", ...}. A session it finds complete is recorded
    as such (completed_at). The protocol's hooks run here; an async one on the event loop."""
    session = annotator_session(request, served, resume_rows=True)
    annotator = session.annotator
    if annotator.status == "blocked":
        return session, None, {"state": "failed", "blocked": True}
    redirect = not_ready(request, served, annotator)
    if redirect is not None:
        return session, redirect, {}
    notice = "reassigned" if request.query_params.get("reassigned") else None
    if not annotator.meta.get("completed_at"):
        protocol = protocol_of(served)
        store, study_id = served.ctx.store, served.ctx.study_id
        assignment, resumed = work.resume_assignment(
            store, study_id, annotator.id, protocol.expiry(), rows=session.resume_rows
        )
        if assignment is None:
            completion = hook_in_thread(protocol.completion)(annotator, False)
            if completion.done < completion.quota:  # is there more work for them?
                assignment = hook_in_thread(protocol.assign)(annotator)
        if assignment is not None:  # unfinished or new work: to it
            return session, RedirectResponse(url_for(request, served, "task"), status_code=303), {}
        if resumed:
            notice = "reassigned"
        if completion.state != "complete":
            store.log_event(study_id, "nothing-left", {"done": completion.done}, annotator.id)
            return session, None, {"state": "nothing-left", "blocked": False, "notice": notice}
        mturk_id = annotator.meta.get("mturk_assignment_id")
        merged = work.update_annotator_meta(
            store,
            annotator.id,
            completed_at=clock.now().isoformat(),
            completion={
                "state": "complete",
                "done": completion.done,
                "quota": completion.quota,
                "reason": completion.reason,
            },
            **({"completed_mturk_assignment": mturk_id} if mturk_id else {}),
        )
        if merged is not None:  # the annotator as the page shows them, without reading them again
            annotator = dataclasses.replace(annotator, meta=merged)
    return session, None, {"state": "complete", "blocked": False, "notice": notice, "annotator": annotator}


@router.get("/s/{slug}/done", response_class=HTMLResponse)
async def done(request: Request, served: Served):
    """The completion page: a code, the Prolific redirect or the MTurk submit only for a complete
    session (protocols' `completion`); otherwise back to the task, or why nothing is left."""
    session, redirect, shown = await run_in_threadpool(done_blocking, request, served)
    if redirect is not None:
        return redirect
    annotator = shown.pop("annotator", session.annotator)
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
    if shown["state"] != "complete":
        return render(request, "done.html", **{**page, **shown})
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
    return render(request, "done.html", **{**page, **shown, "code": code, "mturk": mturk})
