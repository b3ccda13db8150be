"""What `dialeval plan --pilot` reads from a single-model pilot report: the SM-Dialog Likert means
and SDs of its systems (a t-test per pair, docs/planning.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...planning import normal_expectation
from ...registry import PilotReading


def pilot(report: Mapping[str, Any], sd: float | None = None) -> PilotReading:
    systems = [s for s in report.get("systems", []) if (s.get("likert_mean") or {}).get("mean") is not None]
    sds = [s["likert_mean"]["sd"] for s in systems if s["likert_mean"].get("sd")]
    # the pooled SD of the pilot's systems (root mean square), unless the user gives one
    sd = sd or (math.sqrt(sum(x * x for x in sds) / len(sds)) if sds else 1.0)
    exp: dict[tuple[str, str], float] = {}
    for i, x in enumerate(systems):
        for y in systems[i + 1 :]:
            diff = x["likert_mean"]["mean"] - y["likert_mean"]["mean"]
            a, b = (x["name"], y["name"]) if diff >= 0 else (y["name"], x["name"])
            exp[(a, b)] = normal_expectation(diff, sd)
    return PilotReading(exp, sd, report.get("seconds_per_judgment"))
