"""The report answer's pairs of systems for SM-Turn + SM-Dialog (report/answer.py writes the sentences)."""

from __future__ import annotations

from typing import Any

from ...report.answer import needed_total, pair, tts_lookup


def pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for t in report.get("ttests") or []:
        if t.get("metric") != "likert_mean":
            continue
        ma, mb = t.get("mean_a"), t.get("mean_b")
        if ma is None or mb is None:
            continue
        a, b, xa, xb = (t["a"], t["b"], ma, mb) if ma >= mb else (t["b"], t["a"], mb, ma)
        n = int((t.get("n_a") or 0) + (t.get("n_b") or 0))
        needed = needed_total(tts_lookup(report, t["a"], t["b"], "sm_dialog"), per_group=True)
        out.append(
            pair(
                a,
                b,
                f"mean SM-Dialog rating {xa:.2f} vs {xb:.2f}",
                t.get("p"),
                n,
                needed,
                unit="conversations",
                no_difference=xa == xb,
            )
        )
    return out
