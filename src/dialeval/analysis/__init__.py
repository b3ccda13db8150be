"""Analysis per method: a Dataset in, the report dict (the JSON contract of docs/reference/report-json.md) out.

Each method's analysis (dialeval.methods.<id>.analysis) converts judgments to DataFrames and calls the
pure statistics in stats/.
"""

from __future__ import annotations

from typing import Any

from ..errors import DialevalError
from ..records import Dataset


def analyze(dataset: Dataset, **options: Any) -> dict[str, Any]:
    """The method's full report dict for a data set (imported or collected)."""
    from .. import registry

    if dataset.method not in registry.ids():
        raise DialevalError(f"no analysis for method '{dataset.method}' (known methods: {', '.join(registry.ids())})")
    analyze_method = registry.get(dataset.method).load_analysis()
    # Judgments of unfinished work (expired, given to another annotator, returned) are kept in the
    # store and exports with their reason, and never counted here.
    from dataclasses import replace

    from ..records import JudgmentColumns

    reasons: dict[str, int] = {}
    if isinstance(dataset.judgments, JudgmentColumns):  # judgments as columns (a large study)
        marked = dataset.judgments.frame["excluded"]
        for reason in marked.dropna():
            reasons[reason] = reasons.get(reason, 0) + 1
        if reasons:
            kept: Any = dataset.judgments.where(marked.isna())  # a Sequence of judgments, as columns
            dataset = replace(dataset, judgments=kept)
    else:
        for j in dataset.judgments:
            if (j.meta or {}).get("excluded"):
                reasons[j.meta["excluded"]] = reasons.get(j.meta["excluded"], 0) + 1
        if reasons:
            dataset = replace(dataset, judgments=[j for j in dataset.judgments if not (j.meta or {}).get("excluded")])
    report = analyze_method(dataset, **options)
    report.setdefault("method", dataset.method)
    if reasons:
        report["excluded_judgments"] = {"n": sum(reasons.values()), "reasons": reasons}
    return report
