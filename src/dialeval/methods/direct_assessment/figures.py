"""The report figures of Direct Assessment: report dict -> {name: matplotlib Figure} (report/build.py adds the
figures every method shares)."""

from __future__ import annotations

from typing import Any

from ...report import plots


def figures(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "z-scores": plots.grouped_bars(
            {s["name"]: s.get("z", {}) for s in report.get("systems", [])},
            "Standardised (z) scores per criterion, passing annotators",
            "mean z",
        )
    }
