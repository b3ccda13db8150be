"""Anytime-valid tests of a pairwise win rate (H0: p = 0.5) that survive continuous monitoring.

The statistic is the **beta-binomial mixture likelihood ratio** (Robbins 1970, "Statistical methods
related to the law of the iterated logarithm"; the conjugate-mixture boundary of Howard, Ramdas,
McAuliffe & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences",
Ann. Statist. 49(2), §3 / Prop. 6 for the beta-binomial case): after n judgments of which k went to
bot a,

    M_n(p0) = ∫ θ^k (1-θ)^(n-k) dBeta(θ; a, b)  /  (p0^k (1-p0)^(n-k))
            = B(k + a, n - k + b) / B(a, b) / (p0^k (1-p0)^(n-k)).

Under p = p0, M_n is a nonnegative martingale with M_0 = 1, so by **Ville's inequality**
P(∃ n: M_n ≥ 1/alpha) ≤ alpha. Hence

- the **always-valid p-value** p_n = min(1, min_{t≤n} 1/M_t(0.5)) (Johari, Koomen, Pekelis & Walsh
  2017 "Peeking at A/B tests", KDD; Johari, Pekelis & Walsh 2022 "Always valid inference",
  Operations Research 70(3)) satisfies P(∃ n: p_n ≤ alpha) ≤ alpha under H0: one may look after
  every judgment and stop whenever p_n ≤ alpha;
- the **confidence sequence** CS_n = {p : M_n(p) < 1/alpha} covers the true p at all n
  simultaneously with probability ≥ 1 - alpha (inverting the test for every p0). It is an interval,
  since log p^k (1-p)^(n-k) is concave in p.

The mixing prior Beta(a, a) (symmetric: a two-sided test) only moves *where* the boundary is
tightest, never the validity. A larger `a` concentrates the prior near 0.5 and suits small effects
over long runs; `DEFAULT_PRIOR` = 20 is tuned for the win rates seen in dialogue evaluations
(0.55–0.75 at a few hundred to a few thousand judgments; see benchmarks/README.md).

The process stays valid when the *times* at which a pair is observed are chosen adaptively from the
past (active pair selection): M for one pair only moves when that pair receives a judgment, whose
outcome is independent of the past given p, so M is still a nonnegative martingale on the study's
filtration. Several pairs: `bonferroni_alpha` (test each of m pairs at alpha/m; the union bound
gives family-wise error ≤ alpha whatever the selection rule and however the pairs depend).

For contrast, the **naive rule** — run the fixed-size two-sided binomial test after every judgment
and stop at the first p < alpha — has a false-positive rate that grows without bound with the
number of looks (`naive_bounds`, `NaivePairTest`).

This module imports nothing from dialeval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy import stats as sps
from scipy.special import betaln

__all__ = [
    "DEFAULT_PRIOR",
    "NaivePairTest",
    "SequentialPairTest",
    "always_valid_p",
    "bonferroni_alpha",
    "confidence_sequence",
    "crossing_probability",
    "decision_bounds",
    "first_crossing",
    "log_mixture_lr",
    "naive_bounds",
]

DEFAULT_PRIOR = 20.0


def _prior(prior: float | tuple[float, float]) -> tuple[float, float]:
    a, b = (float(prior), float(prior)) if np.isscalar(prior) else (float(prior[0]), float(prior[1]))
    if not (a > 0 and b > 0):
        raise ValueError(f"the mixing prior Beta(a, b) needs a, b > 0, got {prior!r}")
    return a, b


def _check_counts(wins, n):
    k = np.asarray(wins, dtype=float)
    m = np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > m):
        raise ValueError(f"wins must be between 0 and n (wins={wins!r}, n={n!r})")
    return k, m


def log_mixture_lr(wins, n, p0: float = 0.5, prior: float | tuple[float, float] = DEFAULT_PRIOR):
    """log M_n(p0): log of the beta-binomial mixture likelihood ratio against p = p0 (vectorised)."""
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"p0 must be strictly between 0 and 1, got {p0}")
    a, b = _prior(prior)
    k, m = _check_counts(wins, n)
    out = betaln(k + a, m - k + b) - betaln(a, b) - k * math.log(p0) - (m - k) * math.log1p(-p0)
    return float(out) if np.ndim(out) == 0 else out


def always_valid_p(wins, n, p0: float = 0.5, prior: float | tuple[float, float] = DEFAULT_PRIOR):
    """min(1, 1/M_n(p0)) from the counts so far (vectorised).

    Anytime-valid by Ville's inequality: under H0, P(∃ n: always_valid_p ≤ alpha) ≤ alpha, so it may
    be checked after every judgment. (`SequentialPairTest.p_value` is its running minimum, which is
    the always-valid p-value of Johari et al.; both reject at the same first time.)
    """
    lm = log_mixture_lr(wins, n, p0, prior)
    out = np.minimum(1.0, np.exp(-np.asarray(lm)))
    return float(out) if np.ndim(out) == 0 else out


def confidence_sequence(
    wins: int, n: int, alpha: float = 0.05, prior: float | tuple[float, float] = DEFAULT_PRIOR
) -> tuple[float, float]:
    """(low, high): the interval {p : M_n(p) < 1/alpha}, a (1 - alpha) confidence sequence for the
    win rate: with probability ≥ 1 - alpha it holds the true p at every n at once (Howard et al.
    2021, beta-binomial conjugate mixture). With no judgments it is (0, 1)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    a, b = _prior(prior)
    k, m = (float(x) for x in _check_counts(wins, n))
    if m == 0:
        return 0.0, 1.0
    # L(p) = k log p + (n-k) log(1-p); keep p where L(p) > log m_mix + log alpha
    c = betaln(k + a, m - k + b) - betaln(a, b) + math.log(alpha)

    def g(p: float) -> float:
        return (k * math.log(p) if k else 0.0) + ((m - k) * math.log1p(-p) if m - k else 0.0) - c

    phat = k / m
    eps = 1e-15
    lo = 0.0 if k == 0 else optimize.brentq(g, eps, phat, xtol=1e-13) if g(eps) < 0 else 0.0
    hi = 1.0 if k == m else optimize.brentq(g, phat, 1 - eps, xtol=1e-13) if g(1 - eps) < 0 else 1.0
    return float(lo), float(hi)


