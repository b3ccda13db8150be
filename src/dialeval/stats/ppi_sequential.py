"""Judge-guided anytime-valid test of one bot pair's human win rate (sequential active PPI).

Setting: a pool of N units (conversation pairs) of bots a and b. An LLM judge scored every unit,
f_u ∈ [0, 1] (its P(a wins): 1, 0, or ½ when its two side orders disagreed), and gave an
uncertainty v_u (expected squared error, e.g. ``guided.judge_uncertainty``). At each human step
t a unit U_t is drawn from a fixed, known distribution q over the pool (with replacement) and a
person labels it, Y_t ∈ {0, ½, 1}. The target is θ = mean over the pool of E[Y | u], what uniform
human sampling estimates.

**Pseudo-outcome** (importance-sampled prediction-powered inference; Zrnic & Candès 2024, "Active
statistical inference", ICML): with w_u = 1/(N q_u) and F̄ = mean_u f_u,

    Z_t(λ) = λ F̄ + (Y_t − λ f_{U_t}) w_{U_t},

E[Z_t(λ)] = λ F̄ + Σ_u q_u (E[Y|u] − λ f_u)/(N q_u) = θ for every λ and *whatever the judge*: a wrong
judge costs variance, never validity. λ = 0 is plain importance-weighted human sampling; λ = 1 trusts
the judge fully as a control variate. Z is bounded, Z(λ) ∈ [L(λ), U(λ)] with
L(λ) = min_u (λF̄ − λ f_u w_u), U(λ) = max_u (λF̄ + (1 − λ f_u) w_u), and q_u ∝ sqrt(v_u) (the
variance-minimising allocation of Zrnic & Candès when v is right) mixed with the uniform rule keeps
w ≤ 1/mix, so the bounds stay moderate.

**Power tuning.** `GuidedPairTest` picks λ_t from the steps before t only (predictable): the
plug-in minimiser of Var Z(λ), −Cov(a, b)/Var(b) with a = Y w, b = F̄ − f w, clipped to [0, 1]
(PPI++, Angelopoulos, Duchi & Zrnic 2023), λ = 1 for the first 10 steps. Each Z_t(λ_t) still has
conditional mean θ, so the betting martingale below stays a martingale. Measured (simulated pools
of bench/judge_guided.py, θ = 0.65, 300 runs, median human steps to decide): with a
useless judge (ρ = 0) fixed λ = 1 took 128 steps, tuned 88, fixed λ = 0 78 (human-only test 83);
with a judge at ρ = 0.75 fixed λ = 1 took 42, tuned 40, fixed λ = 0 102. Starting the tuning at
λ = 0 instead of 1 gave 80 / 55 steps at ρ = 0 / 0.75: the start at 1 favours useful judges.

**Test** (betting; Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by
betting", JRSS-B 86(1)): for H0: θ = m, with X_t = Z_t − m,

    K_t = (1/J) Σ_j K_{j,t},   K_{j,t} = Π_{i≤t} (1 + β_{j,i} X_i),

β_{j,i} *signed* and predictable. Under H0 each product is a nonnegative martingale with mean 1, so
the average is too, and Ville's inequality gives P(∃t: K_t ≥ 1/α) ≤ α. The bets are the shrunk
aGRAPA rule that `sequential.SequentialPairTest` uses, β = S/(Q + 2c v₀) (S, Q the sums of X and X²
so far; v₀ = E_q[(w/2)²] the second moment of X if the judge missed every unit by ½), averaged over
the same concentrations c = 20, 5, 1.25, 0.3125, and truncated so every factor is ≥ 0.1 for every
Z in [L(λ_t), U(λ_t)]. With uniform q and a constant judge (Z = Y, X ∈ {−½, 0, ½}) this is exactly
the beta-binomial mixture of `SequentialPairTest` (tested; apart from the truncation, which that
rule's bet reaches only after six straight wins). A signed bet is two-sided by itself, since it
follows the sign of the evidence; the hedge ½(K⁺ + K⁻) over two one-sided bettors (β ≥ 0 and
β ≤ 0) is also valid but costs up to a factor 2 of wealth: measured on a simulated pool (θ ≈ 0.67,
200 runs, λ tuned) it needed 13–27% more human steps to decide than the signed bet, so the signed
bet is used. The always-valid p-value is min(1, 1/max_{s≤t} K_s).

**Confidence sequence.** The same wealth for every θ on a grid; CS_t = grid points θ with
K_s(θ) < 1/α at every s ≤ t (the intersection over time), reported as [min, max] of the points
kept, widened by one grid step and clipped to [0, 1]. For θ on the grid, coverage at all t at
once is ≥ 1 − α (Ville, for each θ). Between grid points the one-step widening is an approximation
(with predictable bets the set of kept θ need not be an interval); tests/stats/test_ppi_sequential.py
measures the coverage (97% of 200 runs, 101 grid points).

Why not the ``confseq`` package (Howard & Waudby-Smith): for this machine's Python pip finds only
its source distribution (0.0.11), a C++ extension built with CMake, pybind11 and Boost ≥ 1.70 (its
CMakeLists.txt), too heavy for a pure-Python install; the rule above is a few lines of numpy.

This module imports nothing from dialeval (numpy and scipy only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["GuidedPairTest", "GuidedPool", "guided_probabilities"]

_SHRINK = (40.0, 10.0, 2.5, 0.625)  # 2c for c = 20, 5, 1.25, 0.3125 (sequential.mixture_components)
_FLOOR = 0.1  # every betting factor stays ≥ this for every possible Z
_TUNE_AFTER = 10  # steps before the plug-in λ replaces λ = 1


def guided_probabilities(uncertainty: ArrayLike, mix: float = 0.5) -> np.ndarray:
    """Sampling distribution over the pool: q_u ∝ sqrt(v_u) (Zrnic & Candès 2024), mixed with the
    uniform distribution (share `mix`, which caps every weight 1/(N q_u) at 1/mix); sums to 1.
    All v = 0 (or mix = 1) gives the uniform distribution."""
    v = np.asarray(uncertainty, dtype=float)
    if v.ndim != 1 or len(v) == 0:
        raise ValueError(f"uncertainty must be a non-empty 1-d array, got shape {v.shape}")
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ValueError("uncertainty must be finite and ≥ 0")
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"mix must be in [0, 1], got {mix}")
    n = len(v)
    uniform = np.full(n, 1.0 / n)
    s = np.sqrt(v)
    if s.sum() <= 0:
        return uniform
    q = (1.0 - mix) * s / s.sum() + mix * uniform
    if np.any(q <= 0):
        raise ValueError("mix = 0 with some uncertainty 0 gives those units probability 0 (not allowed)")
    return q / q.sum()


def _check_y(y: float) -> float:
    y = float(y)
    if not 0.0 <= y <= 1.0:
        raise ValueError(f"the human score y must be in [0, 1], got {y}")
    return y


@dataclass(frozen=True)
class GuidedPool:
    """The judge's scores f_u of one pair's N units and the distribution q_u units are drawn from."""

    judge_scores: np.ndarray
    probabilities: np.ndarray
    _cdf: np.ndarray = field(init=False, repr=False, compare=False)
    _w: np.ndarray = field(init=False, repr=False, compare=False)
    _mean: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        f = np.asarray(self.judge_scores, dtype=float)
        q = np.asarray(self.probabilities, dtype=float)
        if f.ndim != 1 or len(f) == 0:
            raise ValueError(f"judge_scores must be a non-empty 1-d array, got shape {f.shape}")
        if q.shape != f.shape:
            raise ValueError(f"{len(f)} judge scores but probabilities of shape {q.shape}: lengths must match")
        if not np.all(np.isfinite(f)) or np.any((f < 0) | (f > 1)):
            raise ValueError("judge scores must be in [0, 1]")
        if not np.all(np.isfinite(q)) or np.any(q <= 0):
            raise ValueError("every probability must be > 0 (a unit with q = 0 would break unbiasedness)")
        if abs(q.sum() - 1.0) > 1e-8:
            raise ValueError(f"probabilities must sum to 1, got {q.sum():.10g}")
        object.__setattr__(self, "judge_scores", f)
        object.__setattr__(self, "probabilities", q)
        cdf = np.cumsum(q)
        cdf[-1] = 1.0
        object.__setattr__(self, "_cdf", cdf)
        object.__setattr__(self, "_w", 1.0 / (len(f) * q))
        object.__setattr__(self, "_mean", float(f.mean()))  # F̄, read at every step of a test

    @property
    def size(self) -> int:
        return len(self.judge_scores)

    @property
    def mean_judge(self) -> float:
        """F̄, the judge's mean score over the pool."""
        return self._mean

    def weight(self, unit: int) -> float:
        """1/(N q_u)."""
        return float(self._w[self._unit(unit)])

    def _unit(self, unit: int) -> int:
        u = int(unit)
        if not 0 <= u < self.size:
            raise ValueError(f"unit index {unit} outside the pool of {self.size}")
        return u

    def pseudo_outcome(self, unit: int, y: float, lam: float = 1.0) -> float:
        """Z(λ) = λF̄ + (y − λ f_u)/(N q_u); its mean over draws from q is θ for every λ."""
        u = self._unit(unit)
        return float(lam * self._mean + (_check_y(y) - lam * self.judge_scores[u]) * self._w[u])

    def bounds(self, lam: float = 1.0) -> tuple[float, float]:
        """(L, U): the range of Z(λ) over every unit and every y ∈ [0, 1]."""
        base = lam * self._mean - lam * self.judge_scores * self._w
        return float(base.min()), float((base + self._w).max())

    def second_moment_scale(self) -> float:
        """v₀ = Σ_u q_u (w_u/2)²: E[(Z − θ)²] if the judge missed every unit by ½ (the bets' prior scale)."""
        return float(np.sum(self.probabilities * (self._w / 2.0) ** 2))

    def draw(self, rng: np.random.Generator) -> int:
        """One unit index drawn from q."""
        k = int(np.searchsorted(self._cdf, rng.random(), side="right"))
        return min(k, self.size - 1)  # guards a draw of exactly 1.0 after rounding

    def to_dict(self) -> dict[str, list[float]]:
        return {"judge_scores": self.judge_scores.tolist(), "probabilities": self.probabilities.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> GuidedPool:
        return cls(np.asarray(d["judge_scores"], dtype=float), np.asarray(d["probabilities"], dtype=float))


class GuidedPairTest:
    """Anytime-valid two-sided test of H0: θ = `null` (default ½) from judge-guided human steps fed in
    draw order (`update(unit, y)`), tested at alpha / n_pairs (Bonferroni, as `SequentialPairTest`).

    `tune` (default True) picks the PPI weight λ_t predictably (see the module docstring); False keeps
    λ = 1. `grid` is the number of θ values the confidence sequence tracks (0: no `interval`, for
    fast simulation). Steps after the decision still update the estimate and the interval.

    Four units; the judge is unsure only about the last one, which people give to a (θ = 0.75):

    >>> pool = GuidedPool(np.array([1.0, 1.0, 0.0, 0.5]), guided_probabilities([0.05, 0.05, 0.05, 1.0]))
    >>> human = [1.0, 1.0, 0.0, 1.0]
    >>> t, rng = GuidedPairTest(pool, alpha=0.05), np.random.default_rng(0)
    >>> while not t.decided:
    ...     u = pool.draw(rng)
    ...     t.update(u, human[u])
    >>> t.winner_is_first, t.stopped_at, round(t.estimate, 3), [round(x, 2) for x in t.interval()]
    (True, 19, 0.787, [0.51, 1.0])
    """

    def __init__(
        self,
        pool: GuidedPool,
        alpha: float,
        null: float = 0.5,
        n_pairs: int = 1,
        tune: bool = True,
        grid: int = 201,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if not 0.0 <= null <= 1.0:
            raise ValueError(f"null must be in [0, 1], got {null}")
        self.pool = pool
        self.alpha = float(alpha)
        self.null = float(null)
        self.n_pairs = max(int(n_pairs), 1)
        self.tune = bool(tune)
        self.level = self.alpha / self.n_pairs
        self._log_thr = math.log(1.0 / self.level)
        # row 0 is the null; rows 1.. the interval's grid
        self._grid = np.linspace(0.0, 1.0, int(grid)) if grid else np.empty(0)
        self._m = np.concatenate([[self.null], self._grid])[:, None]  # (G, 1)
        G, J = len(self._m), len(_SHRINK)
        self._prior = np.asarray(_SHRINK)[None, :] * pool.second_moment_scale()  # (1, J)
        self._S = np.zeros((G, 1))
        self._Q = np.zeros((G, 1))
        self._logk = np.zeros((G, J))  # log wealth of each bettor
        self._alive = np.ones(len(self._grid), dtype=bool)  # grid points never rejected so far
        self._ab = [0.0] * 5  # Σa, Σb, Σab, Σb², Σa² for the plug-in λ
        self._caps: tuple[float, np.ndarray, np.ndarray] | None = None  # (λ, −cap_dn, cap_up): _caps_for
        self._zsum = self._z2sum = 0.0
        self.n = 0
        self.lam = 1.0  # the λ the next step will use
        self.max_log_e = 0.0
        self.decided = False
        self.winner_is_first: bool | None = None
        self.stopped_at: int | None = None

    def _next_lambda(self) -> float:
        if not self.tune or self.n < _TUNE_AFTER:
            return 1.0
        n = self.n
        sa, sb, sab, sbb = self._ab[0] / n, self._ab[1] / n, self._ab[2] / n, self._ab[3] / n
        var_b = sbb - sb * sb
        if var_b <= 1e-12:
            return 1.0
        return min(max(-(sab - sa * sb) / var_b, 0.0), 1.0)

    def _caps_for(self, lam: float) -> tuple[np.ndarray, np.ndarray]:
        """(−cap_dn, cap_up) for λ: the bets' truncation, kept while λ stays the same (λ = 1 for
        the first steps and often clipped to 0 or 1 after), since it costs a pass over the pool."""
        if self._caps is None or self._caps[0] != lam:
            lo, hi = self.pool.bounds(lam)
            m = self._m
            cap_up = (1.0 - _FLOOR) / np.maximum(m - lo, 1e-12)
            cap_dn = (1.0 - _FLOOR) / np.maximum(hi - m, 1e-12)
            self._caps = (lam, -cap_dn, cap_up)
        return self._caps[1:]

    def update(self, unit: int, y: float) -> None:
        """One labelled step: the unit drawn (index into the pool) and the person's score of a."""
        pool = self.pool
        u = pool._unit(unit)
        y = _check_y(y)
        lam = self.lam
        z = pool.pseudo_outcome(u, y, lam)
        # signed bets from the past only, truncated so 1 + β (Z − m) ≥ _FLOOR for every Z in [L, U]
        low_cap, cap_up = self._caps_for(lam)
        raw = self._S / (self._Q + self._prior)  # (G, J)
        x = z - self._m
        # np.clip is minimum(maximum(·)); on these tiny arrays the two ufuncs cost less per step than np.clip
        self._logk += np.log1p(np.minimum(np.maximum(raw, low_cap), cap_up) * x)
        self._S += x
        self._Q += x * x
        w = float(pool._w[u])
        a, b = y * w, pool._mean - float(pool.judge_scores[u]) * w
        ab = self._ab
        ab[0] += a
        ab[1] += b
        ab[2] += a * b
        ab[3] += b * b
        ab[4] += a * a
        self._zsum += z
        self._z2sum += z * z
        self.n += 1
        self.lam = self._next_lambda()
        log_e = self._log_e()  # (G,)
        if len(self._grid):
            self._alive &= log_e[1:] < self._log_thr
        self.max_log_e = max(self.max_log_e, float(log_e[0]))
        if not self.decided and self.max_log_e >= self._log_thr:
            self.decided = True
            self.stopped_at = self.n
            self.winner_is_first = bool(self._S[0, 0] > 0)  # the bets went with the sign of Σ(Z − null)

    def _log_e(self) -> np.ndarray:
        """log K_t for every row (null, then the grid): log of the mean wealth over the bettors."""
        top = self._logk.max(axis=1)
        return top + np.log(np.exp(self._logk - top[:, None]).mean(axis=1))

    @property
    def estimate(self) -> float:
        """Running mean of Z_t (unbiased for θ; NaN before the first step)."""
        return self._zsum / self.n if self.n else float("nan")

    @property
    def e_value(self) -> float:
        """K_t for the null now."""
        return float(math.exp(self._log_e()[0]))

    @property
    def p_value(self) -> float:
        """Always-valid p-value min(1, 1/max_{s≤t} K_s)."""
        return min(1.0, math.exp(-self.max_log_e))

    def interval(self) -> tuple[float, float]:
        """Anytime-valid (1 − alpha/n_pairs) confidence sequence for θ: the grid points never rejected
        so far, as [min − step, max + step] clipped to [0, 1]. If every point was rejected (possible
        only with probability ≤ level when θ is constant), the running estimate as a point."""
        if not len(self._grid):
            raise ValueError("this test was built with grid=0: no confidence sequence")
        kept = self._grid[self._alive]
        if not len(kept):
            e = float(np.clip(self.estimate, 0.0, 1.0))
            return e, e
        step = 1.0 / (len(self._grid) - 1) if len(self._grid) > 1 else 1.0
        return float(max(kept.min() - step, 0.0)), float(min(kept.max() + step, 1.0))

    def fixed_n_interval(self, alpha: float = 0.05) -> tuple[float, float]:
        """Classical mean(Z) ± z_{1−α/2} sd(Z)/sqrt(n): valid only at a sample size fixed in advance
        (shown beside the confidence sequence, which is valid at every n)."""
        if self.n < 2:
            return 0.0, 1.0
        mean = self._zsum / self.n
        var = max(self._z2sum / self.n - mean * mean, 0.0) * self.n / (self.n - 1)
        # scipy.special.ndtri is scipy.stats.norm.ppf bit for bit; imported here, not at the top: every
        # command that plans work (the scheduler imports this module) would pay scipy.stats' 1 s import
        from scipy.special import ndtri

        half = float(ndtri(1.0 - alpha / 2.0)) * math.sqrt(var / self.n)
        return float(mean - half), float(mean + half)
