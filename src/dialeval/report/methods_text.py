"""The methods paragraph of a report, written from the study file and what was collected."""

from __future__ import annotations

from typing import Any

from ..records import Dataset


def collection_counts(dataset: Dataset) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    for a in dataset.annotators:
        status = a.meta.get("status", "active")
        statuses[status] = statuses.get(status, 0) + 1
    from ..records import JudgmentColumns

    if isinstance(dataset.judgments, JudgmentColumns):  # a large study, read as columns
        seconds = dataset.judgments.frame["elapsed_s"].dropna().tolist()
    else:
        seconds = [j.elapsed_s for j in dataset.judgments if j.elapsed_s is not None]
    return {
        "conversations": len(dataset.conversations),
        "annotators": len(dataset.annotators),
        # an import whose source names no annotator keeps one id for its whole crowd (formats/arena.py)
        "pooled_annotators": any(a.meta.get("pooled") for a in dataset.annotators),
        "annotator_status": statuses,
        "units": len(dataset.units),
        "judgments": len(dataset.judgments),
        "annotator_hours": round(sum(seconds) / 3600, 2) if seconds else None,
        "bots": sorted({b for c in dataset.conversations for b in c.bots if b and b != "human"}),
    }


def methods_paragraph(method: str, counts: dict[str, Any], config: dict[str, Any] | None) -> str:
    from ..registry import all_methods

    spec = all_methods().get(method)
    name, cite, how = (spec.title, spec.paper, spec.methods_text or "") if spec else (method, "", "")
    config = config or {}
    parts = [f"Method: {name} ({cite})." if cite else f"Method: {name}.", how]
    bots = counts.get("bots") or []
    if counts.get("pooled_annotators"):
        who = "An anonymous crowd (the source names no annotator)"
    else:
        who = count_of(counts["annotators"], "annotator")
    sentence = f"{who} gave {count_of(counts['judgments'], 'judgment')}"
    if counts["units"]:
        sentence += f" on {count_of(counts['units'], 'unit')}"
        if counts["conversations"]:
            sentence += f" built from {count_of(counts['conversations'], 'conversation')}"
    elif counts["conversations"]:
        sentence += f" on {count_of(counts['conversations'], 'conversation')}"
    sentence += f" of {count_of(len(bots), 'system')}" + (f" ({', '.join(bots)})." if bots else ".")
    parts.append(sentence)
    if counts.get("annotator_hours"):
        parts.append(f"Recorded annotation time: {counts['annotator_hours']} annotator-hours.")
    imported = config.get("imported_from")
    if imported:
        parts.append(f"The data were imported ({imported.get('format')}) from {imported.get('path')}.")
    else:
        onboarding = config.get("onboarding") or {}
        # only methods whose pages run the onboarding check (the others ignore `onboarding`)
        runs = spec is not None and spec.onboarding_check and _onboarding_runs(method, config)
        if onboarding.get("enabled") and runs:
            parts.append(f"Annotators passed an onboarding check first; failing it meant: {onboarding.get('on_fail')}.")
        quality = config.get("quality") or {}
        # the filters read an annotator's live-chat messages (Protocol.check_live_messages): only
        # where people chat with the bots
        if quality.get("worker_filters") and spec is not None and spec.live:
            parts.append(
                "Annotators whose own chat messages tripped the worker filters of Smith et al. 2022 "
                "(short messages, greeting first, ALL CAPS, repetition, offensive words) were flagged "
                "and their judgments left out of the statistics, not deleted."
            )
    return " ".join(parts)


def count_of(count: int, noun: str) -> str:
    """'1 system', '26,919 judgments'."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _onboarding_runs(method: str, config: dict[str, Any]) -> bool:
    """Whether the method's options let the onboarding check run (ACUTE: a weak bot is named)."""
    from pydantic import ValidationError

    from ..registry import get, load_part

    try:
        options = load_part(get(method).options).model_validate(config.get("protocol") or {})
    except (ValidationError, KeyError, ImportError, AttributeError):
        return True
    return bool(getattr(options, "onboarding_runs", True))
