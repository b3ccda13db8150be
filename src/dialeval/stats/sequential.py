"""Anytime-valid tests of a pairwise win rate (H0: p = 0.5) that survive continuous monitoring.

The statistic is a **beta-binomial mixture likelihood ratio** (Robbins 1970, "Statistical methods
related to the law of the iterated logarithm"; the conjugate-mixture boundary of Howard, Ramdas,
McAuliffe & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences",
Ann. Statist. 49(2), §3 / Prop. 6 for the beta-binomial case): after n judgments of which k went to
bot a, for one mixing prior Beta(a, b),

    M_n(p0; a, b) = ∫ θ^k (1-θ)^(n-k) dBeta(θ; a, b)  /  (p0^k (1-p0)^(n-k))
                  = B(k + a, n - k + b) / B(a, b) / (p0^k (1-p0)^(n-k)).

Under p = p0, M_n is a nonnegative martingale with M_0 = 1 (a *test martingale*), so by **Ville's
inequality** P(∃ n: M_n ≥ 1/alpha) ≤ alpha.

**Which prior: a mixture over concentrations (the default, ``mixing="mixture"``).** A single
Beta(c, c) is tuned to one effect size: c = 20 (`DEFAULT_PRIOR`) suits win rates of 0.52–0.6 but
needs at least 20 straight wins, so a 93% win rate takes longer than a fixed-size test (16). The
default statistic is therefore the equal-weight average over a geometric grid of concentrations,

    M_n(p0) = (1/J) Σ_j M_n(p0; c_j, c_j),   c_j = prior / 4^j  (j = 0, 1, ..., c_j ≥ 1/4),

i.e. Beta(20,20), Beta(5,5), Beta(1.25,1.25), Beta(0.3125,0.3125) for the default prior 20: the
narrowest component is the configured prior (small effects, long runs) and the flatter ones take
over for large effects. An average of test martingales (for the same filtration and the same p0) is
a test martingale, so Ville's inequality applies unchanged: this is a discrete mixture of conjugate
mixtures (Howard et al. 2021, §3; the prior on θ is itself the mixture Σ_j Beta(c_j, c_j) / J).
Equivalently it is an average of *betting* martingales (Waudby-Smith & Ramdas 2023, "Estimating
means of bounded random variables by betting", JRSS-B 86(1)): Beta(c, c) is the predictable
plug-in bettor with wealth Π_t (1 + λ_t (2 X_t - 1)), λ_t = 2 q_t - 1, q_t = (k_t + c)/(t + 2c) the
smoothed running win rate, and averaging over c is the "hedge over several bettors" of their §5.
By exact dynamic programming (alpha = 0.05, win rates 0.55–0.95) its expected sample size stays
within 7–27% of the best single Beta(c, c) *for each* win rate, where Beta(20, 20) alone is up to
2.8× slower at 0.95; for win rates near 0.5 (0.52–0.55) it is 9–14% slower than Beta(20, 20). The
old rule is ``mixing="single"`` (one Beta(prior, prior)). Neither choice changes validity — only where the
boundary is tightest. Sums of log-convex functions are log-convex, so the mixture is still convex
and symmetric in k around n/2 (an upper and a lower boundary) and its confidence sequence is still
an interval.

Hence, with M_n either statistic,

- the **always-valid p-value** p_n = min(1, min_{t≤n} 1/M_t(0.5)) (Johari, Koomen, Pekelis & Walsh
  2017 "Peeking at A/B tests", KDD; Johari, Pekelis & Walsh 2022 "Always valid inference",
  Operations Research 70(3)) satisfies P(∃ n: p_n ≤ alpha) ≤ alpha under H0: one may look after
  every judgment and stop whenever p_n ≤ alpha;
- the **confidence sequence** CS_n = {p : M_n(p) < 1/alpha} covers the true p at all n
  simultaneously with probability ≥ 1 - alpha (inverting the test for every p0). It is an interval,
  since log p^k (1-p)^(n-k) is concave in p and the mixture numerator does not depend on p.

The process stays valid when the *times* at which a pair is observed are chosen adaptively from the
past (active pair selection): M for one pair only moves when that pair receives a judgment, whose
outcome is independent of the past given p, so M is still a nonnegative martingale on the study's
filtration. Several pairs: `bonferroni_alpha` (test each of m pairs at alpha/m; the union bound
gives family-wise error ≤ alpha whatever the selection rule and however the pairs depend).

**Annotators who differ (crowds).** The above assumes independent judgments. Real annotators
differ: one prefers bot a 65% of the time, another 35%. Their consecutive judgments are then
correlated and the per-judgment statistic over-counts the evidence (measured: with a per-annotator
win-rate sd of 0.15 and 5 judgments each the two-bot A/A false-positive rate was 11.4%; 23% with
10 each). Given annotator ids, `SequentialPairTest` therefore tests at the **annotator level**:
an annotator's judgments on the pair form one *block* and the test takes **one factor per block**,
from the block's win share X̄ (H0: E[X̄] = 1/2 for a randomly arriving annotator; annotators
independent of one another). The factor is 1 + λ_k (2 X̄_k − 1) with λ_k predictable (from the blocks
closed before), so the product is a test martingale in block time (Ville 1939; betting on a bounded
mean, Waudby-Smith & Ramdas 2023, JRSS-B 86(1), §5); λ_k = S/(Q + 2c) with S, Q the sums of
(2X̄ − 1) and (2X̄ − 1)² over earlier blocks is their aGRAPA bet (mean over second moment) shrunk
by c. With blocks of one judgment (Q = k) it is exactly the Beta(c, c) plug-in bet above, so the
statistic reduces to the beta-binomial mixture; it is averaged over the same c grid. A block
closes, in an order that does not depend on the answers, when it holds `block` judgments, when
`block` judgments of other annotators on the pair arrived since the annotator's last one, or on
`close_annotator` / `close_all` (end of the study). An annotator's later judgments on the pair are
kept and counted but not tested (they would depend on the block already counted). Decisions are
taken only when a block closes. Price: a block of n judgments weighs like about
1/(var(p_a)/v + 1/n) independent ones (v = 1/4), e.g. 3.4 of 5 at sd 0.15.

For contrast, the **naive rule** — run the fixed-size two-sided binomial test after every judgment
and stop at the first p < alpha — has a false-positive rate that grows without bound with the
number of looks (`naive_bounds`, `NaivePairTest`).

This module imports nothing from dialeval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import betaln, logsumexp

# scipy.optimize and scipy.stats (1 s to import) are imported in the functions that use them: the
# scheduler imports this module for every command that plans work, and uses neither.

__all__ = [
    "block_log_e_process",
    "DEFAULT_MIXING",
    "DEFAULT_PRIOR",
    "MIXING",
    "NaivePairTest",
    "SequentialPairTest",
    "always_valid_p",
    "bonferroni_alpha",
    "confidence_sequence",
    "crossing_probability",
    "decision_bounds",
    "first_crossing",
    "log_mixture_lr",
    "mixture_components",
    "naive_bounds",
    "rule_text",
]

DEFAULT_PRIOR = 20.0
MIXING = ("mixture", "single")
DEFAULT_MIXING = "mixture"
MIXTURE_RATIO = 4.0  # c_{j+1} = c_j / MIXTURE_RATIO
MIXTURE_MIN_PRIOR = 0.25  # no component flatter than Beta(1/4, 1/4)


def _prior(prior: float | tuple[float, float]) -> tuple[float, float]:
    if isinstance(prior, tuple | list | np.ndarray):
        a, b = float(prior[0]), float(prior[1])
    else:
        a = b = float(prior)
    if not (a > 0 and b > 0):
        raise ValueError(f"the mixing prior Beta(a, b) needs a, b > 0, got {prior!r}")
    return a, b


def mixture_components(
    prior: float | tuple[float, float] = DEFAULT_PRIOR, mixing: str = DEFAULT_MIXING
) -> tuple[tuple[float, float], ...]:
    """The Beta(a, b) priors averaged (with equal weights) by the test statistic.

    ``mixing="single"``: just Beta(prior). ``mixing="mixture"`` (default): Beta(a / 4^j, b / 4^j) for
    j = 0, 1, ... while the smaller parameter stays ≥ 1/4 (j = 0 always included); for the default
    prior 20: c = 20, 5, 1.25, 0.3125 (see the module docstring for why).

    >>> mixture_components(20)
    ((20.0, 20.0), (5.0, 5.0), (1.25, 1.25), (0.3125, 0.3125))
    >>> mixture_components(20, "single")
    ((20.0, 20.0),)
    """
    a, b = _prior(prior)
    if mixing not in MIXING:
        raise ValueError(f"mixing must be one of {MIXING}, got {mixing!r}")
    comps = [(a, b)]
    if mixing == "mixture":
        while min(comps[-1]) / MIXTURE_RATIO >= MIXTURE_MIN_PRIOR - 1e-12:
            comps.append((comps[-1][0] / MIXTURE_RATIO, comps[-1][1] / MIXTURE_RATIO))
    return tuple(comps)


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _log_mix_marginal(k, m, comps) -> float | np.ndarray:
    """log of (1/J) Σ_j B(k + a_j, m - k + b_j) / B(a_j, b_j): the marginal likelihood of the counts
    under the mixture prior (vectorised over k, m; plain floats for scalars, which is what the
    per-judgment update of `SequentialPairTest` needs to stay cheap)."""
    if np.ndim(k) == 0 and np.ndim(m) == 0:
        kf, mf = float(k), float(m)
        terms = [_lbeta(kf + a, mf - kf + b) - _lbeta(a, b) for a, b in comps]
        top = max(terms)
        return top + math.log(sum(math.exp(t - top) for t in terms) / len(terms))
    if len(comps) == 1:
        a, b = comps[0]
        return betaln(k + a, m - k + b) - betaln(a, b)
    terms = [betaln(k + a, m - k + b) - betaln(a, b) for a, b in comps]
    return logsumexp(np.stack(np.broadcast_arrays(*terms)), axis=0) - math.log(len(comps))


def rule_text(prior: float | tuple[float, float] = DEFAULT_PRIOR, mixing: str = DEFAULT_MIXING) -> str:
    """The statistic in words, for reports (e.g. 'equal-weight mixture of Beta(20,20), Beta(5,5), ...')."""
    comps = mixture_components(prior, mixing)
    names = ", ".join(f"Beta({a:g},{b:g})" for a, b in comps)
    if len(comps) == 1:
        return f"beta-binomial mixture likelihood ratio with a {names} mixing prior"
    return (
        f"beta-binomial mixture likelihood ratio averaged with equal weights over the mixing priors "
        f"{names} (a test martingale: average of test martingales)"
    )


def _check_counts(wins, n):
    k = np.asarray(wins, dtype=float)
    m = np.asarray(n, dtype=float)
    if np.any(k < 0) or np.any(k > m):
        raise ValueError(f"wins must be between 0 and n (wins={wins!r}, n={n!r})")
    return k, m


def log_mixture_lr(
    wins, n, p0: float = 0.5, prior: float | tuple[float, float] = DEFAULT_PRIOR, mixing: str = DEFAULT_MIXING
):
    """log M_n(p0): log of the beta-binomial mixture likelihood ratio against p = p0 (vectorised);
    by default averaged over `mixture_components(prior)`, with ``mixing="single"`` for Beta(prior)."""
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"p0 must be strictly between 0 and 1, got {p0}")
    comps = mixture_components(prior, mixing)
    if np.ndim(wins) == 0 and np.ndim(n) == 0:  # one count: plain floats (the per-judgment path)
        k, m = float(wins), float(n)
        if not 0 <= k <= m:
            raise ValueError(f"wins must be between 0 and n (wins={wins!r}, n={n!r})")
    else:
        k, m = _check_counts(wins, n)
    out = _log_mix_marginal(k, m, comps) - k * math.log(p0) - (m - k) * math.log1p(-p0)
    return float(out) if np.ndim(out) == 0 else out


def always_valid_p(
    wins, n, p0: float = 0.5, prior: float | tuple[float, float] = DEFAULT_PRIOR, mixing: str = DEFAULT_MIXING
):
    """min(1, 1/M_n(p0)) from the counts so far (vectorised).

    Anytime-valid by Ville's inequality: under H0, P(∃ n: always_valid_p ≤ alpha) ≤ alpha, so it may
    be checked after every judgment. (`SequentialPairTest.p_value` is its running minimum, which is
    the always-valid p-value of Johari et al.; both reject at the same first time.)
    """
    lm = log_mixture_lr(wins, n, p0, prior, mixing)
    if np.ndim(lm) == 0:
        return 1.0 if lm <= 0 else math.exp(-lm)
    out = np.minimum(1.0, np.exp(-np.asarray(lm)))
    return out


def confidence_sequence(
    wins: int,
    n: int,
    alpha: float = 0.05,
    prior: float | tuple[float, float] = DEFAULT_PRIOR,
    mixing: str = DEFAULT_MIXING,
) -> tuple[float, float]:
    """(low, high): the interval {p : M_n(p) < 1/alpha}, a (1 - alpha) confidence sequence for the
    win rate: with probability ≥ 1 - alpha it holds the true p at every n at once (Howard et al.
    2021, beta-binomial conjugate mixture; by default the mixture over `mixture_components`). With
    no judgments it is (0, 1)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    comps = mixture_components(prior, mixing)
    k, m = (float(x) for x in _check_counts(wins, n))
    if m == 0:
        return 0.0, 1.0
    # L(p) = k log p + (n-k) log(1-p); keep p where L(p) > log m_mix + log alpha
    c = float(_log_mix_marginal(k, m, comps)) + math.log(alpha)

    def g(p: float) -> float:
        return (k * math.log(p) if k else 0.0) + ((m - k) * math.log1p(-p) if m - k else 0.0) - c

    from scipy import optimize

    phat = k / m
    eps = 1e-15
    lo = 0.0 if k == 0 else optimize.brentq(g, eps, phat, xtol=1e-13) if g(eps) < 0 else 0.0
    hi = 1.0 if k == m else optimize.brentq(g, phat, 1 - eps, xtol=1e-13) if g(1 - eps) < 0 else 1.0
    return float(lo), float(hi)


