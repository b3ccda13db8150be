"""What `dialeval plan --pilot` reads from the report of a pairwise-preference method (ACUTE,
PW-Turn, Spot The Bot, arena, prompt sets): the shared `matchups` of docs/reference/report-json.md.
A method names it as its `PlanningModel.pilot`; planning.py itself reads no report key of a method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..registry import PilotReading

__all__ = ["pairwise_pilot"]


def pairwise_pilot(report: Mapping[str, Any], sd: float | None = None) -> PilotReading:
    """A pilot of a pairwise-preference method: the observed win rates of its `matchups` (or
    `pairs`), their draws, and `seconds_per_judgment` (docs/reference/report-json.md)."""
    exp: dict[tuple[str, str], float] = {}
    for m in report.get("matchups") or report.get("pairs") or []:
        r = m.get("win_rate_a", m.get("win_rate"))
        if r is None or not (0 < r < 1) or m.get("n", 1) == 0:
            continue
        a, b = (m["a"], m["b"]) if r >= 0.5 else (m["b"], m["a"])
        exp[(a, b)] = max(r, 1 - r) if abs(r - 0.5) > 1e-9 else 0.5 + 1e-6
    draws = [m.get("draws") for m in report.get("matchups") or [] if m.get("draws") is not None]
    totals = [m.get("total") for m in report.get("matchups") or [] if m.get("total")]
    share = min(0.95, float(sum(draws)) / float(sum(totals))) if draws and totals else None
    return PilotReading(exp, sd, report.get("seconds_per_judgment"), share)
