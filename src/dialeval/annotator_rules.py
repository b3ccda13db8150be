"""Which annotators a report counts: the one rule the scheduler, the reports and the exports share.

An annotator is *filtered* (none of their judgments count: not in the report's tables, not in the
adaptive scheduler's stopping tests) when their status -- the store's annotator status, or
``meta["status"]`` in an imported data set -- is one of FILTERED_STATUSES, or their meta says
``filtered`` or ``excluded``. The scheduler (scheduling/plan.py) and the report (analysis/shared.py)
both ask :func:`is_filtered`, so the report's stopping table replays exactly what the scheduler saw.

An annotator *flagged* by quality control (:func:`qc_flags`: ``meta["flagged"]``, a flag reason, or
``meta["qc_status"]`` in QC_FAILED_STATUSES) is a different thing: the flag is shown (the tidy
export's ``annotator_flagged`` column, the admin page) for the analyst to decide, and the judgments
still count until the annotator is filtered.

>>> is_filtered("blocked"), is_filtered("active", {"status": "Rejected"}), is_filtered(None, {"excluded": 1})
(True, True, True)
>>> is_filtered("active", {"qc_status": "failed"})  # flagged, not filtered
False
>>> qc_flags({"qc_status": "failed"})
(True, 'failed', None)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FILTERED_STATUSES = frozenset({"filtered", "excluded", "blocked", "failed", "rejected"})
QC_FAILED_STATUSES = frozenset({"fail", "failed", "flagged", "excluded"})


def is_filtered(status: str | None, meta: Mapping[str, Any] | None = None) -> bool:
    """True when an annotator's judgments are left out of reports and stopping tests."""
    m = meta or {}
    return bool(
        str(status or "").lower() in FILTERED_STATUSES
        or m.get("filtered")
        or m.get("excluded")
        or str(m.get("status", "")).lower() in FILTERED_STATUSES
    )


def qc_flags(meta: Mapping[str, Any]) -> tuple[bool, str | None, str | None]:
    """(flagged, qc_status, reason) of an annotator's meta: flagged when ``flagged`` is true, a reason
    is given (``flag_reason`` / ``flag_reasons`` / ``filter_reasons``, lists joined by ``;``) or
    ``qc_status`` is one of QC_FAILED_STATUSES. A flag does not filter (module doc)."""
    status = meta.get("qc_status")
    reason: Any = None
    for key in ("flag_reason", "flag_reasons", "filter_reasons"):
        if meta.get(key):
            reason = meta[key]
            break
    if isinstance(reason, (list, tuple, set)):
        reason = ";".join(str(r) for r in reason)
    flagged = (
        bool(meta.get("flagged")) or bool(reason) or (isinstance(status, str) and status.lower() in QC_FAILED_STATUSES)
    )
    return flagged, None if status is None else str(status), None if not reason else str(reason)
