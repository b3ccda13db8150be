"""How annotators arrive: a study link, Prolific, MTurk ExternalQuestion, or a volunteer link."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"
# A participant's own submissions on Prolific, where "Return" is (the failed-practice page links it).
PROLIFIC_SUBMISSIONS = "https://app.prolific.com/submissions"
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_HOSTS = {"www.mturk.com", "workersandbox.mturk.com"}
_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,120}$")


@dataclass
class Entry:
    platform: str  # link | prolific | mturk | volunteer
    external_id: str | None  # None: make one when the annotator starts
    meta: dict[str, Any] = field(default_factory=dict)
    preview: bool = False  # MTurk preview: show the task, do not start work
    error: str | None = None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value if _ID.match(value) else None


def parse_entry(params: dict[str, str]) -> Entry:
    """Read the entry link's query parameters."""
    if "PROLIFIC_PID" in params:
        pid = _clean(params.get("PROLIFIC_PID"))
        if pid is None:
            return Entry("prolific", None, error="The Prolific id in the link is missing or malformed.")
        return Entry(
            "prolific",
            pid,
            {
                "prolific_study_id": _clean(params.get("STUDY_ID")),
                "prolific_session_id": _clean(params.get("SESSION_ID")),
            },
        )
    if "assignmentId" in params or "workerId" in params:
        assignment = params.get("assignmentId", "")
        if assignment == MTURK_PREVIEW:
            return Entry("mturk", None, preview=True)
        worker = _clean(params.get("workerId"))
        if worker is None or _clean(assignment) is None:
            return Entry("mturk", None, error="The MTurk worker or assignment id in the link is missing or malformed.")
        submit_to = params.get("turkSubmitTo", "")
        parts = urlsplit(submit_to)
        if parts.scheme != "https" or parts.hostname not in MTURK_HOSTS:
            submit_to = "https://www.mturk.com"
        return Entry(
            "mturk",
            worker,
            {
                "mturk_assignment_id": assignment,
                "mturk_hit_id": _clean(params.get("hitId")),
                "mturk_submit_to": f"{parts.scheme}://{parts.hostname}"
                if parts.hostname in MTURK_HOSTS and parts.scheme == "https"
                else submit_to,
            },
        )
    if params.get("volunteer") in {"1", "true", "yes"}:
        return Entry("volunteer", None)
    return Entry("link", None)


def new_external_id(platform: str) -> str:
    prefix = {"volunteer": "vol", "link": "anon"}.get(platform, platform)
    return f"{prefix}-{secrets.token_hex(6)}"


def prolific_done_url(code: str) -> str:
    return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': code})}"


def mturk_submit_url(meta: dict[str, Any]) -> str:
    base = meta.get("mturk_submit_to") or "https://www.mturk.com"
    parts = urlsplit(base)
    if parts.scheme != "https" or parts.hostname not in MTURK_HOSTS:
        base = "https://www.mturk.com"
    return base.rstrip("/") + "/mturk/externalSubmit"
