"""Judgments and annotator time needed for a significant result (Smith et al. 2022, §4.4.3, Appendix F).

Pairwise methods use the two-sided binomial test against 50%, single-model methods the two-sided
independent t-test, both at alpha = 0.05. For a grid of study sizes n the probability that the
test comes out significant (its power) is computed

- in closed form: exactly for the binomial test (sum of the true Binomial(n, w) over the test's
  rejection region), by the noncentral t distribution for the t-test; and
- by simulation: resampling the collected data with replacement. Resampling n binary votes is
  drawn as a multinomial over (win, loss, tie) counts, and resampling n ratings as a multinomial
  over the distinct observed values, which are the same distributions at a fraction of the cost.

Direct Assessment's one-sided Mann-Whitney U test (Ji et al. 2022) is handled the same way: a normal
approximation (Noether) for the closed form and resampling of the per-conversation scores
(:func:`mann_whitney_time_to_significance`).

The n needed is exact (:func:`smallest_n`): every n is tried, not read off a grid. The power of
the discrete binomial test is not monotone in n (a slightly larger n can dip below the target
again), so two numbers are given: the smallest n whose power reaches the target (``n_needed``)
and the smallest n from which it stays there (``n_needed_stable``); for the t-test and the normal
approximations, whose power grows with n, they are equal. The resampled ``n_needed_sim`` is read
off the curve's sizes (every n to 60, then geometric steps of about 7 %, plus the exact n's).

Time = n × seconds per judgment + onboarding seconds × annotators needed, where annotators needed
= ceil(n / judgments per annotator); onboarding is included as Smith et al. (2022) do. This module imports
nothing from dialeval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

# scipy.stats.binom's cdf, sf and ppf without importing scipy.stats (~0.7 s of every pairwise report,
# which sizes the study with binomial_power); the same values (stats/binomial.py)
from .binomial import binom_cdf, binom_ppf, binom_sf


class _ScipyStats:
    """scipy.stats, imported on first use: a report that sizes nothing does not pay its import."""

    def __getattr__(self, name: str):
        import scipy.stats

        return getattr(scipy.stats, name)


sps = _ScipyStats()

__all__ = [
    "annotator_hours",
    "binomial_power",
    "binomial_rejection_bound",
    "cohens_d",
    "common_language_effect",
    "mann_whitney_power",
    "mann_whitney_pairs_time_to_significance",
    "mann_whitney_time_to_significance",
    "n_grid",
    "pairwise_time_to_significance",
    "simulate_binomial_power",
    "simulate_mann_whitney_power",
    "simulate_mann_whitney_power_pairs",
    "simulate_ttest_power",
    "single_model_time_to_significance",
    "smallest_n",
    "ttest_power",
]


def n_grid(n_max: int = 100_000, n_min: int = 2, points: int = 120) -> np.ndarray:
    """Study sizes: every n up to 60, then geometric steps to n_max."""
    small = np.arange(n_min, min(60, n_max) + 1)
    if n_max <= 60:
        return small
    big = np.unique(np.round(np.geomspace(61, n_max, points)).astype(int))
    return np.concatenate([small, big])


def _rejection_bounds(ns: np.ndarray, alpha: float) -> np.ndarray:
    q = alpha / 2.0
    c = np.where(ns > 0, binom_ppf(q, np.maximum(ns, 1), 0.5) - 1, -1)
    # ppf can be off by one in floating point; enforce cdf(c) < q <= cdf(c + 1)
    c = np.where((c >= 0) & (binom_cdf(c, np.maximum(ns, 1), 0.5) >= q), c - 1, c)
    c = np.where((c + 1 <= ns / 2) & (binom_cdf(c + 1, np.maximum(ns, 1), 0.5) < q), c + 1, c)
    return np.where(ns > 0, c, -1).astype(int)


_UNKNOWN = -2
_bound_tables: dict[float, np.ndarray] = {}  # alpha -> bound per n (_UNKNOWN where not computed yet)


def _lookup_bounds(ns: np.ndarray, alpha: float) -> np.ndarray:
    """Bounds for integer n >= 0 from a per-alpha table filled on demand: only the n values ever
    asked for are computed (the power simulations ask for the same few thousand n again and again)."""
    table = _bound_tables.get(alpha)
    top = int(ns.max())
    if table is None or top >= table.size:
        size = 1 << max(top + 1, 1024).bit_length()
        grown = np.full(size, _UNKNOWN, dtype=np.int64)
        if table is not None:
            grown[: table.size] = table
        _bound_tables[alpha] = table = grown
    missing = np.unique(ns[table[ns] == _UNKNOWN])
    if missing.size:
        table[missing] = _rejection_bounds(missing.astype(float), alpha)
    return table[ns]


def binomial_rejection_bound(n, alpha: float = 0.05):
    """Largest k with two-sided binomial-test p(k of n, 0.5) < alpha (-1 when none): the test
    rejects when wins <= c or wins >= n - c. Vectorised over n; cached per n and alpha."""
    ns = np.asarray(n)
    if ns.size == 0:
        return np.zeros(ns.shape, dtype=int)
    if not np.issubdtype(ns.dtype, np.integer):
        if not np.all(ns == np.floor(ns)):  # fractional n: no table
            c = _rejection_bounds(ns.astype(float), alpha)
            return int(c) if c.ndim == 0 else c
        ns = ns.astype(np.int64)
    if int(ns.max()) > 50_000_000:  # beyond any study: compute directly rather than keep a huge table
        c = _rejection_bounds(ns.astype(float), alpha)
    else:
        c = np.where(ns > 0, _lookup_bounds(np.maximum(ns, 0), float(alpha)), -1).astype(int)
    return int(c) if c.ndim == 0 else c


# Rejection bounds c(n) for n = 0..len-1 per alpha: they do not depend on the win rate, and the
# exact search below evaluates the power at every n, where binom.ppf is the slow part.
_BOUNDS: dict[float, np.ndarray] = {}
_BOUNDS_CAP = 1_000_000


def _bounds_for(ns: np.ndarray, alpha: float) -> np.ndarray:
    top = int(ns.max()) if ns.size else 0
    table = _BOUNDS.get(alpha)
    dense = ns.size >= 64 and 8 * ns.size >= top  # a scan of every n, not a sparse grid
    if (not dense and (table is None or table.size <= top)) or top > _BOUNDS_CAP or int(ns.min(initial=0)) < 0:
        return np.atleast_1d(binomial_rejection_bound(ns, alpha))
    if table is None or table.size <= top:
        size = min(_BOUNDS_CAP + 1, max(top + 1, 2 * (0 if table is None else table.size), 4096))
        table = np.atleast_1d(binomial_rejection_bound(np.arange(size), alpha))
        _BOUNDS[alpha] = table
    return table[ns]


def binomial_power(win_rate: float, n: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    """Exact probability that a two-sided binomial test of n votes is significant when the true
    win rate is `win_rate`."""
    ns = np.atleast_1d(np.asarray(n, dtype=int))
    c = _bounds_for(ns, alpha)
    pw = binom_cdf(c, ns, win_rate) + binom_sf(ns - c - 1, ns, win_rate)
    return np.where(c >= 0, pw, 0.0)


def ttest_power(effect_size: float, n_per_group: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    """Power of the two-sided pooled two-sample t-test with n per group and Cohen's d `effect_size`."""
    ns = np.atleast_1d(np.asarray(n_per_group, dtype=float))
    df = 2 * ns - 2
    nc = abs(effect_size) * np.sqrt(ns / 2.0)
    with np.errstate(invalid="ignore"):
        crit = sps.t.ppf(1 - alpha / 2, df)
        pw = sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc)
    # scipy's noncentral t returns NaN for some large noncentralities (d = 0.5, n = 538 per group),
    # where the power is ~1: there the normal approximation is exact to many decimals
    approx = sps.norm.sf(crit - nc) + sps.norm.cdf(-crit - nc)
    pw = np.where(np.isnan(pw), approx, pw)
    return np.where(ns >= 2, pw, 0.0)


