"""The per-voter outlier screen on a pairwise method's admin page (the statistic: stats.annotators)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..stats.annotators import screen_votes
from ..store import work

if TYPE_CHECKING:
    from .base import AdminSummary, Protocol


def voter_screen(
    protocol: Protocol[Any],
    summary: AdminSummary,
    outcome: Callable[[work.ScoredJudgment], tuple[str, str, str | None] | None],
) -> None:
    """Add the per-voter sequential outlier test to a pairwise method's admin summary: a headline
    with the flagged voters and, per annotator row id, their e-value (the admin table marks them).
    Flagged voters are only shown; nothing is deleted (the report's ``annotators.exclude_flagged``
    decides whether the leaderboard counts them). The statistic: stats.annotators.screen_votes."""
    cfg = protocol.config.annotators
    with protocol.store.session() as s:
        judgments = work.scheduling_judgments(s, protocol.study.study_id)
    a, b, score, voters = [], [], [], []
    for j in judgments:
        o = outcome(j)
        if o is None or j.annotator is None or o[0] == o[1]:
            continue
        a.append(o[0])
        b.append(o[1])
        score.append(0.5 if o[2] is None else float(o[2] == o[0]))
        voters.append(j.annotator)
    rows = sorted(set(voters))
    code = {r: k for k, r in enumerate(rows)}
    e, threshold, _ = screen_votes(
        np.array(a, dtype=str),
        np.array(b, dtype=str),
        score,
        [code[v] for v in voters],
        alpha=cfg.screening_alpha,
        per=cfg.screening_per,
    )
    summary.voters = {r: {"e_value": float(e[k]), "flagged": bool(e[k] >= threshold)} for r, k in code.items()}
    flagged = sum(1 for v in summary.voters.values() if v["flagged"])
    summary.headline.append(
        {
            "label": f"voters flagged by the sequential test (alpha {cfg.screening_alpha} per {cfg.screening_per})",
            "value": f"{flagged} of {len(rows)}",
        }
    )
