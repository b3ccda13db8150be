"""Bradley–Terry ratings on an Elo-like scale, fitted on aggregated win counts.

Votes are first aggregated into a bots×bots matrix W where W[i, j] is the number of times i
beat j (a tie counts as half a win for each side, as in Chatbot Arena's MLE Elo). The model is

    P(i beats j) = 1 / (1 + BASE ** ((R_j - R_i) / SCALE)),   R = INIT + SCALE * theta / ln(BASE)

and theta is found by damped Newton steps on the concave log-likelihood of the aggregated
counts (a small ridge `l2` keeps it finite when a bot won or lost every vote). The work is
O(bots²) per step, independent of the number of votes.

Confidence intervals come from a bootstrap that draws the aggregated counts from a multinomial
over (pair, outcome) cells with the observed frequencies, which is the same distribution as
resampling the votes with replacement, without touching the votes again. All rounds are fitted
together as one batched Newton iteration warm-started at the full-data fit.

This module imports nothing from dialeval.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from contextlib import nullcontext

import numpy as np
import pandas as pd

__all__ = ["aggregate_votes", "bootstrap_bt", "bradley_terry", "ci_rank", "fit_bt", "to_elo"]

_TIES = {"tie", "tie (bothbad)", "draw", "both", "neither", "none", "nan", ""}
_A_ALIASES = {"a", "model_a", "left"}
_B_ALIASES = {"b", "model_b", "right"}

try:  # OpenBLAS threads fighting over many tiny 100x100 solves are slower than one thread
    from threadpoolctl import ThreadpoolController  # installed with scikit-learn
except ImportError:  # pragma: no cover
    ThreadpoolController = None

# threadpool_limits() scans every shared library of the process on each call (2 ms each once
# matplotlib and pyarrow are loaded; a small report makes 66 calls). The scan is kept and redone
# only when modules were imported since, as a new extension may have brought a BLAS of its own.
_controller: tuple[int, object] | None = None


def one_blas_thread():
    global _controller
    if ThreadpoolController is None:  # pragma: no cover
        return nullcontext()
    if _controller is None or _controller[0] != len(sys.modules):
        _controller = (len(sys.modules), ThreadpoolController())
    return _controller[1].limit(limits=1, user_api="blas")


def aggregate_votes(
    df: pd.DataFrame, a: str = "a", b: str = "b", winner: str = "winner"
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Aggregate votes into (names, wins, ties).

    `wins[i, j]` counts decisive votes won by i against j; `ties[i, j]` (symmetric) counts ties.
    `winner` holds the winning bot's name, 'a'/'model_a'/'left', 'b'/'model_b'/'right', or a tie
    ('tie', 'tie (bothbad)', 'draw', missing). Accepts Arena column names (model_a, model_b) when
    `a`/`b` are missing. Votes of a bot against itself carry no information and are dropped.
    """
    if a not in df.columns and "model_a" in df.columns:
        a, b = "model_a", "model_b"
    n = len(df)
    codes, uniques = pd.factorize(pd.concat([df[a], df[b]], ignore_index=True).astype(str), sort=True)
    names = pd.Index([str(x) for x in uniques])
    ia, ib = codes[:n], codes[n:]
    # winner: few distinct values, so classify the categories and broadcast by code
    wcodes, wcats = pd.factorize(df[winner].astype(object).where(df[winner].notna(), "tie").astype(str))
    kind = np.full(len(wcats), -1)  # 0 tie, 1 a-alias, 2 b-alias, 3 bot name, -1 unknown
    name_of = names.get_indexer(wcats)
    for i, c in enumerate(wcats):
        low = c.lower().strip()
        kind[i] = (
            0 if low in _TIES else 1 if low in _A_ALIASES else 2 if low in _B_ALIASES else 3 if name_of[i] >= 0 else -1
        )
    k_row = kind[wcodes]
    score = np.full(n, np.nan)
    score[k_row == 0] = 0.5
    score[k_row == 1] = 1.0
    score[k_row == 2] = 0.0
    named = k_row == 3
    wn = name_of[wcodes]
    score[named & (wn == ia)] = 1.0
    score[named & (wn == ib)] = 0.0
    bad = np.isnan(score)
    if bad.any():
        examples = sorted(set(df[winner].astype(str).to_numpy()[bad][:5].tolist()))
        raise ValueError(
            f"{int(bad.sum())} votes have a winner that is neither bot, 'a'/'b'/'model_a'/'model_b' "
            f"nor a tie: {examples}"
        )
    keep = ia != ib
    ia, ib, score = ia[keep], ib[keep], score[keep]
    k = len(names)
    wins = np.bincount((ia * k + ib)[score == 1.0], minlength=k * k).reshape(k, k)
    wins = wins + np.bincount((ib * k + ia)[score == 0.0], minlength=k * k).reshape(k, k)
    ties = np.bincount((ia * k + ib)[score == 0.5], minlength=k * k).reshape(k, k)
    ties = ties + ties.T
    return list(names), wins.astype(float), ties.astype(float)


