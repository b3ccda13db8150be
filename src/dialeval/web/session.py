"""The annotator's session: the signed identity cookie, or the same value carried by the page.

Browsers that keep no cookie in a cross-site iframe (MTurk) get the signed value as a token in
every link, form action and redirect (?sid=) and fetch() header; `url_for` adds it where needed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import Response

from ..store import work
from ..store.work import AnnotatorInfo, AssignmentInfo
from .auth import COOKIE_MAX_AGE, FRAMED_HEADER, IDENTITY_COOKIE, SESSION_HEADER, SESSION_PARAM, Identity
from .served import ServedStudy


@dataclass
class AnnotatorSession:
    """Who is asking: the signed identity (its nonce keys the CSRF token) and the annotator's row.
    `assignment`: (id, the assignment or None) when find_session was asked to read it as well;
    `resume_rows`: what work.resume_assignment decides from, when find_session was asked for them."""

    identity: Identity
    annotator: AnnotatorInfo
    assignment: tuple[int, AssignmentInfo | None] | None = None
    resume_rows: list[AssignmentInfo] | None = None


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


def find_session(
    request: Request, served: ServedStudy, assignment_id: int | None = None, *, resume_rows: bool = False
) -> AnnotatorSession | None:
    """The annotator this request is signed in as (blocking: reads the database), or None. With an
    `assignment_id` (a post to an assignment) that assignment is read in the same statement, for the
    ownership check that follows (deps.owned_assignment); with `resume_rows` (the task page), the
    rows work.resume_assignment decides from and the count of its progress header
    (Protocol.progress_kind): one round trip, not three."""
    for value, from_token in session_values(request):
        ident = served.signer.read_identity(value)
        if ident is None:
            continue
        found: tuple[int, AssignmentInfo | None] | None = None
        rows: list[AssignmentInfo] | None = None
        if resume_rows:
            protocol = served.protocol
            annotator, rows = work.get_annotator_and_resume_rows(
                served.ctx.store,
                ident.annotator_id,
                served.ctx.study_id,
                count_kind=protocol.progress_kind if protocol is not None else None,
            )
        elif assignment_id is None:
            annotator = work.get_annotator(served.ctx.store, ident.annotator_id)
        else:
            annotator, assignment = work.get_annotator_and_assignment(
                served.ctx.store, ident.annotator_id, assignment_id
            )
            found = (assignment_id, assignment)
        if annotator is None or annotator.study_id != served.ctx.study_id:
            continue
        bound = annotator.meta.get("session_nonce")
        if bound and bound != ident.nonce:  # the id was moved to another browser: this one is signed out
            continue
        if from_token:
            request.state.session_token = value  # carried on in every link and redirect (see url_for)
        return AnnotatorSession(ident, annotator, found, rows)
    return None


def url_for(request: Request, served: ServedStudy, path: str) -> str:
    """A study URL; with ?sid= when this browser is identified by the page's token, not a cookie."""
    url = served.ctx.url(path)
    token = getattr(request.state, "session_token", None)
    if token:
        url += ("&" if "?" in url else "?") + urlencode({SESSION_PARAM: token})
    return url


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


def new_nonce() -> str:
    """A browser session's nonce (it keys the CSRF token and binds the annotator to the browser)."""
    return secrets.token_urlsafe(16)


def set_identity(
    response: Response,
    request: Request,
    served: ServedStudy,
    annotator_id: int,
    nonce: str | None = None,
    *,
    stored: bool = False,
) -> str:
    """Sign the annotator in: the cookie (partitioned, SameSite=None over https, so it also works in
    MTurk's cross-site iframe) and the same signed value as a token; binds the annotator's platform
    id to this browser session (`stored`: the annotator was created with this nonce in its meta, so
    nothing is written). Returns the token. Blocking (writes the database)."""
    nonce = nonce or new_nonce()
    value = served.signer.identity_cookie(annotator_id, nonce)
    if not stored:
        work.update_annotator_meta(served.ctx.store, annotator_id, session_nonce=nonce)
    secure = request.url.scheme == "https"
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
    # not send Sec-Fetch-Dest are treated alike; app.js's fetch() says so itself); a top-level tab
    # keeps its cookie.
    framed = request.headers.get("sec-fetch-dest", "iframe") in ("iframe", "frame", "embed", "object")
    if framed or request.headers.get(FRAMED_HEADER) == "1":
        request.state.session_token = value
    return value
