"""The report figures of Chatbot Arena battles: report dict -> {name: matplotlib Figure} (report/build.py adds the
figures every method shares)."""

from __future__ import annotations

from typing import Any

from ...report import plots


def figures(report: dict[str, Any]) -> dict[str, Any]:
    rows = [
        {"a": a, "b": b, "win_rate_a": rate}
        for a, columns in (report.get("win_rates") or {}).items()
        for b, rate in columns.items()
        if rate is not None and a < b
    ]
    figs = {
        "leaderboard": plots.leaderboard(report.get("systems", []), value="score"),
        "win-rates": plots.winrate_heatmap(rows, title="Win rate of row over column (ties as half wins)"),
    }
    curve = report.get("turn_curve") or {}
    if any(len(turns) > 1 for turns in curve.values()):  # live battles voted per turn
        figs["per-turn"] = plots.lines(
            {m: [(int(t), c["win_rate"]) for t, c in turns.items()] for m, turns in curve.items()},
            title="Win rate per turn (ties as half wins)",
            xlabel="turn",
            ylabel="win rate",
            ylim=(0, 1),
            hline=0.5,
        )
    return figs
