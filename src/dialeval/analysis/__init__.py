"""Analysis per method: a Dataset in, the report dict (the JSON contract of README.md) out.

Each method's analysis (dialeval.methods.<id>.analysis) converts judgments to DataFrames and calls the
pure statistics in stats/.
"""

from __future__ import annotations

from typing import Any

from ..errors import DialevalError
from ..records import Dataset


def analyze(dataset: Dataset, **options: Any) -> dict[str, Any]:
    """The method's full report dict for a data set (imported or collected)."""
    from .. import methods

    if dataset.method not in methods.ids():
        raise DialevalError(f"no analysis for method '{dataset.method}' (known methods: {', '.join(methods.ids())})")
    analyze_method = methods.load_part(methods.get(dataset.method).analysis)
    # Judgments of unfinished work (expired, given to another annotator, returned) are kept in the
    # store and exports with their reason, and never counted here.
    excluded = [j for j in dataset.judgments if (j.meta or {}).get("excluded")]
    if excluded:
        from dataclasses import replace

        dataset = replace(dataset, judgments=[j for j in dataset.judgments if not (j.meta or {}).get("excluded")])
    report = analyze_method(dataset, **options)
    report.setdefault("method", dataset.method)
    if excluded:
        reasons: dict[str, int] = {}
        for j in excluded:
            reasons[j.meta["excluded"]] = reasons.get(j.meta["excluded"], 0) + 1
        report["excluded_judgments"] = {"n": len(excluded), "reasons": reasons}
    return report
