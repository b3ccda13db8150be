"""Automatic word-overlap metrics against the human scores of a report (Ji et al. 2022, §7).

Convention: a bot turn that has a reference response carries it as text in
``turn.meta["reference"]`` (for instance the gold next utterance of the corpus conversation the
bot's turn replaces). Turns without one, seed turns and people's turns are ignored. The system of a
turn is ``turn.bot``; when that is missing, a turn spoken by ``"bot"`` in a conversation with a
single system belongs to that system.

:func:`metric_report` scores every system with BLEU-1, BLEU-4, ROUGE-L, METEOR and GLEU
(:func:`dialeval.stats.metrics.score_system`) and correlates each metric with the human system
scores (``human_report["systems"][i]["score"]``, Pearson and Spearman over the systems both have;
:func:`dialeval.stats.metrics.metric_correlations`). It returns None when no turn has a reference,
so a report gets the key ``automatic_metrics`` only when there is something to say::

    metrics = metric_report(dataset, report)
    if metrics is not None:
        report["automatic_metrics"] = metrics

When no WordNet is installed METEOR is left out and ``note`` says how to install it; the other
metrics are still reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dialeval.jsonable import to_jsonable
from dialeval.records import Conversation, Dataset, Turn
from dialeval.stats import metrics as wm

__all__ = ["METRIC_NAMES", "metric_report", "references_by_system"]

METRIC_NAMES = ("bleu1", "bleu4", "rouge_l", "meteor", "gleu")


def _system_of(turn: Turn, conv: Conversation) -> str | None:
    if turn.bot:
        return turn.bot
    if turn.speaker == "bot" and len(set(conv.bots)) == 1:
        return conv.bots[0]
    return None


def references_by_system(dataset: Dataset) -> dict[str, tuple[list[str], list[str]]]:
    """{system: (responses, references)} over the bot turns that carry ``meta["reference"]``."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for conv in dataset.conversations:
        for turn in conv.turns:
            ref = turn.meta.get("reference") if turn.meta else None
            if turn.is_seed or not isinstance(ref, str) or not ref.strip():
                continue
            system = _system_of(turn, conv)
            if system is None:
                continue
            hyps, refs = out.setdefault(system, ([], []))
            hyps.append(turn.text or "")
            refs.append(ref)
    return out


def metric_report(
    dataset: Dataset, human_report: dict[str, Any], metrics: Sequence[str] = METRIC_NAMES
) -> dict[str, Any] | None:
    """Per-system metric scores and their correlation with the human system scores, or None
    without references. Returns ``{"systems": [{name, n_responses, human_score, <metric>...}],
    "correlations": [{metric, pearson, spearman, n}], "note": str | None}``; a correlation is
    None with fewer than 3 shared systems or constant scores."""
    pairs = references_by_system(dataset)
    if not pairs:
        return None
    human = {
        s["name"]: s["score"]
        for s in human_report.get("systems") or []
        if s.get("score") is not None and isinstance(s.get("score"), (int, float)) and math.isfinite(s["score"])
    }
    wanted = list(metrics)
    notes: list[str] = []
    if "meteor" in wanted:
        try:
            wm.wordnet_reader()
        except wm.WordNetUnavailable as exc:
            wanted.remove("meteor")
            notes.append(f"METEOR left out: {exc}")
    scores: dict[str, dict[str, float]] = {}
    for system in sorted(pairs):
        hyps, refs = pairs[system]
        scores[system] = wm.score_system(hyps, refs, metrics=wanted)
    correlations = wm.metric_correlations(human, scores)
    systems = [
        {
            "name": s,
            "n_responses": len(pairs[s][0]),
            "human_score": human.get(s),
            **{m: to_jsonable(float(v)) for m, v in scores[s].items()},
        }
        for s in sorted(scores, key=lambda s: (-(human[s] if s in human else -math.inf), s))
    ]
    missing = sorted(set(scores) - set(human))
    if missing:
        notes.append(f"no human score for {', '.join(missing)}: left out of the correlations")
    return {
        "systems": systems,
        "correlations": [
            {"metric": m, "pearson": to_jsonable(c["pearson"]), "spearman": to_jsonable(c["spearman"]), "n": c["n"]}
            for m, c in correlations.items()
        ],
        "note": "; ".join(notes) or None,
    }
