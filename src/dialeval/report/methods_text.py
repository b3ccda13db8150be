"""The methods paragraph of a report, written from the study file and what was collected."""

from __future__ import annotations

from typing import Any

from ..records import Dataset

METHOD_NAMES = {
    "acute": (
        "ACUTE-Eval (PW-Dialog)",
        "Li et al. 2019; Smith et al. 2022",
        "Annotators compared two whole conversations side by side and chose the better highlighted "
        "speaker for a question, with a short justification. Sides were randomised per judgment. "
        "Per bot pair we report wins, the win rate and a two-sided binomial test.",
    ),
    "pairwise-turn": (
        "PW-Turn",
        "Smith et al. 2022",
        "Annotators chatted live; at every bot turn two bots answered the same history, the two "
        "replies were shown in random order, and the annotator chose one (with a justification), "
        "which continued the conversation. We report Lin, Sqr and winner-takes-all win rates, "
        "per-turn win rates and two-sided binomial tests.",
    ),
    "single-model": (
        "SM-Turn + SM-Dialog",
        "Smith et al. 2022",
        "Annotators chatted live with one bot, marked each bot reply as engaging, human-like and/or "
        "interesting, and gave three 1–5 ratings at the end. We report per-turn success rates, "
        "winner-takes-all rates, Likert means, t-tests and bootstrapped effective win rates.",
    ),
    "spot-the-bot": (
        "Spot The Bot",
        "Deriu et al. 2020",
        "Bot–bot conversations were cut into segments of the first k exchanges; annotators labelled "
        "each speaker as human, bot or unsure and compared the speakers on fluency, sensibleness and "
        "specificity. We report pairwise win rates with chi-square tests, bootstrap rank ranges and "
        "clusters, TrueSkill, Turnbull survival curves with generalized log-rank tests "
        "(Bonferroni-adjusted) and Cox models of the features.",
    ),
    "arena": (
        "Chatbot Arena battles",
        "Chiang et al. 2024",
        "Each vote compared two anonymous models answering the same prompt: model_a, model_b, tie or "
        "tie (both bad). Ratings are a Bradley-Terry fit on an Elo-like scale; ties (both kinds) count "
        "as half a win for each model, as Chatbot Arena does. Intervals: percentile bootstrap over "
        "battles and the sandwich (robust) normal interval; the rank is 1 + the number of models "
        "whose interval lies wholly above.",
    ),
    "direct-assessment": (
        "Direct Assessment with a degraded quality-control bot",
        "Ji et al. 2022",
        "Annotators chatted live (at least 10 inputs) and rated seven statements on 0–100 "
        "sliders; every HIT held one conversation with a deliberately degraded bot. Annotators "
        "whose ratings did not separate the degraded bot (one-sided Mann-Whitney, p < 0.05, "
        "positive criteria) were filtered. Scores are per-annotator z-scores; pairs of systems "
        "are compared with one-sided Mann-Whitney tests.",
    ),
}


# Methods whose pages run the study's onboarding/practice (the others ignore `onboarding`, so the
# report must not claim a check took place).
METHODS_WITH_ONBOARDING = {"acute", "pairwise-turn"}


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
    name, cite, how = METHOD_NAMES.get(method, (method, "", ""))
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
        if onboarding.get("enabled") and method in METHODS_WITH_ONBOARDING:
            parts.append(f"Annotators passed an onboarding check first; failing it meant: {onboarding.get('on_fail')}.")
        quality = config.get("quality") or {}
        if quality.get("worker_filters"):
            parts.append(
                "Annotators whose own chat messages tripped the worker filters of Smith et al. 2022 "
                "(short messages, greeting first, ALL CAPS, repetition, offensive words) were flagged "
                "and their judgments left out of the statistics, not deleted."
            )
    return " ".join(parts)
