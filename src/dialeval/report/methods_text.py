"""The methods paragraph of a report, written from the study file and what was collected."""

from __future__ import annotations

from typing import Any

from ..records import Dataset


def collection_counts(dataset: Dataset) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    for a in dataset.annotators:
        status = a.meta.get("status", "active")
        statuses[status] = statuses.get(status, 0) + 1
    seconds = [j.elapsed_s for j in dataset.judgments if j.elapsed_s is not None]
    return {
        "conversations": len(dataset.conversations),
        "annotators": len(dataset.annotators),
        "annotator_status": statuses,
        "units": len(dataset.units),
        "judgments": len(dataset.judgments),
        "annotator_hours": round(sum(seconds) / 3600, 2) if seconds else None,
        "bots": sorted({b for c in dataset.conversations for b in c.bots if b and b != "human"}),
    }


def methods_paragraph(method: str, counts: dict[str, Any], config: dict[str, Any] | None) -> str:
    from ..methods import all_methods

    spec = all_methods().get(method)
    name, cite, how = (spec.title, spec.paper, spec.methods_text or "") if spec else (method, "", "")
    config = config or {}
    parts = [f"Method: {name} ({cite})." if cite else f"Method: {name}.", how]
    bots = counts.get("bots") or []
    parts.append(
        f"{counts['annotators']} annotators gave {counts['judgments']} judgments on {counts['units']} units "
        f"built from {counts['conversations']} conversations of {len(bots)} systems"
        + (f" ({', '.join(bots)})." if bots else ".")
    )
    if counts.get("annotator_hours"):
        parts.append(f"Recorded annotation time: {counts['annotator_hours']} annotator-hours.")
    imported = config.get("imported_from")
    if imported:
        parts.append(f"The data were imported ({imported.get('format')}) from {imported.get('path')}.")
    else:
        onboarding = config.get("onboarding") or {}
        # only methods whose pages run the onboarding check (the others ignore `onboarding`)
        if onboarding.get("enabled") and spec is not None and spec.onboarding_check:
            parts.append(f"Annotators passed an onboarding check first; failing it meant: {onboarding.get('on_fail')}.")
        quality = config.get("quality") or {}
        if quality.get("worker_filters"):
            parts.append(
                "Annotators whose own chat messages tripped the worker filters of Smith et al. 2022 "
                "(short messages, greeting first, ALL CAPS, repetition, offensive words) were flagged "
                "and their judgments left out of the statistics, not deleted."
            )
    return " ".join(parts)
