"""Active pair selection for comparing K > 2 bots: which bot pair gets the next judgment.

State is a K×K matrix `wins` (wins[i, j] = judgments in which i beat j) and a K×K boolean matrix
`beats` of *decided* relations (beats[i, j]: the anytime-valid test has shown i better than j).
Pairs whose order follows from decided ones by transitivity (i > j and j > l ⇒ i > l) are resolved
too (`transitive_closure`): once the decided relations form a total order, the ranking is decided
and nothing more is needed. Only unresolved pairs of the allowed set are *candidates*.

Rules (all deterministic given the numpy Generator passed in):

- ``uniform``: a candidate pair uniformly at random.
- ``variance-reduction``: Chatbot Arena (Chiang et al. 2024, "Chatbot Arena: an open platform for
  evaluating LLMs by human preference", §5, eq. 9): sample pair ab with probability
  ∝ sqrt(Σ_ab / n_ab) − sqrt(Σ_ab / (n_ab + 1)), the drop in the standard error of the pair's
  win-rate estimate that one more judgment buys. Σ_ab is the per-judgment binomial variance
  p_ab (1 − p_ab) with p_ab from a Bradley–Terry fit of all judgments (so a pair with few direct
  judgments still borrows strength from the others); pairs never judged are taken first.
  Restricted to candidates (pairs not yet decided), as the issue asks.
- ``rank-overlap``: pairs whose Bradley–Terry strength intervals (estimate ± z·se from the observed
  Fisher information) still overlap — those whose order is still uncertain — and among them the
  least judged pair (ties at random). Falls back to all candidates when no interval overlaps.

This module imports nothing from dialeval. The Bradley–Terry fit here is a small warm-startable
Newton iteration (`bt_fit_with_se`) instead of `bradley_terry.fit_bt`, because selection refits after
every batch on a handful of bots, where fit_bt's per-call thread-pool setup costs more than the fit;
tests check that both give the same strengths.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "RULES",
    "allocate",
    "bt_fit_with_se",
    "candidate_pairs",
    "rank_overlap_pairs",
    "ranking_from_beats",
    "resolved_matrix",
    "select_pair",
    "transitive_closure",
    "variance_reduction_weights",
]

RULES = ("uniform", "variance-reduction", "rank-overlap")
Pair = tuple[int, int]


def transitive_closure(beats: np.ndarray) -> np.ndarray:
    """Boolean K×K closure of a 'beats' relation (Warshall)."""
    c = np.asarray(beats, dtype=bool).copy()
    for k in range(c.shape[0]):
        c |= c[:, [k]] & c[[k], :]
    return c


def resolved_matrix(beats: np.ndarray, transitive: bool = True) -> np.ndarray:
    """Symmetric boolean matrix: the order of i and j is known (directly or by transitivity)."""
    c = transitive_closure(beats) if transitive else np.asarray(beats, dtype=bool)
    return c | c.T


def candidate_pairs(
    K: int, beats: np.ndarray | None = None, allowed: Iterable[Pair] | None = None, transitive: bool = True
) -> list[Pair]:
    """Allowed pairs (i < j; default all) whose order is not yet resolved."""
    pairs = (
        [(i, j) for i in range(K) for j in range(i + 1, K)]
        if allowed is None
        else [(min(i, j), max(i, j)) for i, j in allowed]
    )
    if beats is None:
        return pairs
    res = resolved_matrix(beats, transitive)
    return [(i, j) for i, j in pairs if not res[i, j]]


def bt_fit_with_se(
    wins: np.ndarray, l2: float = 0.1, theta0: np.ndarray | None = None, tol: float = 1e-9, max_iter: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """Bradley–Terry log-strengths (mean zero) maximising sum_ij wins_ij log sigmoid(t_i - t_j)
    - l2/2 |t|^2 (the ridge keeps them finite with few judgments), by damped Newton steps, and their
    standard errors of the mean-zero strengths from the observed Fisher information."""
    W = np.asarray(wins, dtype=float)
    K = W.shape[0]
    N = W + W.T
    won = W.sum(axis=1)
    t = np.zeros(K) if theta0 is None else np.asarray(theta0, dtype=float).copy()
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(t[:, None] - t[None, :])))
        grad = won - (N * p).sum(axis=1) - l2 * t
        w = N * p * (1 - p)
        H = -w
        H[np.diag_indices(K)] += w.sum(axis=1) + l2
        step = np.linalg.solve(H, grad)
        big = np.abs(step).max()
        t = t + step * min(1.0, 3.0 / max(big, 1e-300))
        if big < tol:
            break
    p = 1.0 / (1.0 + np.exp(-(t[:, None] - t[None, :])))
    w = N * p * (1 - p)
    L = -w
    L[np.diag_indices(K)] += w.sum(axis=1)
    # covariance of the mean-zero strengths: pseudo-inverse of the information (a Laplacian, whose
    # null space is the shift of all strengths); the ridge is added only where it keeps a bot
    # without judgments from getting an infinite interval
    cov = np.linalg.pinv(L + l2 * (np.eye(K) - np.full((K, K), 1.0 / K)))
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return t - t.mean(), se


def variance_reduction_weights(wins: np.ndarray, pairs: Sequence[Pair], theta: np.ndarray | None = None) -> np.ndarray:
    """Chatbot Arena eq. 9 weights sqrt(Σ/n) − sqrt(Σ/(n+1)) per pair (n = judgments of the pair);
    +inf for pairs never judged."""
    W = np.asarray(wins, dtype=float)
    if theta is None:
        theta = bt_fit_with_se(W)[0]
    out = np.empty(len(pairs))
    for k, (i, j) in enumerate(pairs):
        n = W[i, j] + W[j, i]
        p = 1.0 / (1.0 + np.exp(-(theta[i] - theta[j])))
        sigma = p * (1 - p)
        out[k] = np.inf if n == 0 else np.sqrt(sigma / n) - np.sqrt(sigma / (n + 1))
    return out


def rank_overlap_pairs(wins: np.ndarray, pairs: Sequence[Pair], z: float = 1.96) -> list[Pair]:
    """The pairs whose strength intervals theta ± z·se overlap (order still uncertain)."""
    theta, se = bt_fit_with_se(wins)
    return [(i, j) for i, j in pairs if abs(theta[i] - theta[j]) < z * (se[i] + se[j])]


def _least_judged(wins: np.ndarray, pairs: Sequence[Pair], rng: np.random.Generator) -> Pair:
    W = np.asarray(wins)
    n = np.array([W[i, j] + W[j, i] for i, j in pairs], dtype=float)
    best = np.flatnonzero(n == n.min())
    return pairs[int(best[rng.integers(best.size)])]


def select_pair(
    rule: str, wins: np.ndarray, candidates: Sequence[Pair], rng: np.random.Generator, z: float = 1.96
) -> Pair | None:
    """The next pair to judge under `rule` (see the module docstring), None without candidates."""
    if rule not in RULES:
        raise ValueError(f"unknown selection rule {rule!r}; use one of {', '.join(RULES)}")
    cands = list(candidates)
    if not cands:
        return None
    if rule == "uniform" or len(cands) == 1:
        return cands[int(rng.integers(len(cands)))]
    if rule == "variance-reduction":
        w = variance_reduction_weights(wins, cands)
        if np.isinf(w).any():
            fresh = np.flatnonzero(np.isinf(w))
            return cands[int(fresh[rng.integers(fresh.size)])]
        return cands[int(rng.choice(len(cands), p=w / w.sum()))]
    overlap = rank_overlap_pairs(wins, cands, z)
    return _least_judged(wins, overlap or cands, rng)


def allocate(
    rule: str, wins: np.ndarray, candidates: Sequence[Pair], total: int, rng: np.random.Generator, z: float = 1.96
) -> np.ndarray:
    """Judgments per candidate for the next batch of `total` (a batched version of `select_pair`
    for simulation and for launching crowd batches): uniform and variance-reduction draw the batch
    from their selection probabilities (never-judged pairs get an equal share first);
    rank-overlap splits it over the overlapping pairs, least judged first (water-filling)."""
    cands = list(candidates)
    m = len(cands)
    out = np.zeros(m, dtype=np.int64)
    if m == 0 or total <= 0:
        return out
    if rule not in RULES:
        raise ValueError(f"unknown selection rule {rule!r}; use one of {', '.join(RULES)}")
    if rule == "uniform":
        return rng.multinomial(total, np.full(m, 1.0 / m))
    if rule == "variance-reduction":
        w = variance_reduction_weights(wins, cands)
        if np.isinf(w).any():
            w = np.isinf(w).astype(float)
        return rng.multinomial(total, w / w.sum())
    overlap = set(rank_overlap_pairs(wins, cands, z)) or set(cands)
    idx = [k for k, pr in enumerate(cands) if pr in overlap]
    W = np.asarray(wins, dtype=float)
    n = np.array([W[i, j] + W[j, i] for i, j in (cands[k] for k in idx)], dtype=float)
    # water-filling: raise the least-judged pairs to a common level with `total` judgments
    order = np.argsort(n + rng.random(n.size) * 1e-6)
    level_n = n[order]
    remaining = float(total)
    give = np.zeros(len(idx))
    for t in range(len(idx)):
        nxt = level_n[t + 1] if t + 1 < len(idx) else np.inf
        need = (nxt - level_n[t]) * (t + 1)
        if need >= remaining:
            level = level_n[t] + remaining / (t + 1)
            give[order[: t + 1]] = level - n[order[: t + 1]]
            break
        remaining -= need
        level_n[: t + 1] = nxt
    g = np.floor(give).astype(np.int64)
    short = total - g.sum()
    if short > 0:  # hand out the rounding remainder to the least judged
        frac_order = order[: max(1, min(len(idx), short))]
        g[frac_order[:short]] += 1
        short = total - g.sum()
        if short > 0:
            g[order[0]] += short
    out[idx] = g
    return out


def ranking_from_beats(beats: np.ndarray) -> list[int] | None:
    """The total order (best first) implied by the decided relations, or None if not total."""
    c = transitive_closure(beats)
    K = c.shape[0]
    if not (c | c.T | np.eye(K, dtype=bool)).all() or (c & c.T).any():
        return None
    return [int(i) for i in np.argsort(-c.sum(axis=1), kind="stable")]
