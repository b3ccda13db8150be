"""Agreement between two raters' categorical labels on shared items, with item-bootstrap intervals,
and the binomial and two-proportion tests of the judge audit.

Input: per item, the label pairs compared on it (judge vs each person, or each pair of people). The
statistics pool all pairs; intervals resample items (a cluster bootstrap: pairs on one item are not
independent). Cohen's kappa uses each side's own label shares; for two people (no natural first and
second rater) the pairs are counted in both orders, which makes it Scott's pi / Fleiss' kappa for
two raters.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .binomial import two_sided_p, wilson_interval


def _kappa(conf: np.ndarray) -> np.ndarray:
    """Cohen's kappa of confusion matrices (..., K, K); NaN where chance agreement is 1."""
    n = conf.sum(axis=(-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(conf, axis1=-2, axis2=-1) / n
        pe = (conf.sum(axis=-1) * conf.sum(axis=-2)).sum(axis=-1) / n**2
        return (po - pe) / (1 - pe)


def agreement(
    items: Sequence[Sequence[tuple[Hashable, Hashable]]],
    *,
    symmetric: bool = False,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Raw agreement and Cohen's kappa over all pairs, each with a percentile item-bootstrap interval.

    `items`: for each item, its (label of rater 1, label of rater 2) pairs. `symmetric`: the two
    sides are interchangeable (two people), so each pair is counted both ways for kappa.
    """
    items = [list(pairs) for pairs in items if pairs]
    out: dict[str, Any] = {"items": len(items), "pairs": sum(len(p) for p in items)}
    if not items:
        return {**out, "agreement": None, "agreement_ci": None, "kappa": None, "kappa_ci": None}
    categories = sorted({label for pairs in items for pair in pairs for label in pair}, key=repr)
    index = {c: k for k, c in enumerate(categories)}
    size = len(categories)
    conf = np.zeros((len(items), size, size))
    for i, pairs in enumerate(items):
        for a, b in pairs:
            conf[i, index[a], index[b]] += 1
            if symmetric:
                conf[i, index[b], index[a]] += 1
    total = conf.sum(axis=0)
    raw = float(np.trace(total) / total.sum())
    kappa = float(_kappa(total))
    out.update({"agreement": round(raw, 4), "kappa": None if np.isnan(kappa) else round(kappa, 4)})
    out["agreement_ci"], out["kappa_ci"] = None, None
    if n_boot > 0 and len(items) > 1:
        rng = np.random.default_rng(seed)
        flat = conf.reshape(len(items), -1)
        raws, kappas = [], []
        for start in range(0, n_boot, 100):  # chunks keep the weight matrix small on 30,000 items
            rounds = min(100, n_boot - start)
            weights = rng.multinomial(len(items), np.full(len(items), 1 / len(items)), size=rounds)
            sums = (weights @ flat).reshape(rounds, size, size)
            raws.append(np.trace(sums, axis1=1, axis2=2) / sums.sum(axis=(1, 2)))
            kappas.append(_kappa(sums))
        tail = (1 - level) / 2 * 100
        r = np.concatenate(raws)
        k = np.concatenate(kappas)
        out["agreement_ci"] = [round(float(x), 4) for x in np.percentile(r, [tail, 100 - tail])]
        k = k[~np.isnan(k)]
        if len(k):
            out["kappa_ci"] = [round(float(x), 4) for x in np.percentile(k, [tail, 100 - tail])]
    return out


def share_test(successes: int, n: int, p0: float = 0.5, level: float = 0.95) -> dict[str, Any]:
    """A share with its Wilson interval and the two-sided exact binomial test against p0."""
    if n == 0:
        return {"n": 0, "share": None, "ci": None, "p_value": None}
    low, high = wilson_interval(successes, n, level)
    return {
        "n": n,
        "k": successes,
        "share": round(successes / n, 4),
        "ci": [round(low, 4), round(high, 4)],
        "p_value": float(f"{two_sided_p(successes, n, p0):.4g}"),
    }


def two_shares_test(k1: int, n1: int, k2: int, n2: int) -> float | None:
    """Two-sided Fisher exact test that two shares k1/n1 and k2/n2 are equal (None without data)."""
    if n1 == 0 or n2 == 0:
        return None
    from scipy import stats  # only the judge audit compares two shares: scipy.stats' 1 s import is its own

    _, p = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]])
    return float(f"{p:.4g}")
