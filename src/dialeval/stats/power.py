"""Judgments and annotator time needed for a significant result (000 §4.4.3, Appendix F).

Pairwise methods use the two-sided binomial test against 50%, single-model methods the two-sided
independent t-test, both at alpha = 0.05. For a grid of study sizes n the probability that the
test comes out significant (its power) is computed

- in closed form: exactly for the binomial test (sum of the true Binomial(n, w) over the test's
  rejection region), by the noncentral t distribution for the t-test; and
- by simulation: resampling the collected data with replacement. Resampling n binary votes is
  drawn as a multinomial over (win, loss, tie) counts, and resampling n ratings as a multinomial
  over the distinct observed values, which are the same distributions at a fraction of the cost.

Time = n × seconds per judgment + onboarding seconds × annotators needed, where annotators needed
= ceil(n / judgments per annotator); onboarding is included as 000 does. This module imports
nothing from dialeval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

__all__ = [
    "annotator_hours",
    "binomial_power",
    "binomial_rejection_bound",
    "cohens_d",
    "n_grid",
    "pairwise_time_to_significance",
    "simulate_binomial_power",
    "simulate_ttest_power",
    "single_model_time_to_significance",
    "ttest_power",
]


def n_grid(n_max: int = 100_000, n_min: int = 2, points: int = 120) -> np.ndarray:
    """Study sizes: every n up to 60, then geometric steps to n_max."""
    small = np.arange(n_min, min(60, n_max) + 1)
    if n_max <= 60:
        return small
    big = np.unique(np.round(np.geomspace(61, n_max, points)).astype(int))
    return np.concatenate([small, big])


def binomial_rejection_bound(n, alpha: float = 0.05):
    """Largest k with two-sided binomial-test p(k of n, 0.5) < alpha (-1 when none): the test
    rejects when wins <= c or wins >= n - c. Vectorised over n."""
    ns = np.asarray(n, dtype=float)
    q = alpha / 2.0
    c = np.where(ns > 0, sps.binom.ppf(q, np.maximum(ns, 1), 0.5) - 1, -1)
    # ppf can be off by one in floating point; enforce cdf(c) < q <= cdf(c + 1)
    c = np.where((c >= 0) & (sps.binom.cdf(c, np.maximum(ns, 1), 0.5) >= q), c - 1, c)
    c = np.where((c + 1 <= ns / 2) & (sps.binom.cdf(c + 1, np.maximum(ns, 1), 0.5) < q), c + 1, c)
    c = np.where(ns > 0, c, -1).astype(int)
    return int(c) if c.ndim == 0 else c


def binomial_power(win_rate: float, n: Sequence[int] | int, alpha: float = 0.05) -> np.ndarray:
    """Exact probability that a two-sided binomial test of n votes is significant when the true
    win rate is `win_rate`."""
    ns = np.atleast_1d(np.asarray(n, dtype=int))
    c = binomial_rejection_bound(ns, alpha)
    pw = sps.binom.cdf(c, ns, win_rate) + sps.binom.sf(ns - c - 1, ns, win_rate)
    return np.where(c >= 0, pw, 0.0)


def ttest_power(effect_size: float, n_per_group: Sequence[int] | int, alpha: float = 0.05) -> np.ndarray:
    """Power of the two-sided pooled two-sample t-test with n per group and Cohen's d `effect_size`."""
    ns = np.atleast_1d(np.asarray(n_per_group, dtype=float))
    df = 2 * ns - 2
    nc = abs(effect_size) * np.sqrt(ns / 2.0)
    with np.errstate(invalid="ignore"):
        crit = sps.t.ppf(1 - alpha / 2, df)
        pw = sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc)
    return np.where(ns >= 2, pw, 0.0)


