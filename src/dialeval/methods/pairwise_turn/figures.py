"""The report figures of PW-Turn: report dict -> {name: matplotlib Figure} (report/build.py adds the
figures every method shares)."""

from __future__ import annotations

from typing import Any

from ...report import plots
from ..acute.figures import figures as acute_figures


def figures(report: dict[str, Any]) -> dict[str, Any]:
    figs = acute_figures(report)  # the same win-rate matrix and leaderboard as ACUTE-Eval
    curves: dict[str, list[tuple[float, float]]] = {}
    for m in report.get("matchups", []):
        # stats.pairwise.per_turn_win_rates gives every point a turn; a turn without a rate is left out
        pts = [
            (float(t["turn"]), float(t["win_rate_a"]))
            for t in m.get("per_turn", []) or []
            if isinstance(t, dict) and t.get("win_rate_a") is not None
        ]
        if pts:
            curves[f"{m['a']} over {m['b']}"] = pts
    figs["per-turn"] = plots.lines(curves, "Win rate per bot turn", "bot turn", "win rate", ylim=(0, 1), hline=0.5)
    return figs
