"""The exact two-sided binomial test and the Wilson interval of a share, without scipy.stats.

Every report with pairwise votes tests a share against 1/2 (the people section's longer-answer
share, the pairwise grid); importing scipy.stats for it cost a small report about 1 s. Here:

- `two_sided_p(k, n, p0)`: at p0 = 1/2 the binomial distribution is symmetric, so the outcomes no
  likelier than k are those at most m = min(k, n - k) away from either end, and
  p = P(X <= m) + P(X >= n - m) (1 when k = n/2). Both tails come from the Boost binomial CDF and
  survival function in scipy.special, the functions scipy.stats.binom itself evaluates, so p is
  scipy.stats.binomtest's value to the bit (tests/stats/test_binomial.py compares them on every
  k <= n <= 60 and on large n; a one-off run matched every k <= n <= 300). Any other p0, or a scipy
  without those functions, goes to binomtest.
- `binom_cdf`, `binom_sf`, `binom_ppf`: scipy.stats.binom's cdf, sf and ppf (vectorised) from the same
  Boost functions, with rv_discrete's handling of the support's ends and of invalid arguments, for
  the power of a pairwise study that every pairwise report sizes (tests/stats/test_binomial.py).
- `wilson_interval(k, n, level)`: the Wilson score interval (Wilson 1927, JASA; formula as in
  Newcombe 1998, Statistics in Medicine, method 3), equal to binomtest's proportion_ci("wilson").

Imports nothing from dialeval.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special as sc

# The binomial distribution's Boost CDF/SF ufuncs that scipy.stats.binom calls (scipy >= 1.10). They
# are not public; without them every test goes through scipy.stats.binomtest (same values, slower start).
_CDF = getattr(sc, "_ufuncs", None) and getattr(sc._ufuncs, "_binom_cdf", None)
_SF = getattr(sc, "_ufuncs", None) and getattr(sc._ufuncs, "_binom_sf", None)
_PPF = getattr(sc, "_ufuncs", None) and getattr(sc._ufuncs, "_binom_ppf", None)


def _valid(n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """binom's _argcheck: an integral n >= 0 and 0 <= p <= 1."""
    return (n >= 0) & (n == np.round(n)) & (p >= 0) & (p <= 1)


def _result(out: np.ndarray) -> Any:
    return out[()] if out.ndim == 0 else out


def _tail(function: Any, k: Any, n: Any, p: Any, *, lower: bool) -> Any:
    """rv_discrete's cdf (`lower`) or sf steps around binom's Boost function: NaN for invalid
    arguments, 1 past the support's far end (k >= n for the cdf, k < 0 for the sf), 0 before its
    near end, the function of floor(k) inside."""
    k, n, p = np.broadcast_arrays(np.asarray(k), np.asarray(n), np.asarray(p))
    valid = _valid(n, p)
    out = np.zeros(k.shape, "d")
    out[(k >= n) if lower else (k < 0)] = 1.0
    out[~valid | np.isnan(k)] = np.nan
    inside = valid & (k >= 0) & (k < n) & np.isfinite(k)
    if inside.any():
        out[inside] = np.clip(function(np.floor(k[inside]), n[inside], p[inside]), 0, 1)
    return _result(out)


def binom_cdf(k: Any, n: Any, p: Any) -> Any:
    """scipy.stats.binom.cdf(k, n, p), the same values (rv_discrete.cdf's steps, binom._cdf's function)."""
    if _CDF is None:
        from scipy import stats

        return stats.binom.cdf(k, n, p)
    return _tail(_CDF, k, n, p, lower=True)


def binom_sf(k: Any, n: Any, p: Any) -> Any:
    """scipy.stats.binom.sf(k, n, p), the same values (rv_discrete.sf's steps, binom._sf's function)."""
    if _SF is None:
        from scipy import stats

        return stats.binom.sf(k, n, p)
    return _tail(_SF, k, n, p, lower=False)


def binom_ppf(q: Any, n: Any, p: Any) -> Any:
    """scipy.stats.binom.ppf(q, n, p), the same values (rv_discrete.ppf's steps, binom._ppf's function)."""
    if _PPF is None:
        from scipy import stats

        return stats.binom.ppf(q, n, p)
    q, n, p = np.broadcast_arrays(np.asarray(q), np.asarray(n), np.asarray(p))
    valid = _valid(n, p)
    out = np.full(q.shape, np.nan, "d")
    out[(q == 0) & valid] = -1.0  # the support's start (0) minus 1
    at_one = (q == 1) & valid
    out[at_one] = n[at_one]
    inside = valid & (q > 0) & (q < 1)
    if inside.any():
        out[inside] = _PPF(q[inside], n[inside], p[inside]) + 0  # + loc, as rv_discrete (-0.0 becomes 0.0)
    return _result(out)


def two_sided_p(k: int, n: int, p0: float = 0.5) -> float:
    """The two-sided exact binomial test's p-value of k successes in n trials against p0 (n >= 1)."""
    if p0 != 0.5 or _CDF is None or _SF is None or not 0 <= k <= n or n < 1:
        from scipy.stats import binomtest  # the general case (1 s to import): asked for rarely

        return float(binomtest(k, n, p0).pvalue)
    if 2 * k == n:
        return 1.0
    m = min(k, n - k)
    low = min(max(float(_CDF(float(m), float(n), 0.5)), 0.0), 1.0)  # P(X <= m)
    high = min(max(float(_SF(float(n - m - 1), float(n), 0.5)), 0.0), 1.0)  # P(X > n - m - 1)
    return min(1.0, low + high)


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided Wilson score interval of the share k/n at confidence `level` (n >= 1)."""
    z = sc.ndtri(0.5 + 0.5 * level)  # the normal quantile (scipy.stats.norm.ppf's own function)
    p = k / n
    q = 1 - p
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    half = z / denom * math.sqrt(4 * n * p * q + z**2)
    return (0.0 if k == 0 else float(center - half)), (1.0 if k == n else float(center + half))
