"""The report figures of ACUTE-Eval: report dict -> {name: matplotlib Figure} (report/build.py adds the
figures every method shares)."""

from __future__ import annotations

from typing import Any

from ...report import plots


def figures(report: dict[str, Any]) -> dict[str, Any]:
    order: list[str] = [str(s.get("name")) for s in report.get("systems") or [] if isinstance(s, dict)]
    return {
        "win-rates": plots.winrate_heatmap(report.get("matchups", []), order=order),
        "leaderboard": plots.leaderboard(report.get("leaderboard", [])),
    }