def cohens_d(x: ArrayLike, y: ArrayLike) -> float:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    pooled = ((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2)
    if pooled <= 0:
        return 0.0 if a.mean() == b.mean() else math.copysign(math.inf, a.mean() - b.mean())
    return float((a.mean() - b.mean()) / math.sqrt(pooled))


def simulate_binomial_power(
    outcomes: ArrayLike, n: ArrayLike, n_sim: int = 1000, alpha: float = 0.05, seed: int | None = 0
) -> np.ndarray:
    """Share of resampled studies of n votes that reach p < alpha. `outcomes` are 1 (win), 0
    (loss) or 0.5 (tie; dropped from the test, as in the analysis)."""
    o = np.asarray(outcomes, dtype=float)
    probs = np.array([(o == 1).mean(), (o == 0).mean(), (o == 0.5).mean()])
    probs = probs / probs.sum()
    rng = np.random.default_rng(seed)
    ns = np.atleast_1d(np.asarray(n, dtype=int))
    out = np.empty(len(ns))
    for i, m in enumerate(ns):
        draws = rng.multinomial(int(m), probs, size=n_sim)
        w, l_ = draws[:, 0], draws[:, 1]
        tot = w + l_
        c = binomial_rejection_bound(tot, alpha)
        sig = (c >= 0) & ((w <= c) | (w >= tot - c))
        out[i] = sig.mean()
    return out


def _resampled_moments(
    values: np.ndarray, n: int, n_sim: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    uniq, counts = np.unique(values, return_counts=True)
    draws = rng.multinomial(n, counts / counts.sum(), size=n_sim).astype(float)
    mean = draws @ uniq / n
    var = (draws @ (uniq**2) - n * mean**2) / max(n - 1, 1)
    return mean, np.maximum(var, 0.0)


def simulate_ttest_power(
    x: ArrayLike,
    y: ArrayLike,
    n_per_group: ArrayLike,
    n_sim: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> np.ndarray:
    """Share of resampled studies (n ratings per bot drawn from each bot's collected ratings)
    where the two-sided pooled t-test reaches p < alpha."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rng = np.random.default_rng(seed)
    ns = np.atleast_1d(np.asarray(n_per_group, dtype=int))
    out = np.empty(len(ns))
    for i, m in enumerate(ns):
        if m < 2:
            out[i] = 0.0
            continue
        ma, va = _resampled_moments(a, int(m), n_sim, rng)
        mb, vb = _resampled_moments(b, int(m), n_sim, rng)
        sp = np.sqrt((va + vb) / 2.0 * (2.0 / m))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (ma - mb) / sp
        t = np.where(sp > 0, t, np.where(ma != mb, np.inf, 0.0))
        p = 2 * sps.t.sf(np.abs(t), 2 * m - 2)
        out[i] = float((p < alpha).mean())
    return out


def annotator_hours(
    n_judgments, seconds_per_judgment: float, onboarding_seconds: float = 0.0, judgments_per_annotator: float = 1.0
):
    """Annotator-hours for n judgments, onboarding of every annotator included."""
    n = np.asarray(n_judgments, dtype=float)
    annotators = np.ceil(n / max(judgments_per_annotator, 1e-12))
    return (n * seconds_per_judgment + annotators * onboarding_seconds) / 3600.0


def _first(ns: np.ndarray, power: np.ndarray, target: float) -> int | None:
    ok = np.flatnonzero(power >= target)
    return int(ns[ok[0]]) if ok.size else None


def smallest_n(
    power_at: Callable[[np.ndarray], np.ndarray], target: float, n_max: int, n_min: int = 1
) -> tuple[int | None, int | None]:
    """``(first, stable)``: the smallest n in [n_min, n_max] with ``power_at(n) >= target``, and the
    smallest n from which the power stays >= target (None when not reached by n_max).

    Every n is evaluated (``power_at`` takes an array of n), in blocks that double in length. The
    scan stops at n_max, or once the power has stayed at or above the target from the last n below
    it up to at least twice that n (and twice ``first``): the dips of the discrete binomial test
    come from its rejection region moving by one vote and shrink as n grows, so they end close
    after the first crossing (win rate 0.55, power 0.8: first 786, stable from 820).
    """
    n_min, n_max = max(int(n_min), 0), int(n_max)
    first: int | None = None
    last_below = n_min - 1
    lo, size = n_min, 256
    while lo <= n_max:
        hi = min(n_max, lo + size - 1)
        ns = np.arange(lo, hi + 1)
        ok = np.asarray(power_at(ns), dtype=float) >= target
        if first is None and ok.any():
            first = int(ns[int(np.argmax(ok))])
        if not ok.all():
            last_below = int(ns[np.flatnonzero(~ok)[-1]])
        if first is not None and hi >= 2 * max(last_below, first) and ok.all():
            break
        lo, size = hi + 1, size * 2
    if first is None or last_below >= n_max:
        return first, None
    return first, last_below + 1


def _with_sizes(ns: np.ndarray, *extra: int | None) -> np.ndarray:
    """The grid plus the exact sizes, so the curve shows the crossing."""
    more = [int(x) for x in extra if x is not None]
    return np.unique(np.concatenate([ns, np.asarray(more, dtype=int)])) if more else ns


def pairwise_time_to_significance(
    win_rate: float | None = None,
    outcomes: ArrayLike | None = None,
    seconds_per_judgment: float = 60.0,
    onboarding_seconds: float = 0.0,
    judgments_per_annotator: float = 1.0,
    power: float = 0.8,
    alpha: float = 0.05,
    n_max: int = 100_000,
    n_sim: int = 1000,
    seed: int | None = 0,
) -> dict:
    """Votes and annotator-hours until the two-sided binomial test is significant with probability
    `power`. Give the observed `win_rate` (closed form only) and/or the collected `outcomes`
    (1/0/0.5 per vote; adds the resampling curve and sets the win rate). Ties are dropped from the
    test, so with ties the closed form uses the decisive win rate and counts all votes' time.

    Returns {test, win_rate, n_needed, n_needed_stable, n_needed_sim, hours_needed,
    hours_needed_sim, curve} where curve is a DataFrame[n, power, power_sim, hours]; n_needed is
    the exact smallest n with closed-form power >= `power`, n_needed_stable the smallest n from
    which it stays there (:func:`smallest_n`; None if not reached by n_max); n_needed_sim is the
    first curve size whose resampled power reaches `power`.
    """
    tie_share = 0.0
    if outcomes is not None:
        o = np.asarray(outcomes, dtype=float)
        dec = o[o != 0.5]
        tie_share = float((o == 0.5).mean()) if o.size else 0.0
        win_rate = float(dec.mean()) if dec.size else 0.5
    if win_rate is None:
        raise ValueError("give win_rate or outcomes")

    def closed_power(n: np.ndarray) -> np.ndarray:
        decisive = np.maximum(np.round(np.asarray(n) * (1 - tie_share)).astype(int), 0)
        return binomial_power(float(win_rate), decisive, alpha)

    grid = n_grid(n_max)
    closed = closed_power(grid)
    # every n is tried unless the target is far out of reach on the whole grid (win rate ~0.5):
    # the power's dips between grid steps are far smaller than this margin
    if closed.max() < power - 0.1:
        n_need, n_stable = None, None
    else:
        n_need, n_stable = smallest_n(closed_power, power, n_max)
    ns = _with_sizes(grid, n_need, n_stable)
    closed = closed_power(ns)
    curve = pd.DataFrame({"n": ns, "power": closed})
    if outcomes is not None and n_sim > 0:
        upto = ns <= (min(n_max, 4 * n_need) if n_need else n_max)
        sim = np.full(ns.size, np.nan)
        sim[upto] = simulate_binomial_power(outcomes, ns[upto], n_sim, alpha, seed)
        curve["power_sim"] = sim
    else:
        curve["power_sim"] = np.nan
    curve["hours"] = annotator_hours(ns, seconds_per_judgment, onboarding_seconds, judgments_per_annotator)
    n_sim_need = _first(ns, curve["power_sim"].fillna(-1).to_numpy(), power)
    hours = lambda n: (
        None
        if n is None
        else float(annotator_hours(n, seconds_per_judgment, onboarding_seconds, judgments_per_annotator))
    )
    return {
        "test": "binomial",
        "alpha": alpha,
        "target_power": power,
        "win_rate": float(win_rate),
        "seconds_per_judgment": float(seconds_per_judgment),
        "onboarding_seconds": float(onboarding_seconds),
        "judgments_per_annotator": float(judgments_per_annotator),
        "n_needed": n_need,
        "n_needed_stable": n_stable,
        "n_needed_sim": n_sim_need,
        "hours_needed": hours(n_need),
        "hours_needed_sim": hours(n_sim_need),
        "curve": curve,
    }


def single_model_time_to_significance(
    x: ArrayLike | None = None,
    y: ArrayLike | None = None,
    effect_size: float | None = None,
    seconds_per_judgment: float = 300.0,
    onboarding_seconds: float = 0.0,
    judgments_per_annotator: float = 1.0,
    power: float = 0.8,
    alpha: float = 0.05,
    n_max: int = 20_000,
    n_sim: int = 1000,
    seed: int | None = 0,
) -> dict:
    """Conversations per bot and annotator-hours until the two-sided t-test between two bots is
    significant with probability `power`. Give the collected per-conversation scores `x`, `y`
    (closed form with their Cohen's d + resampling curve) or only `effect_size`.
    A study of n per bot costs 2n judgments (one per conversation).

    Returns {test, effect_size, n_needed, n_needed_stable, n_needed_sim, hours_needed,
    hours_needed_sim, curve} with curve DataFrame[n, power, power_sim, hours] where n is per bot;
    n_needed is exact (:func:`smallest_n`; the t-test's power grows with n, so n_needed_stable is
    the same n).
    """
    if x is not None and y is not None:
        effect_size = cohens_d(x, y)
    if effect_size is None:
        raise ValueError("give x and y or effect_size")

    def closed_power(n: np.ndarray) -> np.ndarray:
        if not np.isfinite(effect_size):
            return np.where(np.asarray(n) >= 2, 1.0, 0.0)
        return ttest_power(effect_size, n, alpha)

    n_need, n_stable = smallest_n(closed_power, power, n_max, n_min=2)
    ns = _with_sizes(n_grid(n_max), n_need, n_stable)
    curve = pd.DataFrame({"n": ns, "power": closed_power(ns)})
    if x is not None and y is not None and n_sim > 0:
        upto = ns <= (min(n_max, 4 * n_need) if n_need else n_max)
        sim = np.full(ns.size, np.nan)
        sim[upto] = simulate_ttest_power(x, y, ns[upto], n_sim, alpha, seed)
        curve["power_sim"] = sim
    else:
        curve["power_sim"] = np.nan
    curve["hours"] = annotator_hours(2 * ns, seconds_per_judgment, onboarding_seconds, judgments_per_annotator)
    n_sim_need = _first(ns, curve["power_sim"].fillna(-1).to_numpy(), power)
    hours = lambda n: (
        None
        if n is None
        else float(annotator_hours(2 * n, seconds_per_judgment, onboarding_seconds, judgments_per_annotator))
    )
    return {
        "test": "t-test",
        "alpha": alpha,
        "target_power": power,
        "effect_size": float(effect_size),
        "seconds_per_judgment": float(seconds_per_judgment),
        "onboarding_seconds": float(onboarding_seconds),
        "judgments_per_annotator": float(judgments_per_annotator),
        "n_needed": n_need,
        "n_needed_stable": n_stable,
        "n_needed_sim": n_sim_need,
        "hours_needed": hours(n_need),
        "hours_needed_sim": hours(n_sim_need),
        "curve": curve,
    }


# --- one-sided Mann-Whitney U (Direct Assessment, Ji et al. 2022, §6) ------------------------------------------------


def _distinct(values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise ValueError("no finite values to resample")
    uniq, counts = np.unique(v, return_counts=True)
    return uniq, counts / counts.sum()


def common_language_effect(x: Sequence[float], y: Sequence[float]) -> float:
    """P(X > Y) + P(X = Y) / 2 over all pairs of the two samples (the AUC that U / (n_x n_y) estimates)."""
    ux, px = _distinct(x)
    uy, py = _distinct(y)
    c = (ux[:, None] > uy[None, :]) + 0.5 * (ux[:, None] == uy[None, :])
    return float(px @ c @ py)


def mann_whitney_power(auc: float, n_per_group: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    """Approximate power of the one-sided Mann-Whitney U test (H1: X > Y) with n per group when
    P(X > Y) + P(X = Y)/2 = `auc` (normal approximation with the null variance, Noether 1987)."""
    ns = np.atleast_1d(np.asarray(n_per_group, dtype=float))
    shift = ns * (auc - 0.5) * np.sqrt(12.0 / (2 * ns + 1))
    return np.where(ns >= 1, sps.norm.cdf(shift - sps.norm.ppf(1 - alpha)), 0.0)


def _mw_share(tx: np.ndarray, ty: np.ndarray, m: int, z_crit: float) -> float:
    """Share of rows (resampled count vectors over a common sorted support) where the one-sided
    Mann-Whitney U test (x > y; asymptotic, tie- and continuity-corrected, as scipy) has p < alpha,
    i.e. z > z_crit = the normal (1 - alpha) quantile."""
    total = 2.0 * m
    if total <= 1:
        return 0.0
    below = np.cumsum(ty, axis=1)
    below -= 0.5 * ty
    u = np.einsum("ij,ij->i", tx, below)
    t = tx + ty
    ties = np.einsum("ij,ij->i", t, t * t) - total
    sd = np.sqrt(np.maximum(m * m / 12.0 * ((total + 1) - ties / (total * (total - 1))), 0.0))
    # p < alpha  <=>  z > z_(1 - alpha)
    significant = (sd > 0) & (u - m * m / 2.0 - 0.5 > z_crit * sd)
    return float(significant.mean())


def _mw_share_from(u: np.ndarray, ties: np.ndarray, m: int, z_crit: float) -> float:
    """`_mw_share` from U and the tie term sum(t^3 - t) already computed per row."""
    total = 2.0 * m
    if total <= 1:
        return 0.0
    sd = np.sqrt(np.maximum(m * m / 12.0 * ((total + 1) - ties / (total * (total - 1))), 0.0))
    significant = (sd > 0) & (u - m * m / 2.0 - 0.5 > z_crit * sd)
    return float(significant.mean())


def _resample_counts(rng: np.random.Generator, probs: np.ndarray, m: int, n_sim: int) -> np.ndarray:
    """n_sim multinomial(m, probs) count vectors; small m draws the m values directly (cheaper)."""
    k = probs.size
    if m >= k // 2:
        return rng.multinomial(m, probs, size=n_sim)
    idx = np.searchsorted(np.cumsum(probs), rng.random((n_sim, m)) * probs.sum(), side="right")
    idx = np.minimum(idx, k - 1) + (np.arange(n_sim) * k)[:, None]
    return np.bincount(idx.ravel(), minlength=n_sim * k).reshape(n_sim, k)


def simulate_mann_whitney_power_pairs(
    samples: Mapping[str, Sequence[float]],
    pairs: Sequence[tuple[str, str]],
    n_per_group: ArrayLike,
    n_sim: int = 200,
    alpha: float = 0.05,
    seed: int | None = 0,
    n_upto: Mapping[tuple[str, str], int] | None = None,
) -> dict[tuple[str, str], np.ndarray]:
    """:func:`simulate_mann_whitney_power` for several pairs (a, b) (H1: a > b) of named samples at once.

    At each size n every sample is resampled once and that draw serves all the pairs it is in (the
    estimates of different pairs are then correlated, each is still the resampling power). A pair
    is simulated only up to ``n_upto[pair]`` (NaN beyond)."""
    dist = {k: _distinct(v) for k, v in samples.items()}
    support = {}
    for a, b in pairs:
        va, vb = dist[a][0], dist[b][0]
        below = np.searchsorted(vb, va, side="left")  # b's distinct values below each of a's
        same = (below < vb.size) & (vb[np.minimum(below, vb.size - 1)] == va)  # a's values b has too
        support[a, b] = (below, np.flatnonzero(same), below[same])
    ns = np.asarray(n_per_group, dtype=int)
    out = {pair: np.full(ns.size, np.nan) for pair in pairs}
    rng = np.random.default_rng(seed)
    z_crit = float(sps.norm.isf(alpha))
    for i, m in enumerate(ns):
        active = [pr for pr in pairs if n_upto is None or m <= n_upto.get(pr, ns.max())]
        if m < 1:
            for pr in active:
                out[pr][i] = 0.0
            continue
        needed = sorted({k for pr in active for k in pr})
        counts = {k: _resample_counts(rng, dist[k][1], int(m), n_sim).astype(float) for k in needed}
        # per sample, once for all its pairs: cumulative counts (with a leading 0) and sum of cubes
        cum = {k: np.concatenate([np.zeros((n_sim, 1)), np.cumsum(c, axis=1)], axis=1) for k, c in counts.items()}
        cubes = {k: np.einsum("ij,ij->i", c, c * c) for k, c in counts.items()}
        for a, b in active:
            below, a_same, b_same = support[a, b]
            ca, cb = counts[a], counts[b]
            # U = sum over a's values v of count_a(v) * (count_b(< v) + count_b(v) / 2): exact in
            # floating point (integers and halves), the same statistic as on the merged support
            u = np.einsum("ij,ij->i", ca, cum[b][:, below])
            ties = cubes[a] + cubes[b]
            if a_same.size:
                shared_a, shared_b = ca[:, a_same], cb[:, b_same]
                u += 0.5 * np.einsum("ij,ij->i", shared_a, shared_b)
                both = shared_a + shared_b
                ties += (
                    np.einsum("ij,ij->i", both, both * both)
                    - np.einsum("ij,ij->i", shared_a, shared_a * shared_a)
                    - np.einsum("ij,ij->i", shared_b, shared_b * shared_b)
                )
            out[a, b][i] = _mw_share_from(u, ties - 2.0 * m, int(m), z_crit)
    return out


def simulate_mann_whitney_power(
    x: Sequence[float],
    y: Sequence[float],
    n_per_group: ArrayLike,
    n_sim: int = 200,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> np.ndarray:
    """Share of resampled studies (n values drawn with replacement from each sample) where the
    one-sided Mann-Whitney U test (H1: x > y; scipy's asymptotic p with tie and continuity
    correction) gives p < alpha.

    A resample is drawn as multinomial counts over the distinct observed values; on the sorted union
    of the values, U = sum over values v of count_x(v) * (count_y(< v) + count_y(v) / 2): the same
    statistic as ranking the resampled values, at a cost that does not grow with n.
    """
    return simulate_mann_whitney_power_pairs({"x": x, "y": y}, [("x", "y")], n_per_group, n_sim, alpha, seed)["x", "y"]


def _mw_grid(n_max: int, points: int) -> np.ndarray:
    return np.unique(np.round(np.geomspace(2, max(n_max, 3), points)).astype(int))


def _mw_result(
    auc: float,
    ns: np.ndarray,
    approx: np.ndarray,
    sim: np.ndarray,
    seconds_per_judgment: float,
    onboarding_seconds: float,
    judgments_per_annotator: float,
    power: float,
    alpha: float,
    n_approx: int | None,
) -> dict:
    hours_of = lambda n: annotator_hours(2 * n, seconds_per_judgment, onboarding_seconds, judgments_per_annotator)
    curve = pd.DataFrame({"n": ns, "judgments": 2 * ns, "power": approx, "power_sim": sim, "hours": hours_of(ns)})
    n_need = _first(ns, np.nan_to_num(sim, nan=-1.0), power)
    hours = lambda n: None if n is None else float(hours_of(n))
    return {
        "test": "mann-whitney (one-sided)",
        "alpha": alpha,
        "target_power": power,
        "auc": auc,
        "seconds_per_judgment": float(seconds_per_judgment),
        "onboarding_seconds": float(onboarding_seconds),
        "judgments_per_annotator": float(judgments_per_annotator),
        "n_needed": n_need,
        "n_needed_approx": n_approx,
        "judgments_needed": None if n_need is None else 2 * n_need,
        "hours_needed": hours(n_need),
        "hours_needed_approx": hours(n_approx),
        "curve": curve,
    }


def mann_whitney_time_to_significance(
    x: Sequence[float],
    y: Sequence[float],
    seconds_per_judgment: float = 400.0,
    onboarding_seconds: float = 0.0,
    judgments_per_annotator: float = 1.0,
    power: float = 0.8,
    alpha: float = 0.05,
    n_max: int = 10_000,
    n_sim: int = 200,
    points: int = 30,
    seed: int | None = 0,
) -> dict:
    """Conversations per bot and annotator-hours until the one-sided Mann-Whitney U test (x > y)
    is significant with probability `power`, by resampling the collected per-conversation scores
    `x` and `y`. A study of n per bot costs 2n judgments (one per conversation).

    Sizes: a geometric grid of about `points` values from 2 to n_max. The resampling runs up to
    4 × the size the normal approximation (:func:`mann_whitney_power`) asks for, or n_max.
    `n_needed` is the first size whose resampled power reaches `power` (None if not reached),
    `n_needed_approx` the approximation's, exact (every n tried, :func:`smallest_n`; the
    approximation grows with n). Returns {test, alpha, target_power, auc, ..., n_needed,
    n_needed_approx, judgments_needed, hours_needed, hours_needed_approx, curve} with curve a
    DataFrame[n, judgments, power, power_sim, hours] (power = the approximation; power_sim NaN
    where not simulated).
    """
    return mann_whitney_pairs_time_to_significance(
        {"x": x, "y": y},
        [("x", "y")],
        seconds_per_judgment,
        onboarding_seconds,
        judgments_per_annotator,
        power,
        alpha,
        n_max,
        n_sim,
        points,
        seed,
    )["x", "y"]


def mann_whitney_pairs_time_to_significance(
    samples: Mapping[str, Sequence[float]],
    pairs: Sequence[tuple[str, str]],
    seconds_per_judgment: float = 400.0,
    onboarding_seconds: float = 0.0,
    judgments_per_annotator: float = 1.0,
    power: float = 0.8,
    alpha: float = 0.05,
    n_max: int = 10_000,
    n_sim: int = 200,
    points: int = 30,
    seed: int | None = 0,
) -> dict[tuple[str, str], dict]:
    """:func:`mann_whitney_time_to_significance` for each pair (a, b) (H1: a > b) of the named
    samples, sharing the resampled draws between pairs (see :func:`simulate_mann_whitney_power_pairs`)."""
    ns = _mw_grid(n_max, points)
    aucs: dict[tuple[str, str], float] = {}
    approx: dict[tuple[str, str], np.ndarray] = {}
    upto: dict[tuple[str, str], int] = {}
    exact: dict[tuple[str, str], int | None] = {}

    def approx_power(auc: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda n: mann_whitney_power(auc, n, alpha)

    for pr in pairs:
        aucs[pr] = common_language_effect(samples[pr[0]], samples[pr[1]])
        approx[pr] = mann_whitney_power(aucs[pr], ns, alpha)
        first = smallest_n(approx_power(aucs[pr]), power, n_max, n_min=2)[0]
        exact[pr] = first
        upto[pr] = min(n_max, 4 * first) if first else n_max
    if n_sim > 0:
        sims = simulate_mann_whitney_power_pairs(samples, pairs, ns, n_sim, alpha, seed, n_upto=upto)
    else:
        sims = {pr: np.full(ns.size, np.nan) for pr in pairs}
    return {
        pr: _mw_result(
            aucs[pr],
            ns,
            approx[pr],
            sims[pr],
            seconds_per_judgment,
            onboarding_seconds,
            judgments_per_annotator,
            power,
            alpha,
            exact[pr],
        )
        for pr in pairs
    }
