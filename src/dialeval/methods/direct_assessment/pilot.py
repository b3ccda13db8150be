"""What `dialeval plan --pilot` reads from a Direct Assessment pilot report: the overall z score of
each system (SD units, so the SD is 1 unless the user gives one) and the minutes per conversation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...planning import normal_expectation
from ...registry import PilotReading


def pilot(report: Mapping[str, Any], sd: float | None = None) -> PilotReading:
    systems = [s for s in report.get("systems", []) if s.get("overall") is not None]
    sd = sd or 1.0
    exp: dict[tuple[str, str], float] = {}
    for i, x in enumerate(systems):
        for y in systems[i + 1 :]:
            diff = x["overall"] - y["overall"]
            a, b = (x["name"], y["name"]) if diff >= 0 else (y["name"], x["name"])
            exp[(a, b)] = normal_expectation(diff, sd)
    seconds = report.get("seconds_per_judgment")
    if seconds is None:  # a Direct Assessment report gives minutes per rated conversation
        minutes = (report.get("minutes_per_conversation") or {}).get("all")
        seconds = None if minutes is None else 60.0 * minutes
    return PilotReading(exp, sd, seconds)
