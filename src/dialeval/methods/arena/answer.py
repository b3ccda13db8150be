"""The report answer's pairs for the arena leaderboard (report/answer.py writes the sentences).

The leaderboard ranks by intervals, not by tests of pairs: a model's rank is 1 + the number of
models whose interval lies wholly above its own (analysis.py). The answer says the same: a pair is
decided when one model's interval lies wholly above the other's, undecided when they overlap, so it
never contradicts the table it summarises.
"""

from __future__ import annotations

from typing import Any

from ...report.answer import pair


def pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    systems = [s for s in report.get("systems") or [] if s.get("ci_low") is not None and s.get("ci_high") is not None]
    level = (report.get("intervals") or {}).get("level", 0.95)
    counts = report.get("battle_counts") or {}
    out = []
    for i, a in enumerate(systems):  # best first: the winner of each pair is the higher rating
        for b in systems[i + 1 :]:
            apart = a["ci_low"] > b["ci_high"]
            effect = f"{_rating(a)} vs {_rating(b)}, {level:.0%} intervals " + ("apart" if apart else "overlapping")
            row = pair(a["name"], b["name"], effect, None, _battles(counts, a["name"], b["name"]), None, unit="battles")
            row.update(decided=apart, decided_by="interval", no_difference=a["score"] == b["score"])
            out.append(row)
    return out


def _rating(system: dict[str, Any]) -> str:
    return f"{system['score']:,.1f} ({system['ci_low']:,.1f}–{system['ci_high']:,.1f})"


def _battles(counts: dict[str, Any], a: str, b: str) -> int:
    """Battles of the pair in the report's battle_counts matrix ({row: {column: n}})."""
    inner = counts.get(a)
    value = inner.get(b) if isinstance(inner, dict) else None
    return int(value or 0)