def newton(W: np.ndarray, theta0: np.ndarray, l2: float, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """Maximise sum_ij W_ij log sigmoid(t_i - t_j) - l2/2 |t|^2, batched over the first axis.

    W has shape (B, K, K) (half-wins already folded in); theta0 (B, K).
    """
    with one_blas_thread():
        return newton_loop(W, theta0, l2, tol, max_iter)


def newton_loop(W: np.ndarray, theta0: np.ndarray, l2: float, tol: float, max_iter: int) -> np.ndarray:
    B, K, _ = W.shape
    N = W + np.transpose(W, (0, 2, 1))
    wins = W.sum(axis=2)
    theta = theta0.copy()
    eye = np.eye(K)
    active = np.ones(B, dtype=bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        t = theta[idx]
        d = t[:, :, None] - t[:, None, :]
        p = 1.0 / (1.0 + np.exp(-d))
        Ni = N[idx]
        grad = wins[idx] - (Ni * p).sum(axis=2) - l2 * t
        w = Ni * p * (1.0 - p)
        # negative Hessian: Laplacian of w plus ridge (positive definite when l2 > 0)
        H = -w
        H[:, np.arange(K), np.arange(K)] += w.sum(axis=2) + l2
        if l2 <= 0:
            H = H + 1e-12 * eye  # gauge direction; the mean is fixed afterwards
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        big = np.abs(step).max(axis=1)
        step *= np.minimum(1.0, 3.0 / np.maximum(big, 1e-300))[:, None]  # damping far from optimum
        theta[idx] = t + step
        # Converged when the step *after removing its common shift* is small: the ratings are
        # reported centred, and with a tiny ridge the shift direction is nearly flat, so the raw
        # step keeps ~1e-7 of round-off there and never meets `tol` (every fit ran max_iter).
        centred = step - step.mean(axis=1, keepdims=True)
        active[idx[np.abs(centred).max(axis=1) < tol]] = False
    return theta


def fit_bt(wins: np.ndarray, ties: np.ndarray | None = None, l2: float = 1e-6) -> np.ndarray:
    """Natural-log strengths (mean zero) from aggregated counts; ties count as half wins."""
    W = np.asarray(wins, dtype=float)
    if ties is not None:
        W = W + 0.5 * np.asarray(ties, dtype=float)
    theta = newton(W[None], np.zeros((1, W.shape[0])), l2)[0]
    return theta - theta.mean()


def to_elo(theta: np.ndarray, scale: float = 400.0, base: float = 10.0, init: float = 1000.0) -> np.ndarray:
    return init + scale * np.asarray(theta) / math.log(base)


def bootstrap_bt(
    wins: np.ndarray,
    ties: np.ndarray | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    l2: float = 1e-6,
    theta0: np.ndarray | None = None,
    batch: int = 200,
) -> np.ndarray:
    """Bootstrap log-strengths (n_boot, K), mean zero per round.

    Each round draws all (pair, outcome) cell counts at once from Multinomial(N, observed shares),
    equivalent to resampling the N votes with replacement.
    """
    wins = np.asarray(wins, dtype=float)
    K = wins.shape[0]
    ties = np.zeros_like(wins) if ties is None else np.asarray(ties, dtype=float)
    iu = np.triu_indices(K, k=1)
    cells = np.concatenate([wins[iu], wins.T[iu], ties[iu]])  # i beats j | j beats i | tie
    total = round(cells.sum())
    if total == 0:
        return np.zeros((n_boot, K))
    nz = np.flatnonzero(cells > 0)
    pvals = cells[nz] / cells[nz].sum()
    rng = np.random.default_rng(seed)
    if theta0 is None:
        theta0 = fit_bt(wins, ties, l2)
    m = len(iu[0])
    out = np.empty((n_boot, K))
    for start in range(0, n_boot, batch):
        size = min(batch, n_boot - start)
        draws = np.zeros((size, 3 * m))
        draws[:, nz] = rng.multinomial(total, pvals, size=size)
        W = np.zeros((size, K, K))
        W[:, iu[0], iu[1]] = draws[:, :m] + 0.5 * draws[:, 2 * m :]
        W[:, iu[1], iu[0]] = draws[:, m : 2 * m] + 0.5 * draws[:, 2 * m :]
        th = _chord(W, theta0, l2)
        out[start : start + size] = th - th.mean(axis=1, keepdims=True)
    return out


def _chord(W: np.ndarray, theta0: np.ndarray, l2: float, tol: float = 1e-10, max_iter: int = 40) -> np.ndarray:
    """Fit every bootstrap round (W of shape (B, K, K)) from the full fit theta0 by Newton steps that
    reuse one matrix: the negative Hessian at theta0 with each round's own pair totals replaced by
    the observed ones (the chord method). A bootstrap draw moves the strengths and the pair totals
    by O(1/sqrt(votes)), so each step gains digits at a fixed rate, and a step costs a gradient and
    one K x K product instead of a K x K solve per round; rounds not converged after `max_iter`
    steps finish with full Newton. Same stopping test (centred step below `tol`) as `newton`."""
    B, K, _ = W.shape
    N0 = (W + np.transpose(W, (0, 2, 1))).mean(axis=0)
    p0 = 1.0 / (1.0 + np.exp(-(theta0[:, None] - theta0[None, :])))
    w0 = N0 * p0 * (1.0 - p0)
    H0 = -w0
    H0[np.arange(K), np.arange(K)] += w0.sum(axis=1) + l2
    if l2 <= 0:
        H0 = H0 + 1e-12 * np.eye(K)
    with one_blas_thread():
        H0inv = np.linalg.inv(H0)
        N = W + np.transpose(W, (0, 2, 1))
        wins = W.sum(axis=2)
        theta = np.repeat(theta0[None], B, axis=0)
        active = np.ones(B, dtype=bool)
        for _ in range(max_iter):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            t = theta[idx]
            p = 1.0 / (1.0 + np.exp(t[:, None, :] - t[:, :, None]))
            grad = wins[idx] - np.einsum("bij,bij->bi", N[idx], p) - l2 * t
            step = grad @ H0inv  # H0inv is symmetric
            theta[idx] = t + step
            centred = step - step.mean(axis=1, keepdims=True)
            active[idx[np.abs(centred).max(axis=1) < tol]] = False
        rest = np.flatnonzero(active)
        if rest.size:
            theta[rest] = newton_loop(W[rest], theta[rest], l2, tol, 100)
    return theta


def ci_rank(ci_low: Sequence[float], ci_high: Sequence[float]) -> np.ndarray:
    """Arena-style rank: 1 + number of bots whose lower bound is above this bot's upper bound."""
    lo = np.asarray(ci_low, dtype=float)
    hi = np.asarray(ci_high, dtype=float)
    return 1 + (lo[None, :] > hi[:, None]).sum(axis=1)


def bradley_terry(
    df: pd.DataFrame,
    a: str = "a",
    b: str = "b",
    winner: str = "winner",
    n_boot: int = 1000,
    ci: float = 0.95,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    anchor: tuple[str, float] | None = None,
    l2: float = 1e-6,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Leaderboard from pairwise votes `df[a, b, winner]`.

    `winner` is the winning bot's name, 'a'/'b' (or 'model_a'/'model_b'), or a tie ('tie',
    'tie (bothbad)', missing). Ratings have mean `init` unless `anchor=(bot, rating)` pins one bot.
    Returns DataFrame[name, rating, ci_low, ci_high, rank, rank_ci] sorted best first, where
    ci_low/ci_high are percentile bootstrap bounds, rank is the CI-aware rank (see `ci_rank`) and
    rank_ci = (best, worst) rank among the central `ci` share of bootstrap rounds. Extra columns:
    wins, losses, ties, n (votes per bot).
    """
    names, wins, ties = aggregate_votes(df, a, b, winner)
    K = len(names)
    if K == 0:
        return pd.DataFrame(columns=["name", "rating", "ci_low", "ci_high", "rank", "rank_ci"])
    theta = fit_bt(wins, ties, l2)
    shift = 0.0
    if anchor is not None:
        if anchor[0] not in names:
            raise ValueError(f"anchor bot {anchor[0]!r} has no votes; known bots: {names}")
        shift = anchor[1] - to_elo(theta[names.index(anchor[0])], scale, base, init)
    rating = to_elo(theta, scale, base, init) + shift
    alpha = (1.0 - ci) / 2.0
    if n_boot > 0:
        boot = bootstrap_bt(wins, ties, n_boot=n_boot, seed=seed, l2=l2, theta0=theta)
        if anchor is not None:
            j = names.index(anchor[0])
            boot = boot - boot[:, [j]] + theta[j]
        boot_r = to_elo(boot, scale, base, init) + shift
        lo, hi = np.quantile(boot_r, [alpha, 1.0 - alpha], axis=0)
        # rank per round (1 = best), then the central interval of each bot's ranks
        order = np.argsort(-boot_r, axis=1)
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, K + 1)[None, :].repeat(n_boot, 0), axis=1)
        r_lo = np.floor(np.quantile(ranks, alpha, axis=0)).astype(int)
        r_hi = np.ceil(np.quantile(ranks, 1.0 - alpha, axis=0)).astype(int)
    else:
        lo = hi = rating.copy()
        r_lo = r_hi = np.full(K, 0)
    out = pd.DataFrame(
        {
            "name": names,
            "rating": rating,
            "ci_low": lo,
            "ci_high": hi,
            "rank": ci_rank(lo, hi),
            "rank_ci": [(int(x), int(y)) for x, y in zip(r_lo, r_hi)],
            "wins": wins.sum(axis=1) + 0.0,
            "losses": wins.sum(axis=0) + 0.0,
            "ties": ties.sum(axis=1) + 0.0,
        }
    )
    out["n"] = out["wins"] + out["losses"] + out["ties"]
    if n_boot <= 0:
        order = np.argsort(-rating)
        plain = np.empty(K, dtype=int)
        plain[order] = np.arange(1, K + 1)
        out["rank"] = plain
        out["rank_ci"] = [(int(r), int(r)) for r in plain]
    return out.sort_values(["rating", "name"], ascending=[False, True]).reset_index(drop=True)


# -- Arena extras: sandwich intervals and pairwise tables (ties count as half wins throughout) -------


def sandwich_cov(wins: np.ndarray, ties: np.ndarray | None, theta: np.ndarray) -> np.ndarray:
    """Robust (sandwich) covariance of the mean-zero log-strengths: H⁺ M H⁺.

    H is the observed information of the Bradley–Terry likelihood with ties as half wins, M the sum
    over votes of the outer product of each vote's score (y − p)(e_i − e_j); a vote's score depends
    only on its pair and outcome, so both are summed over the aggregated (pair, outcome) cells. The
    pseudo-inverse fixes the gauge (mean zero), which M and H both leave free.
    """
    W = np.asarray(wins, dtype=float)
    T = np.zeros_like(W) if ties is None else np.asarray(ties, dtype=float)
    t = np.asarray(theta, dtype=float)
    p = 1.0 / (1.0 + np.exp(-(t[:, None] - t[None, :])))  # P(i beats j)
    n = W + W.T + T
    h = n * p * (1.0 - p)  # information per pair
    # i's side of each vote: win y=1 (W_ij), loss y=0 (W_ji), tie y=1/2 (T_ij, counted once per pair)
    m = W * (1.0 - p) ** 2 + W.T * p**2 + T * (0.5 - p) ** 2
    H = np.diag(h.sum(axis=1)) - h
    M = np.diag(m.sum(axis=1)) - m
    Hp = np.linalg.pinv(H)
    return Hp @ M @ Hp


def sandwich_intervals(
    wins: np.ndarray, ties: np.ndarray | None, theta: np.ndarray, ci: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """(standard errors, half-widths) of the log-strengths from :func:`sandwich_cov` at level `ci`."""
    # scipy.special.ndtri is what scipy.stats.norm.ppf computes (the same bits), without importing
    # scipy.stats (0.3 s of a small report)
    from scipy.special import ndtri

    se = np.sqrt(np.clip(np.diag(sandwich_cov(wins, ties, theta)), 0.0, None))
    return se, ndtri(0.5 + ci / 2.0) * se


def pairwise_tables(wins: np.ndarray, ties: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(battles, win rate): battles[i, j] between i and j, rate[i, j] = (wins of i + ties/2) / battles
    (NaN where the two never met)."""
    W = np.asarray(wins, dtype=float)
    T = np.zeros_like(W) if ties is None else np.asarray(ties, dtype=float)
    battles = W + W.T + T
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(battles > 0, (W + 0.5 * T) / battles, np.nan)
    return battles, rate
