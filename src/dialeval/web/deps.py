"""The checks every route shares, as FastAPI dependencies: the served study, the signed-in
annotator, the posted form with its CSRF token and Origin checked, the study's protocol, and the
ownership of an assignment.

FastAPI runs a route's dependencies in the order its parameters are declared (each at most once
per request), so a route lists them in the order its checks apply: study (404), session (403),
form (413/400, then Origin and CSRF: 403), protocol (503), assignment (404/403).
Plain ``def`` dependencies read the database and run in a worker thread. The task post, the
busiest route, calls the same checks as plain functions in that order, in one worker thread
(routes_annotator.act_blocking).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from ..protocols.base import AssignmentInfo, Protocol
from ..store import work
from ..textclean import clean_value
from .csrf import CSRF_FIELD, CSRF_HEADER, csrf_valid, same_origin
from .error_pages import WebError
from .limits import MAX_ID, BadJSON, PathId, loads_json
from .served import ServedStudy
from .session import AnnotatorSession, find_session

MAX_BODY = 64 * 1024
ACTION_NAME = re.compile(r"[a-z][a-z0-9_\-]{0,39}")
NOT_AVAILABLE = "This study's pages are not available."
NO_SESSION = "Your session was not found. Please open the study link again."


async def served_study(request: Request, slug: str) -> ServedStudy:
    """The study served under /s/<slug>/ (404 when there is none)."""
    served = request.app.state.studies.get(slug)
    if served is None:
        raise WebError(404, "There is no such study here.")
    return served


Served = Annotated[ServedStudy, Depends(served_study)]


def annotator_session(request: Request, served: Served, *, resume_rows: bool = False) -> AnnotatorSession:
    """The annotator signed in to this study (403 when the browser has no valid session). On a path
    naming an assignment, it is read with the annotator (owned_assignment checks it later); with
    `resume_rows`, what the task page resumes from (find_session)."""
    found = find_session(request, served, path_id(request.path_params.get("assignment_id")), resume_rows=resume_rows)
    if found is None:
        raise WebError(403, NO_SESSION)
    return found


def path_id(value: Any) -> int | None:
    """A path's id as FastAPI will accept it (PathId: 1 .. MAX_ID), else None."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit() or len(value) > 19:
        return None
    number = int(value)
    return number if 1 <= number <= MAX_ID else None


Session = Annotated[AnnotatorSession, Depends(annotator_session)]


async def read_form(request: Request) -> dict[str, Any]:
    """The posted form or JSON object as a dict (str values, lists for repeated keys)."""
    body = await request.body()
    if len(body) > MAX_BODY:
        raise WebError(413, "The submitted data is too large.")
    ctype = request.headers.get("content-type", "")
    if ctype.startswith("application/json"):
        try:
            data = loads_json(body)
        except BadJSON as exc:
            raise WebError(400, f"The request body was refused: {exc}.") from None
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


async def posted_form(request: Request) -> dict[str, Any]:
    """The posted form or JSON, every text without NUL and other control characters (textclean.py)."""
    return clean_value(await read_form(request))


PostedForm = Annotated[dict[str, Any], Depends(posted_form)]


async def same_site_form(request: Request, served: Served) -> dict[str, Any]:
    """The form of a visitor not signed in yet: refused when the browser says another site sent it."""
    if not same_origin(request):
        raise WebError(403, "This form was sent from another site and was refused.")
    return await posted_form(request)


SameSiteForm = Annotated[dict[str, Any], Depends(same_site_form)]


def check_sender(request: Request, served: ServedStudy, session: AnnotatorSession, data: dict[str, Any]) -> None:
    """403 unless the signed-in annotator's form came from this site (Origin) with their CSRF token."""
    if not same_origin(request):
        raise WebError(403, "This form was sent from another site and was refused.")
    token = request.headers.get(CSRF_HEADER) or data.get(CSRF_FIELD)
    if not isinstance(token, str) or not csrf_valid(served.secret, session.identity.nonce, token):
        raise WebError(403, "The form's security token is missing or out of date. Reload the page and try again.")


async def form_or_error(request: Request) -> tuple[dict[str, Any], WebError | None]:
    """The posted form, read on the event loop; or ({}, the error), raised later by signed_in_sender
    so that a post without a session gets its 403 first, as the dependencies order it."""
    try:
        return await posted_form(request), None
    except WebError as exc:
        return {}, exc


def signed_in_sender(
    request: Request, served: ServedStudy, data: dict[str, Any], form_error: WebError | None
) -> AnnotatorSession:
    """A signed-in annotator's post checked in a worker thread, in this order: the session
    (403), the body (413/400, read before by form_or_error), the sender (403). Blocking (reads the
    database): a post's handler calls it in the same worker thread as its own database work."""
    session = annotator_session(request, served)
    if form_error is not None:
        raise form_error
    check_sender(request, served, session, data)
    return session


def protocol_of(served: ServedStudy) -> Protocol:
    """The study's protocol; 503 when its pages could not be opened (served.error says why)."""
    if served.protocol is None:
        raise WebError(503, served.error or NOT_AVAILABLE)
    return served.protocol


async def live_protocol(served: Served) -> Any:
    """The protocol of a live-chat study (one with an ``event_stream``); 404 for the others."""
    protocol = served.protocol
    if protocol is None or not hasattr(protocol, "event_stream"):
        raise WebError(404, "This page has no live replies.")
    return protocol


LiveChat = Annotated[Any, Depends(live_protocol)]


def check_action_name(action: str) -> str:
    """The {action} of a task post: a short lower-case name (the protocol decides what it means)."""
    if not ACTION_NAME.fullmatch(action):
        raise WebError(404, "Unknown action.")
    return action


def owned(served: ServedStudy, session: AnnotatorSession, assignment_id: int) -> AssignmentInfo:
    """Assignment {assignment_id} of this study (404), given to this annotator (403 otherwise).
    Blocking when the session was not read with it (find_session's `assignment_id`)."""
    if session.assignment is not None and session.assignment[0] == assignment_id:
        assignment = session.assignment[1]  # read with the session, in its transaction
    else:
        assignment = work.get_assignment(served.ctx.store, assignment_id)
    if assignment is None or assignment.study_id != served.ctx.study_id:
        raise WebError(404, "There is no such task.")
    if assignment.annotator_id != session.annotator.id:
        raise WebError(403, "This task belongs to somebody else.")
    return assignment


async def owned_assignment(assignment_id: PathId, served: Served, session: Session) -> AssignmentInfo:
    if session.assignment is not None and session.assignment[0] == assignment_id:
        return owned(served, session, assignment_id)  # no database read left: not worth a thread
    return await run_in_threadpool(owned, served, session, assignment_id)


OwnedAssignment = Annotated[AssignmentInfo, Depends(owned_assignment)]
