"""Survival analysis for Spot The Bot (Deriu et al. 2020).

Data model
----------
Every (entity, segment, annotation) is one observation of the time T (in exchanges) until the
bot is spotted, given as a censoring interval ``(lower, upper]``:

* spotted in a segment of k exchanges  -> ``lower=0, upper=k``   (interval-censored in (0, k])
* not spotted (human / unsure)         -> ``lower=k, upper=inf`` (right-censored at k)
* an exactly observed time t           -> ``lower=upper=t``      (only used for validation)

Functions
---------
``turnbull_curves``       Turnbull (1976) NPMLE of S per system.
``generalized_logrank``   Zhao & Sun (2004) generalized log-rank test (R ``glrt::gLRT1``; the
                          released Spot The Bot R script called ``gLRT(mat, k = 2)`` whose
                          default method is ``"glrt1"``).
``pairwise_logrank``      all pairs, Bonferroni-adjusted.
``cox_features``          per-system Cox PH model of the spotting time on the three features, with
                          the robust (sandwich) variance computed here with Efron tie weights
                          (``cox_robust_variance``; lifelines' own ignores ties).

Why not lifelines for the Turnbull estimator: ``KaplanMeierFitter.fit_interval_censoring``
treats the intervals as closed ``[L, R]``, so an event in ``(0, k]`` and a right-censoring at
``k`` overlap at ``k`` and it puts mass *at* k that the ``(L, R]`` likelihood forbids (on the tiny
example of the tests it reports S(1) = 1.0 where the NPMLE is 0.5).  The estimator is therefore
written here: the self-consistency (EM) algorithm of Turnbull on the innermost intervals,
followed by a Newton polish on the support and a check of the Kuhn-Tucker conditions, which
gives the exact NPMLE (the plain EM converges only sublinearly when masses tend to 0).

Note on R's ``survfit(Surv(L, R, type = "interval2") ~ 1)``: it runs the same EM but stops as
soon as successive survival estimates change by less than 5e-5 (hard-coded), so on slowly
converging data it can be off the NPMLE by much more than 1e-4 (the tiny example in the tests:
R reports S(1) = 0.5069, the NPMLE is exactly 1/2).  On well-conditioned data the two agree to 4
decimals; see tests/stats/test_survival.py for the reference numbers.

This module imports nothing from dialeval.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import chdtrc as _chi2_sf  # chdtrc(df, x) = P(chi2_df > x)

__all__ = [
    "FEATURES",
    "cox_features",
    "cox_robust_variance",
    "efron_cox_pieces",
    "generalized_logrank",
    "logrank_exact",
    "pairwise_logrank",
    "turnbull_curves",
    "turnbull_npmle",
]

FEATURES: tuple[str, ...] = ("fluency", "sensibleness", "specificity")

# Type codes that order endpoints sharing one value: an exact observation t is the degenerate
# interval [t, t], whose left end sorts *before* the right ends at t; an ordinary left end L of
# (L, R] sorts *after* the right ends at L (the interval is open at L).
_EXACT_LEFT, _RIGHT, _OPEN_LEFT = 0, 1, 2


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


def _as_intervals(lower, upper) -> tuple[np.ndarray, np.ndarray]:
    lo = np.asarray(lower, dtype=float).ravel()
    hi = np.asarray(upper, dtype=float).ravel()
    if lo.shape != hi.shape:
        raise ValueError("lower and upper must have the same length")
    hi = np.where(np.isnan(hi), np.inf, hi)  # R's interval2 convention: NA upper = right-censored
    lo = np.where(np.isnan(lo), 0.0, lo)  # NA lower = left-censored = (0, R] for times > 0
    if np.any(lo < 0):
        raise ValueError("lower must be >= 0")
    if np.any(hi < lo):
        raise ValueError("upper must be >= lower")
    if np.any(np.isinf(lo)):
        raise ValueError("lower must be finite")
    if np.any((lo == 0) & np.isinf(hi)):
        raise ValueError("an observation (0, inf] carries no information")
    return lo, hi


def _keys(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left and right endpoint keys as (value, type) pairs, encoded in two arrays."""
    exact = lo == hi
    lcode = np.where(exact, _EXACT_LEFT, _OPEN_LEFT)
    return np.stack([lo, lcode]), np.stack([hi, np.full(hi.shape, _RIGHT)])


