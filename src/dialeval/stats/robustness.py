"""How many votes must go for a Bradley–Terry order to reverse: a data-dropping robustness audit.

Huang, Shen, Wei & Broderick (ICLR 2026, arXiv:2508.11847) showed that dropping 2 of 57,477 Chatbot
Arena votes changes the top model. Their search, after Broderick, Giordano & Meager (2020,
"An automatic finite-sample robustness metric", arXiv:2011.14999), ranks votes by their influence
on the quantity of interest and verifies a candidate set by refitting without it. We do the same on
the aggregated counts: all votes in one (pair, outcome) cell are interchangeable, so a set of
dropped votes is a vector of counts per cell.

For "i is rated above j" (gap g = theta_i - theta_j > 0), dropping one vote of cell c moves theta by
about -H^-1 s_c (one Newton step of the likelihood without that vote; H the information matrix, s_c
the vote's score (y - p)(e_a - e_b), y = 1, 0 or 1/2 for a tie counted half). So its effect on the
gap is -(y - p_ab)(h_a - h_b) with h = H^-1 (e_i - e_j). Greedy: take the most influential votes
first until their summed linear effect closes the gap, refit from a warm start, and repeat from the
new fit until the order reverses (a few refits); then shrink the last batch, in influence order, by
bisection to the fewest that still reverse it. The count is an upper bound on the true minimum
(exact search is combinatorial), and every reported count is *verified*: the refit without exactly
those votes reverses the order.

This module imports nothing from dialeval outside stats/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bradley_terry import newton_loop, one_blas_thread

__all__ = ["FlipResult", "votes_to_reverse"]


@dataclass
class FlipResult:
    """Fewest votes found whose removal puts `j` at or above `i` (refit verified), or None."""

    dropped: int | None  # None: not reversed within the search limit
    share: float | None
    votes: int
    by_cell: list[tuple[int, int, str, int]]  # (a, b, "a"/"b"/"tie", count dropped) — a beat b / tie
    steps: int


def _fit(W: np.ndarray, T: np.ndarray, theta0: np.ndarray, l2: float) -> np.ndarray:
    theta = newton_loop((W + 0.5 * T)[None], theta0[None], l2, 1e-10, 100)[0]
    return theta - theta.mean()


def _info(W: np.ndarray, T: np.ndarray, theta: np.ndarray, l2: float) -> np.ndarray:
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
    n = W + W.T + T
    h = n * p * (1.0 - p)
    H = np.diag(h.sum(axis=1)) - h
    return H + (l2 + 1e-9) * np.eye(len(theta))


# "Rated at least as high" within the fit's own precision: two equal records (48 wins each way) fit
# to ratings equal up to rounding, which differs between numpy/BLAS builds; a flip must not hang on it.
REVERSED_TOL = 1e-9


def votes_to_reverse(*args, **kwargs) -> FlipResult:
    """See `_votes_to_reverse`; all of it on one BLAS thread (many 100 x 100 solves: threads fighting
    over them cost ~30x, and setting the limit per solve costs more than the solve)."""
    with one_blas_thread():
        return _votes_to_reverse(*args, **kwargs)


def _votes_to_reverse(
    wins: np.ndarray,
    ties: np.ndarray | None,
    i: int,
    j: int,
    *,
    l2: float = 1e-6,
    max_share: float = 0.5,
    max_steps: int = 400,
    theta: np.ndarray | None = None,
) -> FlipResult:
    """Drop votes until `j` is rated at least as high as `i` (ties count half, as the default BT).

    `wins[a, b]` = votes a won against b; `ties` symmetric. Gives up (dropped=None) after dropping
    `max_share` of the votes or `max_steps` refits.

    >>> W = np.array([[0, 52], [48, 0]], float)
    >>> votes_to_reverse(W, None, 0, 1).dropped   # drop 4 of i's wins over j: 48 vs 48
    4
    """
    W0 = np.asarray(wins, dtype=float)
    T0 = np.zeros_like(W0) if ties is None else np.asarray(ties, dtype=float)
    K = W0.shape[0]
    total = int(round(W0.sum() + np.triu(T0, 1).sum()))
    iu = np.triu_indices(K, k=1)
    # cells: (a, b, outcome) with a < b; outcome 0 = a won, 1 = b won, 2 = tie
    cell_a = np.concatenate([iu[0], iu[0], iu[0]])
    cell_b = np.concatenate([iu[1], iu[1], iu[1]])
    kind = np.repeat([0, 1, 2], len(iu[0]))
    y = np.where(kind == 0, 1.0, np.where(kind == 1, 0.0, 0.5))  # a's score in the vote
    dropped = np.zeros(len(kind))

    def counts(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        W = W0.copy()
        T = T0.copy()
        np.subtract.at(W, (cell_a[kind == 0], cell_b[kind == 0]), d[kind == 0])
        np.subtract.at(W, (cell_b[kind == 1], cell_a[kind == 1]), d[kind == 1])
        np.subtract.at(T, (cell_a[kind == 2], cell_b[kind == 2]), d[kind == 2])
        np.subtract.at(T, (cell_b[kind == 2], cell_a[kind == 2]), d[kind == 2])
        return W, T

    available = np.concatenate([W0[iu], W0.T[iu], T0[iu]])
    theta_cur = _fit(W0, T0, np.zeros(K), l2) if theta is None else np.asarray(theta, float) - np.mean(theta)
    if theta_cur[i] <= theta_cur[j] + REVERSED_TOL:
        return FlipResult(0, 0.0, total, [], 0)
    limit = max_share * total
    steps = 0
    batch = np.zeros(len(kind))  # the votes taken by the last step, per cell
    flipped = False
    e = np.zeros(K)
    e[i], e[j] = 1.0, -1.0
    while steps < max_steps and dropped.sum() < limit:
        steps += 1
        W, T = counts(dropped)
        gap = theta_cur[i] - theta_cur[j]
        h = np.linalg.solve(_info(W, T, theta_cur, l2), e)
        p = 1.0 / (1.0 + np.exp(-(theta_cur[cell_a] - theta_cur[cell_b])))
        effect = -(y - p) * (h[cell_a] - h[cell_b])  # change of the gap per vote dropped
        left = available - dropped
        effect[left < 0.5] = 0.0
        order = np.argsort(effect, kind="stable")
        order = order[effect[order] < 0]
        if order.size == 0:  # nothing left that narrows the gap
            break
        # the fewest votes, most influential first, whose summed linear effect closes the gap
        reach = np.cumsum(-effect[order] * left[order])
        last = min(int(np.searchsorted(reach, gap)), order.size - 1)
        batch = np.zeros(len(kind))
        batch[order[:last]] = left[order[:last]]
        before = reach[last - 1] if last > 0 else 0.0
        batch[order[last]] = min(left[order[last]], max(1.0, math.ceil((gap - before) / -effect[order[last]])))
        room = limit - dropped.sum()
        if batch.sum() > room:  # the search limit: take what fits, in influence order
            cum = np.cumsum(batch[order])
            keep = np.clip(room - (cum - batch[order]), 0.0, batch[order])
            batch[order] = np.floor(keep)
            if batch.sum() < 1:
                break
        dropped += batch
        W, T = counts(dropped)
        theta_cur = _fit(W, T, theta_cur, l2)
        if theta_cur[i] <= theta_cur[j] + REVERSED_TOL:
            flipped = True
            break
    if not flipped:
        return FlipResult(None, None, total, [], steps)
    # the fewest votes of the last batch (taken in influence order) that still reverse the order:
    # bisection over prefixes, each a refit
    base = dropped - batch
    sequence = np.repeat(np.flatnonzero(batch), batch[np.flatnonzero(batch)].astype(int))

    def prefix(k: int) -> np.ndarray:
        d = base.copy()
        np.add.at(d, sequence[:k], 1.0)
        return d

    lo, hi = 0, len(sequence)  # hi reverses; lo (none of the batch) did not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        W, T = counts(prefix(mid))
        t = _fit(W, T, theta_cur, l2)
        if t[i] <= t[j] + REVERSED_TOL:
            hi = mid
        else:
            lo = mid
    dropped = prefix(hi)
    W, T = counts(dropped)
    check = _fit(W, T, np.zeros(K), l2)  # the verification refit, from scratch
    if check[i] > check[j] + REVERSED_TOL:  # pragma: no cover - the warm-started and cold fits disagree
        return FlipResult(None, None, total, [], steps)
    names = ("a", "b", "tie")
    by_cell = [
        (int(cell_a[c]), int(cell_b[c]), names[int(kind[c])], int(round(dropped[c]))) for c in np.flatnonzero(dropped)
    ]
    n_dropped = int(round(dropped.sum()))
    return FlipResult(n_dropped, n_dropped / total if total else None, total, by_cell, steps)
