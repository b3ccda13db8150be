"""Judge-corrected confidence intervals: prediction-powered inference with power tuning (PPI++).

Setting: people labelled n units (human score Y and the judge's label Ŷ on each); the judge alone
labelled N more units (Ŷ only). Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan,
Zrnic 2023, *Science*) estimates what people would say on all units from the judge's labels and
corrects the judge's bias with the n units where both answered; PPI++ (Angelopoulos, Duchi, Zrnic
2023, arXiv:2311.01453) scales the judge's part by a weight λ ∈ [0, 1] chosen from the data to make
the interval as short as possible. λ = 0 is the classical human-only estimate, so a useless judge
(Ŷ unrelated to Y) gets λ ≈ 0 and costs almost nothing; the intervals are valid (asymptotically)
whatever the judge.

What is here, all with pairwise scores Y ∈ {0, ½, 1} from the first item's side (a tie is ½):

- :func:`ppi_mean`: the mean of Y (e.g. one pair's win rate), PPI++ with tuned λ.
- :func:`ppi_win_rates`: every bot pair's win rate at once (each pair its own λ).
- :func:`ppi_model_win_rates`: each bot's win rate against the field (its mean score over its battles).
- :func:`ppi_bradley_terry`: Bradley–Terry log-strengths θ (mean zero) as the M-estimator that
  minimises L_n(θ) + λ (L̃_N(θ) − L̃_n(θ)), where L is the mean logistic loss of the battles with the
  human score and L̃ with the judge's; sandwich covariance H⁻¹ [V(g − λĝ) + (n/N) λ² V(ĝ)] H⁻¹ / n
  (H the Hessian on all units, g/ĝ the per-battle gradients with Y/Ŷ) and λ minimising its trace.
  Intervals on each score and on every pairwise difference, and :meth:`BTResult.rank_sets`.
- :func:`rank_sets`: a bot's rank set from simultaneous (Bonferroni) intervals on the pairwise
  differences: every rank consistent with the pairs that are resolved (the idea of Chatzi, Straitouri,
  Thejaswi, Gomez-Rodriguez 2024, "Prediction-powered ranking of large language models").
- :func:`active_probabilities` and :func:`ppi_mean_active`: active statistical inference (Zrnic &
  Candès 2024): label unit k with probability π_k ∝ sqrt(expected squared judge error), then
  weight the labelled units by 1/π_k so the estimate stays unbiased.

Why our own code rather than the maintained ``ppi-python`` package (PyPI ``ppi_python``): it covers
means, quantiles, OLS, logistic and Poisson GLMs with power tuning, and we check that our mean and
logistic (binary) numbers agree with it (tests/stats/test_ppi.py, frozen numbers). It does not cover
Bradley–Terry with ties: its logistic fit starts from scikit-learn's classifier, which refuses a
label of ½ (ppi-python 0.2.3: "ValueError: Unknown label type: continuous"), and it wants an
explicit design matrix of N rows, where Bradley–Terry aggregates to counts per (pair, human score,
judge score) cell, so a fit over 27,000 battles costs O(bots²); nor per-pair win rates in one pass,
rank sets, or sampling weights for active labelling. It also pulls numba and scikit-learn at import.
So the formulas are written here, following the papers.

Typical use (one row per battle; the human score NaN where people did not judge it)::

    names, moments, counts = battles_to_moments(model_a, model_b, human_scores, judge_scores)
    bt = ppi_bradley_terry(moments, names)       # bt.table(): theta, se, ci_low, ci_high, rank_set
    rates = ppi_win_rates(moments)               # per pair i < j (moments.i, moments.j)
    field = ppi_model_win_rates(moments)         # per bot, against the field

This module imports nothing from dialeval (numpy and scipy only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm
from scipy.stats import t as student_t

__all__ = [
    "BTResult",
    "MeanResult",
    "active_probabilities",
    "battles_to_moments",
    "pair_moments",
    "ppi_bradley_terry",
    "ppi_mean",
    "ppi_mean_active",
    "ppi_model_win_rates",
    "ppi_win_rates",
    "rank_sets",
    "score_of_winner",
]

_A_WINS = {"model_a", "a", "left", "first"}
_B_WINS = {"model_b", "b", "right", "second"}


def score_of_winner(winners: Sequence[object]) -> np.ndarray:
    """Arena verdicts -> scores of the first model: 'model_a' 1, 'model_b' 0, anything tie-like ½;
    None/NaN stays NaN (no label)."""
    out = np.full(len(winners), np.nan)
    for k, w in enumerate(winners):
        if w is None or (isinstance(w, float) and w != w):
            continue
        low = str(w).strip().lower()
        out[k] = 1.0 if low in _A_WINS else 0.0 if low in _B_WINS else 0.5
    return out


def _z(alpha: float) -> float:
    return float(norm.ppf(1.0 - alpha / 2.0))


def _quantile(alpha: float, dof: np.ndarray | None) -> np.ndarray | float:
    """Two-sided normal quantile, or Student's t with `dof` degrees of freedom where given; infinite
    where dof < 1 (fewer than two human labels: no interval can be claimed)."""
    if dof is None:
        return _z(alpha)
    d = np.asarray(dof, dtype=float)
    return np.where(d >= 1, student_t.ppf(1.0 - alpha / 2.0, np.maximum(d, 1.0)), np.inf)


def _half(q: np.ndarray | float, se: np.ndarray) -> np.ndarray:
    """q · se, infinite where q is (0 · ∞ would be NaN)."""
    finite = np.where(np.isinf(q), 0.0, q)
    return np.where(np.isinf(q), np.inf, finite * se)


# -- means ---------------------------------------------------------------------------------------


@dataclass
class MeanResult:
    """A judge-corrected mean (or a vector of them, one per group) and its interval."""

    estimate: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    lam: np.ndarray
    n: np.ndarray  # units with a human label
    N: np.ndarray  # units with the judge's label only
    classical: np.ndarray  # human-only estimate (mean of Y)
    classical_se: np.ndarray

    def as_dict(self) -> dict[str, object]:
        return {k: np.asarray(v).tolist() for k, v in self.__dict__.items()}


def _mean_from_moments(
    n: np.ndarray,
    sy: np.ndarray,
    syy: np.ndarray,
    sh: np.ndarray,
    shh: np.ndarray,
    syh: np.ndarray,
    N: np.ndarray,
    uh: np.ndarray,
    uhh: np.ndarray,
    alpha: float,
    lam: float | None,
    small_sample: bool = True,
) -> MeanResult:
    """PPI++ mean per group from sufficient statistics (sums of Y, Y², Ŷ, Ŷ², YŶ on the labelled units,
    of Ŷ, Ŷ² on the unlabelled). Variance conventions follow ppi_py (the cross-check matches it with
    `small_sample=False`): λ = Cov(Y, Ŷ) / ((1 + n/N) Var(Ŷ on all units)), clipped to [0, 1]; the
    variance of the rectifier and of the imputed mean with ddof = 0. `small_sample` multiplies the
    rectifier's variance by n/(n − 1) (ddof 1, the HC2 correction of a mean) and uses Student's t
    with n − 1 degrees of freedom: groups with a few dozen labels (a rare pair, a rare bot)
    otherwise cover a point or two below the nominal level."""
    n, N = np.asarray(n, float), np.asarray(N, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        my, mh = sy / n, sh / n
        var_y = np.maximum(syy / n - my**2, 0.0)
        cov = syh / n - my * mh
        tot = n + N
        var_h_all = np.maximum((shh + uhh) / tot - ((sh + uh) / tot) ** 2, 0.0) * tot / np.maximum(tot - 1, 1)
        if lam is None:
            lam_v = np.where(var_h_all > 0, cov / ((1.0 + n / np.where(N > 0, N, np.inf)) * var_h_all), 0.0)
            lam_v = np.clip(np.nan_to_num(lam_v), 0.0, 1.0)
        else:
            lam_v = np.full(np.shape(n), float(lam))
        lam_v = np.where(N > 0, lam_v, 0.0)  # nothing unlabelled: the classical estimate
        mu = np.where(N > 0, uh / np.where(N > 0, N, 1), 0.0)
        var_u = np.where(N > 0, np.maximum(uhh / np.where(N > 0, N, 1) - mu**2, 0.0), 0.0)
        est = my + lam_v * (mu - mh)
        var_r = np.maximum(var_y - 2 * lam_v * cov + lam_v**2 * np.maximum(shh / n - mh**2, 0.0), 0.0)
        if small_sample:
            var_r = var_r * n / np.maximum(n - 1, 1)
            var_y = var_y * n / np.maximum(n - 1, 1)
        se = np.sqrt(var_r / n + np.where(N > 0, lam_v**2 * var_u / np.where(N > 0, N, 1), 0.0))
        cse = np.sqrt(var_y / n)
    with np.errstate(invalid="ignore"):  # groups without labels: NaN estimate, infinite quantile
        half = _half(_quantile(alpha, n - 1 if small_sample else None), se)
    return MeanResult(
        estimate=est,
        se=se,
        ci_low=est - half,
        ci_high=est + half,
        lam=lam_v,
        n=n,
        N=N,
        classical=my,
        classical_se=cse,
    )


def ppi_mean(
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    alpha: float = 0.05,
    lam: float | None = None,
    small_sample: bool = True,
) -> MeanResult:
    """Judge-corrected mean of the human score with a (1 − alpha) interval.

    `y`, `yhat`: human score and judge's score on the n units people labelled; `yhat_unlabeled`: the
    judge's score on N more units. `lam=None` tunes λ (PPI++); `lam=1` is plain PPI; `lam=0` (or no
    unlabelled units) is the classical CLT interval. `small_sample=False`: ppi_py's variance (ddof 0),
    else ddof 1.
    Scalars in the result are 0-d arrays.
    """
    y, yh, u = (np.asarray(x, dtype=float) for x in (y, yhat, yhat_unlabeled))
    if y.shape != yh.shape or y.ndim != 1 or u.ndim != 1:
        raise ValueError("y and yhat must be 1-d arrays of the same length; yhat_unlabeled 1-d")
    if len(y) < 2:
        raise ValueError("need at least two human-labelled units")
    return _mean_from_moments(
        np.asarray(len(y)),
        y.sum(),
        (y * y).sum(),
        yh.sum(),
        (yh * yh).sum(),
        (y * yh).sum(),
        np.asarray(len(u)),
        u.sum(),
        (u * u).sum(),
        alpha,
        lam,
        small_sample,
    )


# -- per-pair sufficient statistics ------------------------------------------------------------------


@dataclass
class PairMoments:
    """Per bot pair (i < j, scores from i's side): sums over the labelled battles of Y, Y², Ŷ, Ŷ², YŶ
    and over the judge-only battles of Ŷ, Ŷ². Everything below needs only these."""

    K: int
    i: np.ndarray
    j: np.ndarray
    n: np.ndarray
    sy: np.ndarray
    syy: np.ndarray
    sh: np.ndarray
    shh: np.ndarray
    syh: np.ndarray
    N: np.ndarray
    uh: np.ndarray
    uhh: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)


def _orient(a: np.ndarray, b: np.ndarray, *scores: np.ndarray) -> tuple[np.ndarray, ...]:
    swap = a > b
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    return (lo, hi, *(np.where(swap, 1.0 - s, s) for s in scores))


def pair_moments(
    K: int,
    a: ArrayLike,
    b: ArrayLike,
    y: ArrayLike,
    yhat: ArrayLike,
    a_unlabeled: ArrayLike = (),
    b_unlabeled: ArrayLike = (),
    yhat_unlabeled: ArrayLike = (),
) -> PairMoments:
    """Aggregate battles (bot indices a, b in 0..K-1; scores of a) into :class:`PairMoments` over all
    K(K−1)/2 pairs. Battles of a bot against itself are dropped."""
    a, b = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    y, yh = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    au, bu = np.asarray(a_unlabeled, dtype=int), np.asarray(b_unlabeled, dtype=int)
    u = np.asarray(yhat_unlabeled, dtype=float)
    if not (len(a) == len(b) == len(y) == len(yh)) or not (len(au) == len(bu) == len(u)):
        raise ValueError("the labelled (a, b, y, yhat) and unlabelled (a, b, yhat) arrays must match in length")
    if np.isnan(y).any() or np.isnan(yh).any() or np.isnan(u).any():
        raise ValueError("scores must not be NaN (drop the units without a label first)")
    iu, ju = np.triu_indices(K, k=1)
    index = np.full((K, K), -1)
    index[iu, ju] = np.arange(len(iu))
    m = len(iu)

    def sums(lo: np.ndarray, hi: np.ndarray, vals: list[np.ndarray]) -> list[np.ndarray]:
        keep = lo != hi
        p = index[lo[keep], hi[keep]]
        return [np.bincount(p, weights=v[keep], minlength=m) for v in vals]

    lo, hi, y2, yh2 = _orient(a, b, y, yh)
    one = np.ones(len(lo))
    n, sy, syy, sh, shh, syh = sums(lo, hi, [one, y2, y2 * y2, yh2, yh2 * yh2, y2 * yh2])
    lo, hi, u2 = _orient(au, bu, u)
    N, uh, uhh = sums(lo, hi, [np.ones(len(lo)), u2, u2 * u2])
    return PairMoments(K, iu, ju, n, sy, syy, sh, shh, syh, N, uh, uhh)


def ppi_win_rates(
    moments: PairMoments, alpha: float = 0.05, lam: float | None = None, small_sample: bool = True
) -> MeanResult:
    """Win rate of i over j (ties ½) for every pair i < j of `moments`, each pair its own PPI++ mean
    (λ tuned per pair). Pairs with fewer than two human labels get NaN."""
    m = moments
    out = _mean_from_moments(m.n, m.sy, m.syy, m.sh, m.shh, m.syh, m.N, m.uh, m.uhh, alpha, lam, small_sample)
    few = m.n < 2
    for name in ("estimate", "se", "ci_low", "ci_high", "classical", "classical_se"):
        getattr(out, name)[few] = np.nan
    return out


def ppi_model_win_rates(
    moments: PairMoments, alpha: float = 0.05, lam: float | None = None, small_sample: bool = True
) -> MeanResult:
    """Each bot's win rate against the field (ties ½): its mean score over all its battles, opponents
    as they come (the per-model estimand of Chatzi et al. 2024), each bot its own PPI++ mean and λ.
    Here the judge also predicts how strong the opponent is, so it helps more than within a pair."""
    m = moments
    K = m.K

    def per_bot(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        # a pair's sum counts for i as is and for j as `second` (j's side of the same battles)
        return np.bincount(m.i, weights=first, minlength=K) + np.bincount(m.j, weights=second, minlength=K)

    n = per_bot(m.n, m.n)
    sy = per_bot(m.sy, m.n - m.sy)
    syy = per_bot(m.syy, m.n - 2 * m.sy + m.syy)
    sh = per_bot(m.sh, m.n - m.sh)
    shh = per_bot(m.shh, m.n - 2 * m.sh + m.shh)
    syh = per_bot(m.syh, m.n - m.sy - m.sh + m.syh)
    N = per_bot(m.N, m.N)
    uh = per_bot(m.uh, m.N - m.uh)
    uhh = per_bot(m.uhh, m.N - 2 * m.uh + m.uhh)
    out = _mean_from_moments(n, sy, syy, sh, shh, syh, N, uh, uhh, alpha, lam, small_sample)
    few = n < 2
    for name in ("estimate", "se", "ci_low", "ci_high", "classical", "classical_se"):
        getattr(out, name)[few] = np.nan
    return out


# -- Bradley–Terry ---------------------------------------------------------------------------------


@dataclass
class BTResult:
    """Judge-corrected Bradley–Terry log-strengths (mean zero) with the sandwich covariance."""

    names: list[str]
    theta: np.ndarray
    cov: np.ndarray
    lam: float
    n: int
    N: int
    alpha: float
    # degrees of freedom of each bot's score (its human-labelled battles − 1), for Student-t
    # intervals; None: normal quantiles (the asymptotic interval of ppi_py)
    dof: np.ndarray | None = None

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def intervals(self, alpha: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of each log-strength at level 1 − alpha (per score, not simultaneous)."""
        half = _half(_quantile(self.alpha if alpha is None else alpha, self.dof), self.se)
        return self.theta - half, self.theta + half

    def differences(self, alpha: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """K×K matrices (difference θ_i − θ_j, its standard error, interval half-width at 1 − alpha;
        with `dof`, Student's t on the smaller of the two bots' degrees of freedom)."""
        dof = None if self.dof is None else np.minimum(self.dof[:, None], self.dof[None, :])
        q = _quantile(self.alpha if alpha is None else alpha, dof)
        d = self.theta[:, None] - self.theta[None, :]
        v = np.diag(self.cov)
        se = np.sqrt(np.clip(v[:, None] + v[None, :] - 2 * self.cov, 0.0, None))
        return d, se, _half(q, se)

    def rank_sets(self, alpha: float | None = None) -> list[tuple[int, int]]:
        """(best, worst) rank of each bot consistent with simultaneous intervals (see :func:`rank_sets`)."""
        d, se, _ = self.differences()
        dof = None if self.dof is None else np.minimum(self.dof[:, None], self.dof[None, :])
        return rank_sets(d, se, self.alpha if alpha is None else alpha, dof)

    def table(self, scale: float = 400.0 / np.log(10.0), init: float = 1000.0) -> list[dict[str, object]]:
        """One row per bot, best first: name, theta, se, ci_low, ci_high (log-strengths), rating,
        rating_low, rating_high (Elo scale: init + scale · θ, mean `init`), rank_set (best, worst)."""
        lo, hi = self.intervals()
        ranks = self.rank_sets()
        rows = [
            {
                "name": self.names[k],
                "theta": float(self.theta[k]),
                "se": float(self.se[k]),
                "ci_low": float(lo[k]),
                "ci_high": float(hi[k]),
                "rating": float(init + scale * self.theta[k]),
                "rating_low": float(init + scale * lo[k]),
                "rating_high": float(init + scale * hi[k]),
                "rank_set": ranks[k],
            }
            for k in range(len(self.names))
        ]
        return sorted(rows, key=lambda r: -float(r["theta"]))  # type: ignore[arg-type]


def _laplacian(w: np.ndarray, m: PairMoments) -> np.ndarray:
    """Σ_p w_p x_p x_pᵀ with x_p = e_i − e_j."""
    W = np.zeros((m.K, m.K))
    W[m.i, m.j] = w
    W = W + W.T
    return np.diag(W.sum(axis=1)) - W


def _vector(s: np.ndarray, m: PairMoments) -> np.ndarray:
    """Σ_p s_p x_p."""
    return np.bincount(m.i, weights=s, minlength=m.K) - np.bincount(m.j, weights=s, minlength=m.K)


def _bt_fit(m: PairMoments, lam: float, theta0: np.ndarray, l2: float = 1e-9, max_iter: int = 100) -> np.ndarray:
    """Minimise L_n(θ) + λ(L̃_N(θ) − L̃_n(θ)) (mean logistic losses) by damped Newton steps.

    The objective is Σ_p [c_p log(1 + e^{d_p}) − t_p d_p] with d_p = θ_i − θ_j, weights
    c_p = (1 − λ) n_p/n + λ N_p/N ≥ 0 (convex for λ in [0, 1]) and targets
    t_p = (Σy − λΣŷ)/n + λ Σŷ_unl/N; a tiny ridge fixes the common shift."""
    n = max(float(m.n.sum()), 1.0)
    N = float(m.N.sum())
    c = (1 - lam) * m.n / n + (lam * m.N / N if N > 0 else 0.0)
    t = (m.sy - lam * m.sh) / n + (lam * m.uh / N if N > 0 else 0.0)
    theta = theta0.copy()
    for _ in range(max_iter):
        d = theta[m.i] - theta[m.j]
        p = 1.0 / (1.0 + np.exp(-d))
        grad = _vector(c * p - t, m) + l2 * theta
        H = _laplacian(c * p * (1 - p), m) + l2 * np.eye(m.K)
        step = np.linalg.solve(H, grad)
        big = np.abs(step).max()
        if big > 3.0:
            step *= 3.0 / big
        theta = theta - step
        centred = step - step.mean()
        if np.abs(centred).max() < 1e-10:
            break
    return theta - theta.mean()


def _bt_pieces(m: PairMoments, theta: np.ndarray, small_sample: bool = False) -> dict[str, np.ndarray]:
    """Hessian on all units, and the per-battle gradient second moments (as Laplacians) and means
    (as vectors) that the sandwich and λ need. Per battle g = (σ − y) x, ĝ = (σ − ŷ) x.

    `small_sample`: also "hc", per pair 1/(1 − h_p) with h_p the leverage of one of its labelled
    battles in the human-label fit (HC2, MacKinnon & White 1985): residuals of battles of a rarely
    judged bot are shrunk by the fit, and the plain sandwich then under-covers that bot's score."""
    n, N = float(m.n.sum()), float(m.N.sum())
    s = 1.0 / (1.0 + np.exp(-(theta[m.i] - theta[m.j])))
    H = _laplacian((m.n + m.N) * s * (1 - s), m) / (n + N)
    hc = np.ones_like(s)
    if small_sample:
        P = np.linalg.pinv(_laplacian(m.n * s * (1 - s), m))
        lev = s * (1 - s) * (P[m.i, m.i] + P[m.j, m.j] - 2 * P[m.i, m.j])
        hc = 1.0 / (1.0 - np.clip(lev, 0.0, 0.9))
    return {
        "s": s,
        "hc": hc,
        "H": H,
        # labelled: Σ g gᵀ, Σ ĝ ĝᵀ, Σ g ĝᵀ (symmetric: x xᵀ times scalars), Σ g, Σ ĝ
        "gg": _laplacian(m.n * s * s - 2 * s * m.sy + m.syy, m),
        "hh": _laplacian(m.n * s * s - 2 * s * m.sh + m.shh, m),
        "gh": _laplacian(m.n * s * s - s * (m.sy + m.sh) + m.syh, m),
        "g": _vector(m.n * s - m.sy, m),
        "h": _vector(m.n * s - m.sh, m),
        # unlabelled: Σ ĝ ĝᵀ, Σ ĝ
        "uu": _laplacian(m.N * s * s - 2 * s * m.uh + m.uhh, m),
        "u": _vector(m.N * s - m.uh, m),
    }


def _cov(second: np.ndarray, first: np.ndarray, count: float) -> np.ndarray:
    """Sample covariance (ddof 1) from Σ v vᵀ and Σ v."""
    if count < 2:
        return np.zeros_like(second)
    return (second - np.outer(first, first) / count) / (count - 1)


def _bt_lambda(m: PairMoments, pc: dict[str, np.ndarray], Hinv: np.ndarray) -> float:
    """λ minimising the trace of the sandwich covariance (PPI++ eq. for M-estimators, as in ppi_py):
    tr(H⁻¹ (C + Cᵀ) H⁻¹) / (2 (1 + n/N) tr(H⁻¹ V(ĝ) H⁻¹)), C the (ddof 0) cross-covariance of g and
    ĝ on the labelled battles, V(ĝ) over all battles; clipped to [0, 1]."""
    n, N = float(m.n.sum()), float(m.N.sum())
    if N <= 0 or n < 2:
        return 0.0
    C = (pc["gh"] - np.outer(pc["g"], pc["h"]) / n) / n
    C = C + C.T
    Vh = _cov(pc["hh"] + pc["uu"], pc["h"] + pc["u"], n + N)
    denom = 2 * (1 + n / N) * np.trace(Hinv @ Vh @ Hinv)
    if denom <= 0:
        return 0.0
    return float(np.clip(np.trace(Hinv @ C @ Hinv) / denom, 0.0, 1.0))


def _bt_cov(m: PairMoments, pc: dict[str, np.ndarray], Hinv: np.ndarray, lam: float) -> np.ndarray:
    """H⁻¹ [V(g − λĝ) + (n/N) λ² V_unl(ĝ)] H⁻¹ / n (ddof 1, as ppi_py)."""
    n, N = float(m.n.sum()), float(m.N.sum())
    s, hc = pc["s"], pc["hc"]
    # Σ over labelled battles of (g − λĝ)(g − λĝ)ᵀ, each pair's residuals scaled by hc (1 without HC2)
    r2 = (m.n * s * s - 2 * s * m.sy + m.syy) - 2 * lam * (m.n * s * s - s * (m.sy + m.sh) + m.syh)
    r2 = r2 + lam**2 * (m.n * s * s - 2 * s * m.sh + m.shh)
    second = _laplacian(hc * r2, m)
    V = _cov(second, pc["g"] - lam * pc["h"], n)
    if N > 0 and lam > 0:
        V = V + (n / N) * lam**2 * _cov(pc["uu"], pc["u"], N)
    return Hinv @ V @ Hinv / n


def ppi_bradley_terry(
    moments: PairMoments,
    names: Sequence[str] | None = None,
    alpha: float = 0.05,
    lam: float | None = None,
    small_sample: bool = True,
) -> BTResult:
    """Judge-corrected Bradley–Terry log-strengths (natural log, mean zero) with the sandwich covariance.

    `moments` from :func:`pair_moments` (human + judge scores on the labelled battles, judge scores on
    the rest). `lam=None` tunes λ: fit at λ = 1, choose λ there (as ppi_py does), refit; `lam=0` is the
    human-only fit with the sandwich (robust) covariance. Scores on the Elo scale: 400/ln(10) · θ.
    The gauge (mean zero) is fixed by the pseudo-inverse of the Hessian, which has the common
    shift in its null space; differences θ_i − θ_j do not depend on it. `small_sample` (default)
    scales each labelled battle's residual by 1/(1 − leverage) (HC2) and makes the intervals
    Student-t with (a bot's human-labelled battles − 1) degrees of freedom, a heuristic that errs
    wide for rarely judged bots (a bot with fewer than two gets an infinite interval: the judge's
    labels alone cannot be corrected); False is the plain sandwich with normal quantiles of ppi_py.
    """
    m = moments
    K = m.K
    names = [str(k) for k in range(K)] if names is None else [str(x) for x in names]
    if len(names) != K:
        raise ValueError(f"{len(names)} names for {K} bots")
    n, N = int(m.n.sum()), int(m.N.sum())
    if n < 2:
        raise ValueError("need at least two human-labelled battles")
    lam0 = 1.0 if lam is None else float(lam)
    if N == 0:
        lam0 = 0.0
    theta = _bt_fit(m, lam0, np.zeros(K))
    if lam is None and N > 0:
        pc = _bt_pieces(m, theta)
        lam0 = _bt_lambda(m, pc, np.linalg.pinv(pc["H"]))
        theta = _bt_fit(m, lam0, theta)
    pc = _bt_pieces(m, theta, small_sample)
    cov = _bt_cov(m, pc, np.linalg.pinv(pc["H"]), lam0)
    dof = None
    if small_sample:
        per_bot = np.bincount(m.i, weights=m.n, minlength=K) + np.bincount(m.j, weights=m.n, minlength=K)
        dof = per_bot - 1.0
    return BTResult(names=names, theta=theta, cov=cov, lam=lam0, n=n, N=N, alpha=alpha, dof=dof)


# -- rank sets ---------------------------------------------------------------------------------------


def rank_sets(
    diff: np.ndarray, se: np.ndarray, alpha: float = 0.05, dof: np.ndarray | None = None
) -> list[tuple[int, int]]:
    """(best, worst) rank (1 = best) of each bot consistent with simultaneous intervals on the
    K(K−1)/2 differences (Bonferroni: each at level alpha / #pairs, two-sided). A bot's rank set runs
    from 1 + the number of bots shown better than it to K − the number shown worse. With probability
    ≥ 1 − alpha (asymptotically) every bot's true rank is in its set at once. `dof`: a K×K matrix of
    degrees of freedom for Student-t quantiles (None: normal)."""
    d, s = np.asarray(diff, float), np.asarray(se, float)
    K = d.shape[0]
    pairs = max(K * (K - 1) // 2, 1)
    z = _quantile(alpha / pairs, dof)
    with np.errstate(invalid="ignore"):
        better = (d - _half(z, s)) > 0  # i significantly above j
    np.fill_diagonal(better, False)
    above = better.sum(axis=0)  # bots shown better than j
    below = better.sum(axis=1)
    return [(int(1 + above[k]), int(K - below[k])) for k in range(K)]


# -- active allocation -------------------------------------------------------------------------------


def active_probabilities(uncertainty: ArrayLike, budget: float, mix: float = 0.2, floor: float = 1e-6) -> np.ndarray:
    """Probability of sending each unit to people, with expected total `budget` (Zrnic & Candès 2024,
    "Active statistical inference"): π_k ∝ sqrt(u_k), u_k the expected squared error of the judge on
    unit k: for a hard verdict the chance it is wrong, 1 − confidence (a judge asked in both side
    orders: higher when the two orders disagree); for a calibrated probability p used as ŷ, p(1 − p).
    Shares are capped at 1 with the excess handed to the others, then mixed with the uniform rule
    (share `mix`) so no weight 1/π_k explodes when the judge is wrongly confident. Any π > 0 keeps
    :func:`ppi_mean_active` unbiased; this choice minimises its variance when the uncertainties are
    right."""
    u = np.sqrt(np.clip(np.asarray(uncertainty, dtype=float), 0.0, None))
    M = len(u)
    if M == 0:
        return u
    budget = float(min(max(budget, 0.0), M))
    uniform = np.full(M, budget / M)
    if u.sum() <= 0:
        return uniform
    pi = np.zeros(M)
    free = np.ones(M, dtype=bool)
    left = budget
    for _ in range(M):  # water-filling: units whose share exceeds 1 are taken surely
        share = left * u[free] / max(u[free].sum(), 1e-300)
        if (share <= 1.0).all():
            pi[free] = share
            break
        capped = np.flatnonzero(free)[share > 1.0]
        pi[capped] = 1.0
        free[capped] = False
        left = budget - pi[~free].sum()
        if not free.any() or left <= 0:
            break
    pi = (1 - mix) * pi + mix * uniform
    return np.clip(pi, floor, 1.0)


def ppi_mean_active(
    yhat: ArrayLike,
    labeled: ArrayLike,
    y: ArrayLike,
    pi: ArrayLike,
    alpha: float = 0.05,
    lam: float | None = None,
) -> MeanResult:
    """Mean of the human score over M units when unit k was sent to people with probability π_k.

    `yhat`: the judge's score on every unit; `labeled`: whether people labelled it; `y`: the human
    score (ignored where not labelled); `pi`: the probabilities the units were drawn with. Each unit
    contributes z_k = λ ŷ_k + (y_k − λ ŷ_k) ξ_k / π_k (ξ_k = labelled), whose mean is unbiased for
    any λ; λ minimises the plug-in variance of z (clipped to [0, 1]); se = sd(z)/sqrt(M).
    """
    yh = np.asarray(yhat, dtype=float)
    xi = np.asarray(labeled, dtype=bool)
    yy = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    p = np.asarray(pi, dtype=float)
    M = len(yh)
    w = np.where(xi, 1.0 / p, 0.0)
    a = yy * w  # the human part
    b = yh * (1.0 - w)  # the judge part, times λ
    if lam is None:
        vb = b.var()
        lam_v = float(np.clip(-np.cov(a, b, ddof=0)[0, 1] / vb, 0.0, 1.0)) if vb > 0 else 0.0
    else:
        lam_v = float(lam)
    z = a + lam_v * b
    est, se = z.mean(), z.std(ddof=1) / np.sqrt(M)
    zc = a
    q = _z(alpha)
    return MeanResult(
        estimate=np.asarray(est),
        se=np.asarray(se),
        ci_low=np.asarray(est - q * se),
        ci_high=np.asarray(est + q * se),
        lam=np.asarray(lam_v),
        n=np.asarray(int(xi.sum())),
        N=np.asarray(M - int(xi.sum())),
        classical=np.asarray(zc.mean()),
        classical_se=np.asarray(zc.std(ddof=1) / np.sqrt(M)),
    )


# -- from battle lists -------------------------------------------------------------------------------


def battles_to_moments(
    model_a: Sequence[str], model_b: Sequence[str], human: ArrayLike, judge: ArrayLike
) -> tuple[list[str], PairMoments, dict[str, int]]:
    """(bot names, :class:`PairMoments`, counts) from one row per battle: the two bots, the human score
    of `model_a` (NaN = not labelled by people) and the judge's score (NaN = judge did not answer).

    Battles with both scores are the labelled set; with the judge's only, the unlabelled set;
    battles without the judge's score cannot take part (PPI needs the judge on the labelled units)
    and are counted in ``counts["human_without_judge"]``."""
    a = np.asarray([str(x) for x in model_a])
    b = np.asarray([str(x) for x in model_b])
    h = np.asarray(human, dtype=float)
    j = np.asarray(judge, dtype=float)
    names = sorted(set(a.tolist()) | set(b.tolist()))
    idx = {name: k for k, name in enumerate(names)}
    ia = np.asarray([idx[x] for x in a], dtype=int)
    ib = np.asarray([idx[x] for x in b], dtype=int)
    lab = ~np.isnan(h) & ~np.isnan(j)
    unl = np.isnan(h) & ~np.isnan(j)
    moments = pair_moments(len(names), ia[lab], ib[lab], h[lab], j[lab], ia[unl], ib[unl], j[unl])
    counts = {
        "labelled": int(lab.sum()),
        "judge_only": int(unl.sum()),
        "human_without_judge": int((~np.isnan(h) & np.isnan(j)).sum()),
    }
    return names, moments, counts