def bonferroni_alpha(alpha: float, n_pairs: int) -> float:
    """Per-pair level so that m = n_pairs anytime-valid tests keep family-wise error ≤ alpha."""
    return alpha / max(int(n_pairs), 1)


def decision_bounds(
    n_max: int, alpha: float = 0.05, prior: float = DEFAULT_PRIOR, mixing: str = DEFAULT_MIXING
) -> tuple[np.ndarray, np.ndarray]:
    """Integer boundaries (lo, hi), arrays of length n_max + 1 indexed by n, of the anytime-valid
    two-sided test of p = 0.5 with the symmetric mixture of `mixture_components(prior, mixing)`
    (default: the mixture over Beta(c, c), c = prior / 4^j; ``mixing="single"``: Beta(prior, prior)):
    after n judgments it rejects when wins ≥ hi[n] (bot a better) or wins ≤ lo[n] (bot b better).
    hi[n] = n + 1 and lo[n] = -1 when no count rejects yet. Precomputing them makes simulation a
    table lookup."""
    a, b = _prior(prior)
    if a != b:
        raise ValueError("decision_bounds needs a symmetric prior (a two-sided test)")
    comps = mixture_components(prior, mixing)
    ns = np.arange(n_max + 1, dtype=float)
    thr = math.log(1.0 / alpha)

    def lm(k):
        return _log_mix_marginal(k, ns, comps) + ns * math.log(2.0)

    # log M is convex (a sum of log-convex terms is log-convex) and symmetric in k around n/2:
    # bisection for the first k >= n/2 with lm >= thr
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
    from scipy import stats as sps

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


