"""Compare two analysis reports of the same systems: the self-replication check of Ji et al. (2022)
(Pearson r between two runs' system scores: 0.969 overall for Free run 1 vs 2).

Works on any report whose `systems` entries carry a `name` and a `score`; per-criterion
correlations are added when both reports' entries carry a `z` dict (direct assessment).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dialeval.stats.direct_assessment import correlate


def _by_name(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    systems = report.get("systems")
    if systems is None:
        raise ValueError("a report to compare needs a 'systems' list of {name, score, ...}")
    if not isinstance(systems, list):
        raise TypeError(f"a report's 'systems' must be a list, not {type(systems).__name__}")
    return {s["name"]: s for s in systems if isinstance(s, Mapping) and "name" in s}


def compare_runs(report_a: Mapping[str, Any], report_b: Mapping[str, Any]) -> dict[str, Any]:
    """Correlate the overall scores of the systems both reports have.

    Returns {pearson, spearman, n, systems: [{name, a, b}], criteria: {criterion: {pearson, spearman, n}}}
    with systems in report_a's order; r is None with fewer than 3 shared systems or constant scores.
    Systems present in only one report are listed under `only_a` / `only_b`.
    """
    a, b = _by_name(report_a), _by_name(report_b)
    shared = [n for n in a if n in b and a[n].get("score") is not None and b[n].get("score") is not None]
    xs = [float(a[n]["score"]) for n in shared]
    ys = [float(b[n]["score"]) for n in shared]
    overall = correlate(xs, ys)
    out: dict[str, Any] = {
        "pearson": overall["pearson"],
        "spearman": overall["spearman"],
        "n": len(shared),
        "systems": [{"name": n, "a": x, "b": y} for n, x, y in zip(shared, xs, ys)],
        "only_a": [n for n in a if n not in b],
        "only_b": [n for n in b if n not in a],
    }
    criteria: dict[str, Any] = {}
    za: list[Any] = [a[n].get("z") for n in shared]  # checked to be mappings just below
    zb: list[Any] = [b[n].get("z") for n in shared]
    if shared and all(isinstance(z, Mapping) for z in za + zb):
        names = [c for c in za[0] if c != "overall" and all(c in z for z in za + zb)]
        for c in names:
            pairs = [(x[c], y[c]) for x, y in zip(za, zb) if x[c] is not None and y[c] is not None]
            criteria[c] = correlate([p[0] for p in pairs], [p[1] for p in pairs])
    if criteria:
        out["criteria"] = criteria
    return out
