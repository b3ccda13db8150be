"""The report answer's pairs of systems for Direct Assessment (report/answer.py writes the sentences)."""

from __future__ import annotations

from typing import Any

from ...report.answer import needed_total, pair, tts_lookup


def pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """direct-assessment: `pairwise` holds a one-sided test for every ordered pair (a's z > b's); the
    answer uses the test in the direction of the observed difference."""
    z = {s["name"]: s.get("score") for s in report.get("systems") or []}
    n = {s["name"]: int(s.get("n") or 0) for s in report.get("systems") or []}
    out = []
    for row in report.get("pairwise") or []:
        a, b = row.get("a"), row.get("b")
        if z.get(a) is None or z.get(b) is None or z[a] < z[b] or (z[a] == z[b] and a > b):
            continue
        needed = needed_total(tts_lookup(report, a, b), per_group=True)
        out.append(
            pair(
                a,
                b,
                f"overall z {z[a]:.2f} vs {z[b]:.2f}",
                row.get("p"),
                n[a] + n[b],
                needed,
                unit="rated conversations",
                no_difference=z[a] == z[b],
            )
        )
    return out
