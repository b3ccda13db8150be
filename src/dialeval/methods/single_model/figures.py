"""The report figures of SM-Turn + SM-Dialog: report dict -> {name: matplotlib Figure} (report/build.py adds the
figures every method shares)."""

from __future__ import annotations

from typing import Any

from ...report import plots


def figures(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "success-rates": plots.grouped_bars(
            {s["name"]: s.get("success_rate", {}) for s in report.get("systems", [])},
            "SM-Turn success rate (all turns)",
            "share of replies marked",
        ),
        "likert": plots.grouped_bars(
            {
                s["name"]: {q: v.get("mean") for q, v in (s.get("likert") or {}).items()}
                for s in report.get("systems", [])
            },
            "SM-Dialog Likert means (1–5)",
            "mean rating",
        ),
    }