def crossing_probability(p: float, lo: np.ndarray, hi: np.ndarray, n_max: int | None = None, tol: float = 0.0) -> dict:
    """Exact probability that a Bernoulli(p) path crosses the boundaries (lo, hi) by n_max, by
    dynamic programming over the wins count (O(n_max²), no simulation). Returns {upper, lower, any,
    expected_n (E[min(T, n_max)]), stop_pmf (P(T = n), n = 0..n_max)}. Under p = 0.5 `any` is the
    exact false-positive rate of the rule when run up to n_max judgments. With `tol` > 0 the
    recursion ends once the probability of still running is below `tol` (every result is then off
    by at most tol, resp. tol × n_max for expected_n)."""
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
        if alive < tol:
            break
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


def block_log_e_process(
    block_wins, block_n, prior: float | tuple[float, float] = DEFAULT_PRIOR, mixing: str = DEFAULT_MIXING
) -> np.ndarray:
    """log of the annotator-level test martingale (see the module docstring) after each block, for
    many studies at once: `block_wins`, `block_n` of shape (..., B), blocks in the order they
    closed (a block with n = 0 contributes factor 1). Same statistic as `SequentialPairTest` with
    annotator ids when the blocks close in this order; for simulation (A/A rates, benchmarks)."""
    w = np.asarray(block_wins, dtype=float)
    n = np.asarray(block_n, dtype=float)
    y = np.where(n > 0, (2.0 * w - n) / np.maximum(n, 1.0), 0.0)
    real = (n > 0).astype(float)
    s_before = np.cumsum(y, axis=-1) - y
    q_before = np.cumsum(y * y, axis=-1) - y * y
    k_before = np.cumsum(real, axis=-1) - real
    comps = mixture_components(prior, mixing)
    logs = []
    for a, b in comps:
        shrink = a + b
        lam = s_before / (q_before + shrink)
        cap = np.maximum(0.9, np.abs(s_before) / (k_before + shrink))
        lam = np.clip(lam, -cap, cap)
        logs.append(np.cumsum(np.log1p(lam * y), axis=-1))
    return logsumexp(np.stack(logs), axis=0) - math.log(len(comps))


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


