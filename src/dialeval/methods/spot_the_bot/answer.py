"""The report answer's pairs of systems for Spot The Bot (report/answer.py writes the sentences)."""

from __future__ import annotations

from typing import Any

from ...report.answer import binomial_n_needed, needed_total, pair, pct, tts_lookup


def pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for w in report.get("win_rates") or []:
        rate = w.get("win_rate")
        n = int((w.get("wins") or 0) + (w.get("losses") or 0))
        if rate is None or not n:
            continue
        a, b = (w["a"], w["b"]) if rate >= 0.5 else (w["b"], w["a"])
        if any(p["winner"] == b and p["loser"] == a or p["winner"] == a and p["loser"] == b for p in out):
            continue  # the grid lists each pair both ways
        share = rate if rate >= 0.5 else 1 - rate
        needed = needed_total(tts_lookup(report, w["a"], w["b"])) or binomial_n_needed(share)
        out.append(
            pair(
                a,
                b,
                f"{pct(share)} of decided comparisons",
                w.get("p"),
                n,
                needed,
                unit="comparisons",
                no_difference=abs(share - 0.5) < 1e-9,
            )
        )
    return out