def _key_le(a_val, a_code, b_val, b_code):
    return (a_val < b_val) | ((a_val == b_val) & (a_code <= b_code))


class _Turnbull:
    """Innermost (Turnbull) intervals, the incidence matrix and the NPMLE masses."""

    def __init__(self, lower, upper):
        lo, hi = _as_intervals(lower, upper)
        if lo.size == 0:
            raise ValueError("no observations")
        self.lower, self.upper = lo, hi
        # unique observations with counts
        obs = pd.DataFrame({"lo": lo, "hi": hi}).value_counts(sort=False).reset_index(name="w")
        self.ulo = obs["lo"].to_numpy(float)
        self.uhi = obs["hi"].to_numpy(float)
        self.w = obs["w"].to_numpy(float)
        # the endpoint keys of the distinct observations: the same set as of all of them
        lkey, rkey = _keys(self.ulo, self.uhi)
        # all endpoint keys, sorted; innermost intervals = a left key directly followed by a right key
        vals = np.concatenate([lkey[0], rkey[0]])
        codes = np.concatenate([lkey[1], rkey[1]])
        uniq = sorted(set(zip(vals.tolist(), codes.tolist())))
        ql, qc, pr = [], [], []
        for (v1, c1), (v2, c2) in itertools.pairwise(uniq):
            if c1 != _RIGHT and c2 == _RIGHT:
                ql.append(v1)
                qc.append(c1)
                pr.append(v2)
        self.q = np.array(ql, dtype=float)  # left ends of innermost intervals
        self.qcode = np.array(qc, dtype=int)
        self.p = np.array(pr, dtype=float)  # right ends
        self.A = self.incidence(self.ulo, self.uhi)
        self.mass = _npmle(self.A, self.w)

    def incidence(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """alpha[i, j] = 1 if innermost interval j lies inside observation i's interval."""
        lkey, rkey = _keys(lo, hi)
        inside_left = _key_le(lkey[0][:, None], lkey[1][:, None], self.q[None, :], self.qcode[None, :])
        inside_right = _key_le(self.p[None, :], _RIGHT, rkey[0][:, None], _RIGHT)
        return (inside_left & inside_right).astype(float)

    def survival_at(self, t: np.ndarray) -> np.ndarray:
        """S(t) = P(T > t); identified at every endpoint value of the data."""
        t = np.asarray(t, dtype=float)
        cdf = (self.mass[None, :] * (self.p[None, :] <= t[:, None])).sum(axis=1)
        return np.clip(1.0 - cdf, 0.0, 1.0)


def _loglik(A, w, p) -> float:
    with np.errstate(divide="ignore"):
        return float(w @ np.log(A @ p))


def _npmle(A: np.ndarray, w: np.ndarray, em_tol: float = 1e-10, max_em: int = 3000) -> np.ndarray:
    """Turnbull NPMLE of the masses on the innermost intervals (columns of A).

    1. Self-consistency / EM (Turnbull 1976), at most ``max_em`` sweeps:
       p_j <- p_j * sum_i w_i A_ij / (A_i p) / n.
    2. Newton polish: on the support found by EM maximise sum_i w_i log(A_i p) - n sum(p)
       (its stationary point has sum(p) = 1), dropping masses that want to go negative and
       re-adding intervals that violate the Kuhn-Tucker condition
       sum_i w_i A_ij / (A_i p) <= n.  The polished solution is kept only if it satisfies
       the Kuhn-Tucker conditions and its likelihood is not below the EM one.
    """
    n = float(w.sum())
    m = A.shape[1]
    p = np.full(m, 1.0 / m)
    for _ in range(max_em):
        grad = A.T @ (w / (A @ p))
        new = p * grad / n
        done = np.max(np.abs(new - p)) < em_tol
        p = new
        if done:
            break
    p_em = p / p.sum()
    polished = _polish(A, w, p_em.copy())
    best = p_em
    if polished is not None and _loglik(A, w, polished) >= _loglik(A, w, p_em) - 1e-9:
        best = polished
    best = np.where(best < 1e-10, 0.0, best)  # numerical dust
    return best / best.sum()


def _polish(A, w, p) -> np.ndarray | None:
    try:
        with np.errstate(all="ignore"):
            out = _polish_unsafe(A, w, p)
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return None
    if out is None or not np.all(np.isfinite(out)) or np.any(A @ out <= 0):
        return None
    return out


def _polish_unsafe(A, w, p) -> np.ndarray | None:
    n = float(w.sum())
    support = p > 1e-7 * p.max()
    for _outer in range(50):
        idx = np.flatnonzero(support)
        ps = p[idx] / p[idx].sum()
        As = A[:, idx]
        if np.any(As.sum(axis=1) == 0):  # an observation lost all its support: give up
            return None
        dropped = False
        for _ in range(200):
            q = As @ ps
            g = As.T @ (w / q) - n
            if np.max(np.abs(g)) < 1e-11 * n:
                break
            H = As.T @ ((w / q**2)[:, None] * As)
            d = np.linalg.lstsq(H, g, rcond=None)[0]
            target = ps + d
            if np.any(target <= 0):
                # the restricted optimum lies outside the support: drop the first mass to hit 0
                ratio = np.where(d < 0, -ps / np.where(d < 0, d, -1.0), np.inf)
                j = int(np.argmin(ratio))
                support[idx[j]] = False
                p[:] = 0.0
                keep = np.delete(idx, j)
                p[keep] = ps[np.arange(len(idx)) != j]
                dropped = True
                break
            f0 = w @ np.log(q) - n * ps.sum()
            step = 1.0
            while step > 1e-12:
                cand = ps + step * d
                if np.all(cand > 0) and w @ np.log(As @ cand) - n * cand.sum() >= f0 - 1e-12 * n:
                    break
                step /= 2
            ps = cand
        if dropped:
            if not support.any():
                return None
            continue
        p[:] = 0.0
        p[idx] = ps
        p /= p.sum()
        # Kuhn-Tucker check over all intervals
        g_all = A.T @ (w / (A @ p)) - n
        viol = (~support) & (g_all > 1e-8 * n)
        if not viol.any():
            if np.max(np.abs(g_all[support])) > 1e-7 * n:
                return None
            return p
        j = int(np.argmax(np.where(viol, g_all, -np.inf)))
        support[j] = True
        p[j] = 1e-3
        p /= p.sum()
    return None


def turnbull_npmle(lower, upper) -> pd.DataFrame:
    """Innermost intervals (left, right] and the NPMLE mass on each (for inspection)."""
    tb = _Turnbull(lower, upper)
    return pd.DataFrame({"left": tb.q, "right": tb.p, "mass": tb.mass})


def turnbull_curves(df: pd.DataFrame) -> dict[str, list[tuple[float, float]]]:
    """Turnbull NPMLE survival function per system.

    ``df`` has columns ``system``, ``lower``, ``upper`` (observations ``(lower, upper]``;
    ``upper = inf`` (or NaN) = right-censored at ``lower``; ``lower == upper`` = exact).

    Returns ``{system: [(0.0, 1.0), (t1, S(t1)), (t2, S(t2)), ...]}`` where t1 < t2 < ... are
    the distinct finite positive endpoint values of that system's data: S is a right-continuous
    step function, ``S(t) = P(T > t)``.  S is identified at these points only (between them
    the NPMLE only fixes how much mass falls in each innermost interval), which is all that
    Spot The Bot needs (the values at the segment lengths k).  The estimate agrees with R's
    ``summary(survfit(Surv(lower, upper, type = "interval2") ~ 1), times = t)`` up to R's own
    stopping tolerance (see the module docstring).
    """
    _require_columns(df, ["system", "lower", "upper"])
    out: dict[str, list[tuple[float, float]]] = {}
    for system, sub in df.groupby("system", sort=True):
        tb = _Turnbull(sub["lower"], sub["upper"])
        vals = np.concatenate([tb.lower, tb.upper])
        times = np.unique(vals[np.isfinite(vals) & (vals > 0)])
        surv = tb.survival_at(times)
        out[str(system)] = [(0.0, 1.0)] + [(float(t), float(s)) for t, s in zip(times, surv)]
    return out


# --------------------------------------------------------------------------------------------
# Log-rank tests
# --------------------------------------------------------------------------------------------


def _group_codes(group) -> tuple[np.ndarray, list]:
    g = pd.Series(np.asarray(group, dtype=object).ravel())
    levels = sorted(g.unique(), key=lambda v: str(v))
    codes = g.map({lvl: i for i, lvl in enumerate(levels)}).to_numpy(int)
    return codes, levels


def _logrank_uv(time: np.ndarray, event: np.ndarray, codes: np.ndarray, k: int):
    """Ordinary k-sample log-rank: U = observed - expected per group and its hypergeometric
    covariance V (as R's survdiff with rho = 0).  Censored at t are at risk at t."""
    order = np.argsort(time, kind="stable")
    time, event, codes = time[order], event[order], codes[order]
    ev_times = np.unique(time[event])
    if ev_times.size == 0:
        return np.zeros(k), np.zeros((k, k))
    onehot = np.eye(k)[codes]  # n x k
    # at risk at t: time >= t
    pos = np.searchsorted(time, ev_times, side="left")
    cum_from_end = np.vstack([np.cumsum(onehot[::-1], axis=0)[::-1], np.zeros((1, k))])
    n_jk = cum_from_end[pos]  # (#event times) x k
    d_onehot = onehot * event[:, None]
    d_jk = np.zeros((ev_times.size, k))
    idx = np.searchsorted(ev_times, time[event])
    np.add.at(d_jk, idx, d_onehot[event])
    n_j = n_jk.sum(axis=1)
    d_j = d_jk.sum(axis=1)
    u = (d_jk - n_jk * (d_j / n_j)[:, None]).sum(axis=0)
    frac = n_jk / n_j[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where(n_j > 1, d_j * (n_j - d_j) / (n_j - 1), 0.0)
    v = np.einsum("j,ja,jb->ab", c, frac, frac) * -1.0
    v[np.diag_indices(k)] += (c[:, None] * frac).sum(axis=0)
    return u, v


def _logrank_uv_grid(slot: np.ndarray, event: np.ndarray, codes: np.ndarray, k: int, n_slots: int):
    """:func:`_logrank_uv` for times given as ``slot``, their positions on a sorted grid of the
    distinct times: counts by bincount instead of a sort, for the imputation loop of
    :func:`_zhao_sun` (the same integer counts at the same event times, so the same U and V)."""
    at = np.bincount(slot * k + codes, minlength=n_slots * k).reshape(n_slots, k).astype(float)
    died = np.bincount(slot[event] * k + codes[event], minlength=n_slots * k).reshape(n_slots, k).astype(float)
    is_event_time = died.sum(axis=1) > 0
    if not is_event_time.any():
        return np.zeros(k), np.zeros((k, k))
    # at risk at t: time >= t
    n_jk = np.cumsum(at[::-1], axis=0)[::-1][is_event_time]
    d_jk = died[is_event_time]
    n_j = n_jk.sum(axis=1)
    d_j = d_jk.sum(axis=1)
    u = (d_jk - n_jk * (d_j / n_j)[:, None]).sum(axis=0)
    frac = n_jk / n_j[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where(n_j > 1, d_j * (n_j - d_j) / (n_j - 1), 0.0)
    v = np.einsum("j,ja,jb->ab", c, frac, frac) * -1.0
    v[np.diag_indices(k)] += (c[:, None] * frac).sum(axis=0)
    return u, v


def _chisq(u: np.ndarray, v: np.ndarray) -> float:
    k = u.size
    uu, vv = u[: k - 1], v[: k - 1, : k - 1]
    if not np.all(np.isfinite(vv)) or np.allclose(vv, 0.0):
        return 0.0
    return float(uu @ np.linalg.pinv(vv) @ uu)


def logrank_exact(time, event, group) -> tuple[float, int, float]:
    """Ordinary k-sample log-rank test (survdiff, rho = 0) for right-censored exact data."""
    t = np.asarray(time, dtype=float).ravel()
    e = np.asarray(event, dtype=bool).ravel()
    codes, levels = _group_codes(group)
    k = len(levels)
    u, v = _logrank_uv(t, e, codes, k)
    stat = _chisq(u, v)
    return stat, k - 1, float(_chi2_sf(k - 1, stat))


def _zhao_sun(lo, hi, codes, k, M, seed):
    """Zhao & Sun (2004) statistic U (length k, sums to 0) and its multiple-imputation
    covariance (k x k); see ``generalized_logrank``."""
    tb = _Turnbull(lo, hi)
    f = tb.mass
    # an observation's row of the incidence matrix depends on its interval alone: computed per
    # distinct interval and read per observation (the same 0/1 values, for a fraction)
    pattern = pd.DataFrame({"lo": lo, "hi": hi}).groupby(["lo", "hi"], sort=False).ngroup().to_numpy()
    first = np.unique(pattern, return_index=True)[1]
    alpha = tb.incidence(lo[first], hi[first])[pattern]  # n x m
    right = np.isinf(hi)
    m = f.size

    # expected deaths per observation and interval (right-censored: none)
    dens = alpha * f[None, :]
    tot = dens.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        death = np.where(right[:, None], 0.0, dens / np.where(tot > 0, tot, 1.0))
    # right-censored at L are at risk in I_j iff I_j is not inside (L, inf)
    at_risk_rc = np.where(right[:, None], 1.0 - alpha, 0.0)
    onehot = np.eye(k)[codes]  # n x k
    d_gj = onehot.T @ death  # k x m
    tail = np.cumsum(d_gj[:, ::-1], axis=1)[:, ::-1]  # deaths in I_j and later
    n_gj = tail + onehot.T @ at_risk_rc
    d_j, n_j = d_gj.sum(axis=0), n_gj.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        contrib = np.where(n_j > 0, d_gj - n_gj * d_j / n_j, 0.0)
    u = contrib.sum(axis=1)

    # multiple-imputation covariance
    rng = np.random.default_rng(seed)
    imp_idx = np.flatnonzero(~right)
    probs = dens[imp_idx] / tot[imp_idx]
    cum = np.cumsum(probs, axis=1)
    cum[:, -1] = 1.0
    event = ~right
    # every imputed time is one of tb.p, every other is its own lower bound: index them on one grid
    grid = np.unique(np.concatenate([tb.p, lo[right]]))
    slot = np.searchsorted(grid, lo)
    p_slot = np.searchsorted(grid, tb.p)
    # a draw counts the entries of the row of cum below a uniform; the rows of one interval are the
    # same numbers, so each is counted by a binary search in its sorted row (the same counts)
    imp_pattern = pattern[imp_idx]
    groups = []
    for p in np.unique(imp_pattern):
        members = np.flatnonzero(imp_pattern == p)
        groups.append((members, np.sort(cum[members[0]])))
    us = np.zeros((M, k))
    vsum = np.zeros((k, k))
    for b in range(M):
        uniform = rng.random(imp_idx.size)
        draw = np.empty(imp_idx.size, dtype=int)
        for members, row in groups:
            draw[members] = np.searchsorted(row, uniform[members], side="left")
        draw = np.minimum(draw, m - 1)
        slot[imp_idx] = p_slot[draw]
        ub, vb = _logrank_uv_grid(slot, event, codes, k, grid.size)
        us[b] = ub
        vsum += vb
    v = vsum / M + (1.0 + 1.0 / M) * np.cov(us, rowvar=False, ddof=1)
    return u, v


def generalized_logrank(
    lower, upper, group, *, n_imputations: int = 50, seed: int | None = 0
) -> tuple[float, int, float]:
    """Generalized log-rank test for interval-censored data: Zhao & Sun (2004).

    Q. Zhao and J. Sun (2004), "Generalized log-rank test for mixed interval-censored failure
    time data", Statistics in Medicine 23: 1621-1629 -- the test that R's ``glrt::gLRT1`` (and
    ``gLRT(A, k)`` with its default ``method = "glrt1"``, as called by the released Spot The Bot
    script ``analysis/survival.R``) computes.  Observations are ``(lower, upper]``;
    ``upper = inf`` is right-censored at ``lower``; ``lower == upper`` is an exact time.

    * Ŝ = Turnbull NPMLE of the pooled sample (the null hypothesis), masses f_j on the innermost
      intervals I_j.
    * Each interval-censored or exact observation contributes its conditional expected number
      of deaths in I_j, alpha_ij f_j / sum_l alpha_il f_l; a right-censored observation
      contributes no death and is at risk in every I_j that does not lie beyond its censoring
      time.  At risk n_j = expected deaths in I_j and later + right-censored still at risk.
    * U_g = sum_j (d_gj - n_gj d_j / n_j) per group (log-rank form).
    * Cov(U) by multiple imputation (the paper's variance estimator): ``n_imputations`` times,
      draw each interval-censored time from Ŝ restricted to its interval (placed at the right
      end of the drawn innermost interval), keep right-censored ones censored, and compute the
      ordinary log-rank U^(b) and V^(b); Cov(U) = mean V^(b) + (1 + 1/M) * sample-cov(U^(b)).
    * statistic = U' V^- U over the first k - 1 groups, chi-square with k - 1 df.

    The variance is random (as in R, where two runs differ); ``seed`` makes it reproducible.
    With exact (non-censored-in-interval) data the imputations are deterministic and the test
    is the ordinary log-rank test (R ``survdiff``), which the tests check.

    Returns ``(statistic, df, p)``.  With no events at all the statistic is 0 and p = 1.
    """
    lo, hi = _as_intervals(lower, upper)
    codes, levels = _group_codes(group)
    if codes.size != lo.size:
        raise ValueError("group must have the same length as lower/upper")
    k = len(levels)
    if k < 2:
        raise ValueError("need at least two groups")
    if int(n_imputations) < 2:
        raise ValueError("n_imputations must be >= 2")
    u, v = _zhao_sun(lo, hi, codes, k, int(n_imputations), seed)
    stat = _chisq(u, v)
    return stat, k - 1, float(_chi2_sf(k - 1, stat))


def pairwise_logrank(df: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """Generalized log-rank test for every pair of systems, Bonferroni-adjusted.

    ``df`` has columns ``system``, ``lower``, ``upper``.  Pairs (a, b) with a < b in sorted
    order; ``p_adjusted = min(1, p * m)`` with m = number of pairs (as the released R script,
    which compares p with 0.05 / m).  ``kwargs`` go to ``generalized_logrank``.
    """
    _require_columns(df, ["system", "lower", "upper"])
    systems = sorted(df["system"].unique(), key=str)
    pairs = list(itertools.combinations(systems, 2))
    rows = []
    for a, b in pairs:
        sub = df[df["system"].isin([a, b])]
        stat, _dof, p = generalized_logrank(sub["lower"], sub["upper"], sub["system"], **kwargs)
        rows.append({"a": a, "b": b, "statistic": stat, "p": p})
    out = pd.DataFrame(rows, columns=["a", "b", "statistic", "p"])
    out["p_adjusted"] = np.minimum(1.0, out["p"] * len(pairs))
    return out


# --------------------------------------------------------------------------------------------
# Cox model
# --------------------------------------------------------------------------------------------


def efron_cox_pieces(duration, event, X, beta) -> tuple[np.ndarray, np.ndarray]:
    """Score residuals (n x p) and observed information (p x p) of a Cox model with Efron ties at
    ``beta``.

    Written here because lifelines (0.30) computes its robust ("Wei-Lin") variance from score
    residuals that ignore ties (its docstring says so): with Spot The Bot's 3 distinct durations
    almost every death is tied and the sandwich p-values moved by up to 0.08 against R.

    At a death time t with d tied deaths D, risk set R, r_i = exp(x_i'beta), Efron's j-th term
    (j = 0..d-1) has denominator S0_j = sum_R r - (j/d) sum_D r and weighted mean
    xbar_j = (sum_R r x - (j/d) sum_D r x) / S0_j.  Subject i's score residual collects, over the
    death times it is at risk at,

    * if it dies at t: (1/d) sum_j (x_i - xbar_j)                      (its observed event)
    * minus sum_j c_ij r_i (x_i - xbar_j) / S0_j with c_ij = 1 for a subject that survives t
      and 1 - j/d for a tied death                                    (its Efron hazard share)

    (Therneau & Grambsch 2000, sec. 7.2 / R survival's ``residuals(fit, "score")``).  The rows sum
    to the total score (0 at the MLE).  The information is sum_t sum_j [S2_j / S0_j - xbar_j xbar_j'].
    Residuals and information do not depend on centring X, which is done for exp's sake.
    """
    t = np.asarray(duration, dtype=float).ravel()
    e = np.asarray(event, dtype=bool).ravel()
    x = np.asarray(X, dtype=float)
    x = x.reshape(len(t), -1) - x.reshape(len(t), -1).mean(axis=0)
    b = np.asarray(beta, dtype=float).ravel()
    eta = x @ b
    r = np.exp(eta - eta.max())  # a common factor cancels in every ratio below
    n, k = x.shape
    resid = np.zeros((n, k))
    info = np.zeros((k, k))
    for time in np.unique(t[e]):
        at_risk = t >= time
        dead = e & (t == time)
        d = int(dead.sum())
        frac = np.arange(d) / d
        s0 = r[at_risk].sum() - frac * r[dead].sum()  # (d,)
        s1 = r[at_risk] @ x[at_risk] - frac[:, None] * (r[dead] @ x[dead])  # (d, k)
        xr, xd = x[at_risk] * r[at_risk, None], x[dead] * r[dead, None]
        s2 = (xr.T @ x[at_risk])[None] - frac[:, None, None] * (xd.T @ x[dead])[None]  # (d, k, k)
        xbar = s1 / s0[:, None]
        info += (s2 / s0[:, None, None] - xbar[:, :, None] * xbar[:, None, :]).sum(axis=0)
        haz = 1.0 / s0
        resid[dead] += x[dead] - xbar.mean(axis=0)
        survivors = at_risk & ~dead
        resid[survivors] -= r[survivors, None] * (x[survivors] * haz.sum() - haz @ xbar)
        w = (1.0 - frac) * haz
        resid[dead] -= r[dead, None] * (x[dead] * w.sum() - w @ xbar)
    return resid, info


def cox_robust_variance(duration, event, X, beta) -> tuple[np.ndarray, np.ndarray]:
    """``(model_variance, robust_variance)`` of a Cox model with Efron ties at ``beta``.

    Robust = the dfbeta sandwich D'D with D = score residuals x inverse information, each
    observation its own cluster: R ``coxph(..., ties = "efron", robust = TRUE)``'s ``fit$var``
    (``fit$naive.var`` is the model variance).  See :func:`efron_cox_pieces`.
    """
    resid, info = efron_cox_pieces(duration, event, X, beta)
    model = np.linalg.inv(info)
    dfbeta = resid @ model
    return model, dfbeta.T @ dfbeta


def cox_features(df: pd.DataFrame, features: Sequence[str] = FEATURES) -> pd.DataFrame:
    """Per-system Cox proportional hazards model of the spotting time on the features.

    ``df`` has columns ``system``, ``lower``, ``upper`` and the feature columns (default
    ``fluency``, ``sensibleness``, ``specificity``; each +1 better / 0 tie / -1 worse than the
    other entity).  Follows the released ``analysis/cox.py`` of Spot The Bot: a Cox model with a
    robust (sandwich) variance per system where event = spotted and duration = the segment length
    k (= ``upper`` if spotted, ``lower`` otherwise), i.e. the spotting time of an
    interval-censored event (0, k] is set to k.  (The released R script also tried icenReg's
    interval-censored ``ic_sp``; that is not reproduced here.)  Negative coef = lower hazard =
    longer survival.

    Coefficients: lifelines ``CoxPHFitter`` (Efron ties).  Variance: the robust dfbeta sandwich
    with Efron weights for tied deaths (:func:`cox_robust_variance`), as R
    ``coxph(Surv(duration, event) ~ fluency + sensibleness + specificity, ties = "efron",
    robust = TRUE)``; ``p`` is the two-sided Wald p on the robust SE (R's ``Pr(>|z|)``).  The
    released code's lifelines ``robust=True`` ignores ties in the sandwich; with only 2-3
    distinct segment lengths nearly every event is tied and its p-values differ from R's by up to
    0.08 (4 of the 27 decisions at 0.05 on the released DailyDialog and Empathetic data flip).

    Returns columns ``system, feature, coef, se, robust_se, p, note`` (``se`` = model-based).
    Degenerate systems do not raise: with no event (or no censoring), a constant covariate or a
    failed fit the coefficient and p are NaN and ``note`` says why (constant covariates are left
    out of that system's model).
    """
    from lifelines import CoxPHFitter  # local: importing lifelines is slow
    from scipy.special import ndtr

    features = list(features)
    _require_columns(df, ["system", "lower", "upper", *features])
    nan4 = (math.nan,) * 4
    rows = []
    for system, sub in df.groupby("system", sort=True):
        lo, hi = _as_intervals(sub["lower"], sub["upper"])
        event = np.isfinite(hi) & (lo < hi) | (lo == hi)
        duration = np.where(np.isfinite(hi), hi, lo)
        X = sub[features].astype(float).reset_index(drop=True)
        result = {f: (*nan4, "") for f in features}
        if event.sum() == 0:
            result = {f: (*nan4, "no spotted events") for f in features}
        elif np.isnan(X.to_numpy()).any():
            result = {f: (*nan4, "missing feature values") for f in features}
        else:
            usable = [f for f in features if X[f].nunique() > 1]
            for f in features:
                if f not in usable:
                    result[f] = (*nan4, "constant covariate")
            if usable:
                data = X[usable].copy()
                data["_duration"] = duration
                data["_event"] = event.astype(int)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        cph = CoxPHFitter().fit(data, duration_col="_duration", event_col="_event")
                    beta = cph.params_.loc[usable].to_numpy(float)
                    model, robust = cox_robust_variance(duration, event, X[usable].to_numpy(float), beta)
                    se = np.sqrt(np.diag(model))
                    rse = np.sqrt(np.diag(robust))
                    p = 2.0 * ndtr(-np.abs(beta / rse))
                    for i, f in enumerate(usable):
                        values = (float(beta[i]), float(se[i]), float(rse[i]), float(p[i]))
                        note = "" if all(np.isfinite(values)) else "non-finite estimate"
                        result[f] = (*values, note)
                except Exception as exc:  # noqa: BLE001 -- convergence failure, singular design, ...
                    for f in usable:
                        result[f] = (*nan4, f"fit failed: {type(exc).__name__}")
        for f in features:
            coef, se_, rse_, p_, note = result[f]
            rows.append(
                {"system": system, "feature": f, "coef": coef, "se": se_, "robust_se": rse_, "p": p_, "note": note}
            )
    return pd.DataFrame(rows, columns=["system", "feature", "coef", "se", "robust_se", "p", "note"])


def _require_columns(df: pd.DataFrame, cols: Sequence[str]) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"missing columns: {missing}")
