"""The report figures of Spot The Bot: report dict -> {name: matplotlib Figure} (report/build.py adds the
figures every method shares)."""

from __future__ import annotations

from typing import Any

from ...report import plots


def figures(report: dict[str, Any]) -> dict[str, Any]:
    order: list[str] = [str(s.get("name")) for s in report.get("systems") or [] if isinstance(s, dict)]
    return {
        "win-rates": plots.winrate_heatmap(report.get("win_rates", []), rate="win_rate", order=order),
        "survival": plots.lines(
            {k: [tuple(p) for p in v] for k, v in (report.get("survival", {}).get("curves") or {}).items()},
            "Turnbull survival: share of bot speakers not yet spotted",
            "exchanges",
            "survival",
            step=True,
            ylim=(0, 1.02),
        ),
        "rank-ranges": plots.rank_ranges(report.get("systems", [])),
    }