def cohens_d(x: Sequence[float], y: Sequence[float]) -> float:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    pooled = ((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2)
    if pooled <= 0:
        return 0.0 if a.mean() == b.mean() else math.copysign(math.inf, a.mean() - b.mean())
    return float((a.mean() - b.mean()) / math.sqrt(pooled))


def simulate_binomial_power(
    outcomes: Sequence[float], n: Sequence[int], n_sim: int = 1000, alpha: float = 0.05, seed: int | None = 0
) -> np.ndarray:
    """Share of resampled studies of n votes that reach p < alpha. `outcomes` are 1 (win), 0
    (loss) or 0.5 (tie; dropped from the test, as in the analysis)."""
    o = np.asarray(outcomes, dtype=float)
    probs = np.array([(o == 1).mean(), (o == 0).mean(), (o == 0.5).mean()])
    probs = probs / probs.sum()
    rng = np.random.default_rng(seed)
    out = np.empty(len(n))
    for i, m in enumerate(np.asarray(n, dtype=int)):
        draws = rng.multinomial(int(m), probs, size=n_sim)
        w, l_ = draws[:, 0], draws[:, 1]
        tot = w + l_
        c = binomial_rejection_bound(tot, alpha)
        sig = (c >= 0) & ((w <= c) | (w >= tot - c))
        out[i] = sig.mean()
    return out


def _resampled_moments(values: np.ndarray, n: int, n_sim: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    uniq, counts = np.unique(values, return_counts=True)
    draws = rng.multinomial(n, counts / counts.sum(), size=n_sim).astype(float)
    mean = draws @ uniq / n
    var = (draws @ (uniq**2) - n * mean**2) / max(n - 1, 1)
    return mean, np.maximum(var, 0.0)


def simulate_ttest_power(
    x: Sequence[float], y: Sequence[float], n_per_group: Sequence[int], n_sim: int = 1000, alpha: float = 0.05,
    seed: int | None = 0,
) -> np.ndarray:
    """Share of resampled studies (n ratings per bot drawn from each bot's collected ratings)
    where the two-sided pooled t-test reaches p < alpha."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rng = np.random.default_rng(seed)
    out = np.empty(len(n_per_group))
    for i, m in enumerate(np.asarray(n_per_group, dtype=int)):
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


def pairwise_time_to_significance(
    win_rate: float | None = None,
    outcomes: Sequence[float] | None = None,
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

    Returns {test, win_rate, n_needed, n_needed_sim, hours_needed, hours_needed_sim, curve} where
    curve is a DataFrame[n, power, power_sim, hours]; n_needed is None if not reached by n_max.
    """
    tie_share = 0.0
    if outcomes is not None:
        o = np.asarray(outcomes, dtype=float)
        dec = o[o != 0.5]
        tie_share = float((o == 0.5).mean()) if o.size else 0.0
        win_rate = float(dec.mean()) if dec.size else 0.5
    if win_rate is None:
        raise ValueError("give win_rate or outcomes")
    ns = n_grid(n_max)
    decisive = np.maximum(np.round(ns * (1 - tie_share)).astype(int), 0)
    closed = binomial_power(win_rate, decisive, alpha)
    curve = pd.DataFrame({"n": ns, "power": closed})
    if outcomes is not None and n_sim > 0:
        n_need = _first(ns, closed, power)
        upto = ns <= (min(n_max, 4 * n_need) if n_need else n_max)
        sim = np.full(ns.size, np.nan)
        sim[upto] = simulate_binomial_power(outcomes, ns[upto], n_sim, alpha, seed)
        curve["power_sim"] = sim
    else:
        curve["power_sim"] = np.nan
    curve["hours"] = annotator_hours(ns, seconds_per_judgment, onboarding_seconds, judgments_per_annotator)
    n_need = _first(ns, curve["power"].to_numpy(), power)
    n_sim_need = _first(ns, curve["power_sim"].fillna(-1).to_numpy(), power)
    hours = lambda n: None if n is None else float(annotator_hours(n, seconds_per_judgment, onboarding_seconds, judgments_per_annotator))
    return {
        "test": "binomial",
        "alpha": alpha,
        "target_power": power,
        "win_rate": float(win_rate),
        "seconds_per_judgment": float(seconds_per_judgment),
        "onboarding_seconds": float(onboarding_seconds),
        "judgments_per_annotator": float(judgments_per_annotator),
        "n_needed": n_need,
        "n_needed_sim": n_sim_need,
        "hours_needed": hours(n_need),
        "hours_needed_sim": hours(n_sim_need),
        "curve": curve,
    }


def single_model_time_to_significance(
    x: Sequence[float] | None = None,
    y: Sequence[float] | None = None,
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

    Returns {test, effect_size, n_needed, n_needed_sim, hours_needed, hours_needed_sim, curve}
    with curve DataFrame[n, power, power_sim, hours] where n is per bot.
    """
    if x is not None and y is not None:
        effect_size = cohens_d(x, y)
    if effect_size is None:
        raise ValueError("give x and y or effect_size")
    ns = n_grid(n_max)
    curve = pd.DataFrame({"n": ns, "power": ttest_power(effect_size, ns, alpha) if np.isfinite(effect_size) else 1.0})
    if x is not None and y is not None and n_sim > 0:
        n_need = _first(ns, curve["power"].to_numpy(), power)
        upto = ns <= (min(n_max, 4 * n_need) if n_need else n_max)
        sim = np.full(ns.size, np.nan)
        sim[upto] = simulate_ttest_power(x, y, ns[upto], n_sim, alpha, seed)
        curve["power_sim"] = sim
    else:
        curve["power_sim"] = np.nan
    curve["hours"] = annotator_hours(2 * ns, seconds_per_judgment, onboarding_seconds, judgments_per_annotator)
    n_need = _first(ns, curve["power"].to_numpy(), power)
    n_sim_need = _first(ns, curve["power_sim"].fillna(-1).to_numpy(), power)
    hours = lambda n: None if n is None else float(annotator_hours(2 * n, seconds_per_judgment, onboarding_seconds, judgments_per_annotator))
    return {
        "test": "t-test",
        "alpha": alpha,
        "target_power": power,
        "effect_size": float(effect_size),
        "seconds_per_judgment": float(seconds_per_judgment),
        "onboarding_seconds": float(onboarding_seconds),
        "judgments_per_annotator": float(judgments_per_annotator),
        "n_needed": n_need,
        "n_needed_sim": n_sim_need,
        "hours_needed": hours(n_need),
        "hours_needed_sim": hours(n_sim_need),
        "curve": curve,
    }