_FOLD_EVERY = 4096  # judgments kept before they are folded into the running intersection


@dataclass
class SequentialPairTest:
    """Anytime-valid test of one bot pair, fed one judgment at a time.

    `alpha` is this pair's level; with several pairs pass `n_pairs` to test at alpha / n_pairs
    (Bonferroni). The test decides at the first n with M_n(0.5) ≥ 1/level, i.e. when the confidence
    sequence excludes 0.5; `winner` is the bot with more wins then, `stopped_at` that n. Judgments
    after the decision are still counted (and narrow `interval`, see there for an empty
    intersection: `interval_empty`) but never change it. Ties are
    ignored (they carry no information about which bot is better). `mixing` picks the statistic:
    "mixture" (default: the average over Beta(c, c), c = prior / 4^j, see the module docstring) or
    "single" (Beta(prior, prior) alone, the rule before the mixture).

    `update(outcome, annotator)` with an annotator id tests at the annotator level (one factor per
    annotator block of at most `block` judgments; see the module docstring); without one, every
    judgment is its own block and the statistic is the beta-binomial mixture exactly.

    >>> t = SequentialPairTest("x", "y")
    >>> for _ in range(40): _ = t.update("x")
    >>> t.decided, t.winner, t.stopped_at
    (True, 'x', 8)
    >>> SequentialPairTest("x", "y", mixing="single").extend(["x"] * 40).stopped_at
    20
    >>> c = SequentialPairTest("x", "y", block=5)
    >>> for k in range(50): _ = c.update("x", annotator=f"w{k // 5}")
    >>> c.stopped_at, c.decided_blocks   # 8 annotators, each 5 of 5 for x: one annotator = one bet
    (40, 8)
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
    mixing: str = DEFAULT_MIXING
    block: int = 10
    blocks: int = 0  # closed blocks (annotator factors) in the test
    tested_n: int = 0  # judgments inside closed blocks
    tested_wins: int = 0
    untested: int = 0  # judgments of annotators whose block had already closed
    decided_blocks: int | None = None  # blocks in the test when it decided
    _lo: float = field(default=0.0, repr=False)
    _hi: float = field(default=1.0, repr=False)
    _empty: bool = field(default=False, repr=False)  # the running intersection (_lo, _hi) is empty
    # (wins_a, n) after each judgment not yet folded into the running intersection
    _pending: list[tuple[int, int]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        comps = mixture_components(self.prior, self.mixing)  # validates prior and mixing
        self._shrink = [a + b for a, b in comps]  # 2c of each Beta(c, c) component
        self._log_wealth = [0.0] * len(comps)
        self._s = self._q = 0.0
        self._bernoulli = True  # every closed block so far is one judgment: closed form applies
        self._open: dict[str, list[int]] = {}  # annotator -> [wins, n, judgments of others since]
        self._closed: set[str] = set()
        if int(self.block) < 1:
            raise ValueError(f"block must be at least 1, got {self.block!r}")

    @property
    def level(self) -> float:
        return bonferroni_alpha(self.alpha, self.n_pairs)

    @property
    def clustered(self) -> bool:
        """True once a block of more than one judgment entered the test (annotator-level test)."""
        return not self._bernoulli

    def update(self, outcome, annotator: str | None = None) -> SequentialPairTest:
        """Add one judgment: the winner's name, 'a'/'b', True (a won)/False, or a tie; `annotator`:
        who gave it (None: independent of every other judgment)."""
        won = _a_won(outcome, self.a, self.b)
        if won is None:
            self.ties += 1
            return self
        self._note_for_interval(self.wins_a + int(won), self.n + 1)
        self.n += 1
        self.wins_a += int(won)
        if annotator is None:
            self._tick_others(None)
            self._close_block(int(won), 1)
            return self
        if annotator in self._closed:
            self.untested += 1
            self._tick_others(annotator)
            return self
        blk = self._open.setdefault(annotator, [0, 0, 0])
        blk[0] += int(won)
        blk[1] += 1
        blk[2] = 0
        self._tick_others(annotator)
        if blk[1] >= self.block:
            self.close_annotator(annotator)
        return self

    def _tick_others(self, annotator: str | None) -> None:
        stale = []
        for who, blk in self._open.items():
            if who != annotator:
                blk[2] += 1
                if blk[2] >= self.block:
                    stale.append(who)
        for who in stale:
            self.close_annotator(who)

    def close_annotator(self, annotator: str) -> None:
        """Close this annotator's open block (its factor enters the test); their later judgments
        on this pair are counted but not tested."""
        blk = self._open.pop(annotator, None)
        if blk is None:
            return
        self._closed.add(annotator)
        if blk[1]:
            self._close_block(blk[0], blk[1])

    def close_all(self) -> None:
        """Close every open block (the end of collection)."""
        for who in list(self._open):
            self.close_annotator(who)

    @property
    def open_judgments(self) -> int:
        """Judgments in blocks not yet closed (not yet in the test)."""
        return sum(blk[1] for blk in self._open.values())

    def _close_block(self, wins: int, n: int) -> None:
        y = (2.0 * wins - n) / n
        for j, shrink in enumerate(self._shrink):
            lam = self._s / (self._q + shrink)
            cap = max(0.9, abs(self._s) / (self.blocks + shrink))  # = lam itself for one-judgment blocks
            lam = max(-cap, min(cap, lam))
            self._log_wealth[j] += math.log1p(lam * y)
        self._s += y
        self._q += y * y
        self.blocks += 1
        self.tested_n += n
        self.tested_wins += wins
        self._bernoulli = self._bernoulli and n == 1
        # the product form: for one-judgment blocks it equals the beta-binomial mixture's closed form
        # (to rounding) at a fraction of the cost (reports replay every judgment of a study)
        top = max(self._log_wealth)
        log_m = top + math.log(sum(math.exp(w - top) for w in self._log_wealth) / len(self._log_wealth))
        p = 1.0 if log_m <= 0 else math.exp(-log_m)
        self.p_value = min(self.p_value, p)
        if not self.decided and self.p_value <= self.level:
            self.decided = True
            self.stopped_at = self.n
            self.decided_blocks = self.blocks
            self.winner = self.a if 2 * self.tested_wins > self.tested_n else self.b

    @property
    def e_value(self) -> float:
        """The current value of the test martingale (1 / level or more means decided)."""
        top = max(self._log_wealth)
        return float(math.exp(top) * sum(math.exp(w - top) for w in self._log_wealth) / len(self._log_wealth))

    def extend(self, outcomes) -> SequentialPairTest:
        for o in outcomes:
            self.update(o)
        return self

    @property
    def win_rate(self) -> float:
        return self.wins_a / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        """(low, high) for P(a beats b): the intersection of the (1 - level) confidence sequence
        CS_t over every judgment t = 1..n so far (still a (1 - level) confidence sequence, since all
        CS_t hold at once with that probability). It depends only on the judgments, never on how
        often it is read.

        The intersection can be empty (every p was excluded at some t): that happens with
        probability ≤ level when the win rate is constant, so it is evidence that it is not (drift,
        heterogeneous annotators). Then `interval_empty` is True from that judgment on, and
        `interval` is the current CS_n alone, so low ≤ high always.

        >>> t = SequentialPairTest().extend([True] * 30 + [False] * 30)
        >>> t.interval_empty, [round(x, 2) for x in t.interval]
        (True, [0.32, 0.68])
        """
        if self.interval_empty:
            return confidence_sequence(self.wins_a, self.n, self.level, self.prior, self.mixing)
        return self._lo, self._hi

    @property
    def interval_empty(self) -> bool:
        """True once no win rate lies in every confidence sequence so far (see `interval`)."""
        self._fold_pending()
        return self._empty

    def _note_for_interval(self, wins_a: int, n: int) -> None:
        """Keep the counts after this judgment for the running intersection (see `interval`)."""
        if not self._empty:
            self._pending.append((wins_a, n))
            if len(self._pending) >= _FOLD_EVERY:  # bounded memory when `interval` is rarely read
                self._fold_pending()

    def _fold_pending(self) -> None:
        """Intersect (_lo, _hi) with CS_t for every judgment t since the last fold.

        Cheap when little changes: a vectorised check finds the t whose CS_t lies wholly above _lo
        (M_t(_lo) ≥ 1/level with _lo below the win rate), and only for those is the bound solved
        for, most excluded first, until no CS_t cuts further; the same on the high side."""
        if not self._pending:
            return
        k, m = (np.asarray(x, dtype=float) for x in zip(*self._pending, strict=True))
        self._pending = []
        threshold = -math.log(self.level)
        for side in (0, 1):  # 0 raises the low end, 1 lowers the high end
            open_ = np.ones(k.shape, dtype=bool)
            while open_.any():
                bound = self._hi if side else self._lo
                p0 = min(max(bound, 1e-15), 1 - 1e-15)
                lm = np.asarray(log_mixture_lr(k, m, p0, self.prior, self.mixing))
                beyond = (k < p0 * m) if side else (k > p0 * m)
                cuts = open_ & beyond & (lm >= threshold)
                if not cuts.any():
                    break
                i = int(np.argmax(np.where(cuts, lm, -np.inf)))
                open_[i] = False
                cs = confidence_sequence(int(k[i]), int(m[i]), self.level, self.prior, self.mixing)
                if side:
                    self._hi = min(self._hi, cs[1])
                else:
                    self._lo = max(self._lo, cs[0])
        if self._lo > self._hi:
            self._empty = True


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
            from scipy import stats as sps

            # two-sided exact binomial p at 0.5 (symmetric: twice the smaller tail, as binomtest)
            p = min(1.0, 2.0 * float(sps.binom.cdf(min(self.wins_a, self.n - self.wins_a), self.n, 0.5)))
            if p < self.alpha:
                self.decided, self.stopped_at = True, self.n
                self.winner = self.a if 2 * self.wins_a > self.n else self.b
        return self