def bonferroni_alpha(alpha: float, n_pairs: int) -> float:
    """Per-pair level so that m = n_pairs anytime-valid tests keep family-wise error ≤ alpha."""
    return alpha / max(int(n_pairs), 1)


def decision_bounds(
    n_max: int, alpha: float = 0.05, prior: float = DEFAULT_PRIOR
) -> tuple[np.ndarray, np.ndarray]:
    """Integer boundaries (lo, hi), arrays of length n_max + 1 indexed by n, of the anytime-valid
    two-sided test of p = 0.5 with a symmetric Beta(prior, prior) mixture: after n judgments it
    rejects when wins ≥ hi[n] (bot a better) or wins ≤ lo[n] (bot b better). hi[n] = n + 1 and
    lo[n] = -1 when no count rejects yet. Precomputing them makes simulation a table lookup."""
    a, b = _prior(prior)
    if a != b:
        raise ValueError("decision_bounds needs a symmetric prior (a two-sided test)")
    ns = np.arange(n_max + 1, dtype=float)
    thr = math.log(1.0 / alpha)

    def lm(k):
        return betaln(k + a, ns - k + a) - betaln(a, a) + ns * math.log(2.0)

    # log M is convex and symmetric in k around n/2: bisection for the first k >= n/2 with lm >= thr
    lo_k = np.ceil(ns / 2.0)
    hi_k = ns.copy()
    ok = lm(hi_k) >= thr
    left, right = lo_k.copy(), hi_k.copy()  # invariant: lm(right) >= thr where ok
    for _ in range(math.ceil(math.log2(max(n_max, 2))) + 2):
        mid = np.floor((left + right) / 2.0)
        good = lm(mid) >= thr
        right = np.where(good, mid, right)
        left = np.where(good, left, mid + 1)
        left = np.minimum(left, right)
    hi = np.where(ok, right, ns + 1).astype(np.int64)
    lo = np.where(ok, ns - hi, -1).astype(np.int64)
    return lo, hi


def naive_bounds(n_max: int, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of the fixed-size two-sided exact binomial test at each n (reject when wins ≤ lo[n]
    or ≥ hi[n]). Applied after every judgment this is the naive rule, which is *not* anytime-valid."""
    ns = np.arange(n_max + 1)
    q = alpha / 2.0
    nn = np.maximum(ns, 1)
    c = sps.binom.ppf(q, nn, 0.5) - 1  # largest c with cdf(c) < q, up to floating point
    c = np.where((c >= 0) & (sps.binom.cdf(c, nn, 0.5) >= q), c - 1, c)
    c = np.where((c + 1 <= ns / 2) & (sps.binom.cdf(c + 1, nn, 0.5) < q), c + 1, c)
    c = np.where(ns > 0, c, -1).astype(np.int64)
    lo = c
    hi = np.where(c >= 0, ns - c, ns + 1).astype(np.int64)
    return lo, hi


def crossing_probability(p: float, lo: np.ndarray, hi: np.ndarray, n_max: int | None = None) -> dict:
    """Exact probability that a Bernoulli(p) path crosses the boundaries (lo, hi) by n_max, by
    dynamic programming over the wins count (O(n_max²), no simulation). Returns {upper, lower, any,
    expected_n (E[min(T, n_max)]), stop_pmf (P(T = n), n = 0..n_max)}. Under p = 0.5 `any` is the
    exact false-positive rate of the rule when run up to n_max judgments."""
    n_max = len(hi) - 1 if n_max is None else int(n_max)
    dist = np.zeros(n_max + 2)
    dist[0] = 1.0
    up = down = 0.0
    pmf = np.zeros(n_max + 1)
    expected = 0.0
    alive = 1.0
    for n in range(1, n_max + 1):
        expected += alive  # the n-th judgment is taken while the test is still running
        dist[1 : n + 1] = dist[1 : n + 1] * (1 - p) + dist[0:n] * p
        dist[0] *= 1 - p
        h, l_ = int(hi[n]), int(lo[n])
        u = float(dist[h : n + 1].sum()) if h <= n else 0.0
        d = float(dist[: l_ + 1].sum()) if l_ >= 0 else 0.0
        if h <= n:
            dist[h : n + 1] = 0.0
        if l_ >= 0:
            dist[: l_ + 1] = 0.0
        up += u
        down += d
        pmf[n] = u + d
        alive -= u + d
    return {"upper": up, "lower": down, "any": up + down, "expected_n": expected, "stop_pmf": pmf}


def first_crossing(cum_wins: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For paths of cumulative wins (shape (..., N), column t = wins after t+1 judgments), the first
    n (1-based) at which wins ≥ hi[n] or ≤ lo[n], and the side (+1 a better, -1 b better); n = 0 and
    side 0 when the path never crosses."""
    cw = np.asarray(cum_wins)
    N = cw.shape[-1]
    ns = np.arange(1, N + 1)
    up = cw >= hi[ns]
    dn = cw <= lo[ns]
    hit = up | dn
    any_hit = hit.any(axis=-1)
    idx = hit.argmax(axis=-1)
    side = np.where(np.take_along_axis(up, idx[..., None], axis=-1)[..., 0], 1, -1)
    return np.where(any_hit, idx + 1, 0), np.where(any_hit, side, 0)


def _a_won(outcome, a: str, b: str) -> bool | None:
    """True if bot a won, False if b won, None for a tie (ties are not counted)."""
    if isinstance(outcome, (bool, np.bool_)):
        return bool(outcome)
    if isinstance(outcome, (int, np.integer)) and outcome in (0, 1):
        return bool(outcome)
    if outcome == a or outcome in ("a", "model_a", "left"):
        return True
    if outcome == b or outcome in ("b", "model_b", "right"):
        return False
    if outcome is None or str(outcome).lower() in ("tie", "draw", "both", "neither", "none", "", "tie (bothbad)"):
        return None
    raise ValueError(f"outcome {outcome!r} is neither {a!r}, {b!r}, True/False nor a tie")


@dataclass
class SequentialPairTest:
    """Anytime-valid test of one bot pair, fed one judgment at a time.

    `alpha` is this pair's level; with several pairs pass `n_pairs` to test at alpha / n_pairs
    (Bonferroni). The test decides at the first n with M_n(0.5) ≥ 1/level, i.e. when the confidence
    sequence excludes 0.5; `winner` is the bot with more wins then, `stopped_at` that n. Judgments
    after the decision are still counted (and narrow `interval`) but never change it. Ties are
    ignored (they carry no information about which bot is better).

    >>> t = SequentialPairTest("x", "y")
    >>> for _ in range(40): _ = t.update("x")
    >>> t.decided, t.winner, t.stopped_at
    (True, 'x', 20)
    """

    a: str = "a"
    b: str = "b"
    alpha: float = 0.05
    prior: float = DEFAULT_PRIOR
    n_pairs: int = 1
    wins_a: int = 0
    n: int = 0
    ties: int = 0
    p_value: float = 1.0
    decided: bool = False
    winner: str | None = None
    stopped_at: int | None = None
    _lo: float = field(default=0.0, repr=False)
    _hi: float = field(default=1.0, repr=False)

    @property
    def level(self) -> float:
        return bonferroni_alpha(self.alpha, self.n_pairs)

    def update(self, outcome) -> SequentialPairTest:
        """Add one judgment: the winner's name, 'a'/'b', True (a won)/False, or a tie."""
        won = _a_won(outcome, self.a, self.b)
        if won is None:
            self.ties += 1
            return self
        self.n += 1
        self.wins_a += int(won)
        self.p_value = min(self.p_value, always_valid_p(self.wins_a, self.n, 0.5, self.prior))
        if not self.decided and self.p_value <= self.level:
            self.decided = True
            self.stopped_at = self.n
            self.winner = self.a if 2 * self.wins_a > self.n else self.b
        return self

    def extend(self, outcomes) -> SequentialPairTest:
        for o in outcomes:
            self.update(o)
        return self

    @property
    def win_rate(self) -> float:
        return self.wins_a / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """Running intersection of the (1 - level) confidence sequence for P(a beats b)."""
        lo, hi = confidence_sequence(self.wins_a, self.n, self.level, self.prior)
        self._lo, self._hi = max(self._lo, lo), min(self._hi, hi)
        return self._lo, self._hi


@dataclass
class NaivePairTest:
    """The naive rule, for contrast only: a fixed-size two-sided binomial test repeated after every
    judgment, stopping at the first p < alpha (from `min_n` judgments on). Its false-positive rate
    under H0 is far above alpha (see `crossing_probability` with `naive_bounds`)."""

    a: str = "a"
    b: str = "b"
    alpha: float = 0.05
    min_n: int = 1
    wins_a: int = 0
    n: int = 0
    decided: bool = False
    winner: str | None = None
    stopped_at: int | None = None

    def update(self, outcome) -> NaivePairTest:
        won = _a_won(outcome, self.a, self.b)
        if won is None:
            return self
        self.n += 1
        self.wins_a += int(won)
        if not self.decided and self.n >= self.min_n:
            # two-sided exact binomial p at 0.5 (symmetric: twice the smaller tail, as binomtest)
            p = min(1.0, 2.0 * float(sps.binom.cdf(min(self.wins_a, self.n - self.wins_a), self.n, 0.5)))
            if p < self.alpha:
                self.decided, self.stopped_at = True, self.n
                self.winner = self.a if 2 * self.wins_a > self.n else self.b
        return self
