"""Simulated studies that size a design: how many judgments a ranking needs (`dialeval plan`, and the
benchmark `dialeval bench adaptive`, which compares the designs on published effect sizes).

A :class:`Scenario` is a simulated study: bots, the true P(i beats j) matrix, the pairs that may be
compared. Two designs:

- **uniform**: every allowed pair gets the same n judgments, then a two-sided exact binomial test
  per pair at alpha / m, decisions closed under transitivity (:func:`uniform_accuracy`, its curve
  over n, and :func:`matched_uniform_n`, the n reaching a target accuracy);
- **adaptive**: the anytime-valid test of every pair (stats/sequential.py) with a selection rule
  (stats/active.py) spending judgments on the pairs still open, until the ranking is decided or a
  budget is spent (:func:`simulate_adaptive_study`, :func:`simulate_adaptive`). Judgments are handed
  out in batches of max(#open pairs, 5% of the judgments so far); each pair's outcome stream is drawn
  in advance, so its test stops at exactly the judgment where it crosses.

Pure numerics (numpy, scipy) like the rest of stats/.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import stats as sps

from . import active
from .sequential import (
    DEFAULT_MIXING,
    DEFAULT_PRIOR,
    block_log_e_process,
    bonferroni_alpha,
    decision_bounds,
    naive_bounds,
)

__all__ = [
    "BATCH_FRACTION",
    "Scenario",
    "bt_probabilities",
    "cached_decision_bounds",
    "matched_uniform_n",
    "simulate_adaptive",
    "simulate_adaptive_study",
    "two_bot_rate",
    "two_bot_uniform_accuracy",
    "uniform_accuracy",
    "uniform_accuracy_curve",
]


@dataclass
class Scenario:
    """A simulated study: bots, the true P(i beats j) matrix, the pairs that may be compared."""

    name: str
    bots: list[str]
    probs: np.ndarray  # probs[i, j] = P(i beats j); 0.5 on the diagonal
    pairs: list[tuple[int, int]] | None = None  # None: every pair
    source: str = ""
    near_null: bool = False
    strengths: list[float] | None = None
    extra: dict = field(default_factory=dict)

    @property
    def allowed(self) -> list[tuple[int, int]]:
        K = len(self.bots)
        return self.pairs if self.pairs is not None else [(i, j) for i in range(K) for j in range(i + 1, K)]

    def true_order(self) -> list[str]:
        score = (self.probs > 0.5).sum(axis=1)
        return [self.bots[i] for i in np.argsort(-score, kind="stable")]


def bt_probabilities(theta) -> np.ndarray:
    t = np.asarray(theta, dtype=float)
    return 1.0 / (1.0 + np.exp(-(t[:, None] - t[None, :])))


BATCH_FRACTION = 0.05


@lru_cache(maxsize=16)
def cached_decision_bounds(
    n_max: int, level: float, prior: float, mixing: str = DEFAULT_MIXING
) -> tuple[np.ndarray, np.ndarray]:
    return decision_bounds(n_max, level, prior, mixing)


class _Stream:
    """One pair's judgments, drawn lazily in chunks; knows where its test first crosses.

    With `crowd` = (sd, per_annotator, level, prior, mixing) the judgments come from annotators
    with their own win rate p + N(0, sd) (clipped), `per_annotator` consecutive judgments each,
    and the test is the annotator-level one (one factor per annotator, decisions when a block
    closes; stats.sequential.block_log_e_process)."""

    def __init__(self, p: float, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator, crowd: tuple | None = None):
        self.p, self.lo, self.hi, self.rng = p, lo, hi, rng
        self.cum = np.zeros(0, dtype=np.int64)
        self.stop: int | None = None
        self.side = 0
        self.crowd = crowd

    def ensure(self, n: int) -> None:
        if self.crowd is not None:
            return self._ensure_crowd(n)
        n = min(n, len(self.hi) - 1)
        while self.stop is None and len(self.cum) < n:
            size = max(1024, len(self.cum))
            start = len(self.cum)
            size = min(size, len(self.hi) - 1 - start)
            if size <= 0:
                return
            last = self.cum[-1] if start else 0
            seg = last + np.cumsum(self.rng.random(size) < self.p)
            ns = np.arange(start + 1, start + size + 1)
            up = seg >= self.hi[ns]
            dn = seg <= self.lo[ns]
            hit = np.flatnonzero(up | dn)
            self.cum = np.concatenate([self.cum, seg])
            if hit.size:
                t = int(hit[0])
                self.stop = start + t + 1
                self.side = 1 if up[t] else -1

    def _ensure_crowd(self, n: int) -> None:
        assert self.crowd is not None
        sd, r, level, prior, mixing = self.crowd
        n = min(n, len(self.hi) - 1)
        while self.stop is None and len(self.cum) < n:
            start = len(self.cum)
            size = min(max(1024, start), len(self.hi) - 1 - start)
            size -= size % r
            if size <= 0:
                return
            p_a = np.clip(self.p + self.rng.normal(0.0, sd, size // r), 0.0, 1.0)
            x = self.rng.random((size // r, r)) < p_a[:, None]
            last = self.cum[-1] if start else 0
            self.cum = np.concatenate([self.cum, last + np.cumsum(x.ravel())])
            # the whole path again (chunks double, so this stays linear overall)
            blocks = np.diff(np.concatenate([[0], self.cum[r - 1 :: r]]))
            log_m = block_log_e_process(blocks, np.full(blocks.size, r), prior, mixing)
            hit = np.flatnonzero(log_m >= math.log(1.0 / level))
            if hit.size:
                k = int(hit[0]) + 1  # blocks in the test when it decides
                self.stop = k * r
                self.side = 1 if 2 * self.cum[self.stop - 1] > self.stop else -1

    def wins(self, n: int) -> int:
        return int(self.cum[n - 1]) if n > 0 else 0


def simulate_adaptive_study(
    scenario: Scenario,
    rule: str = "rank-overlap",
    alpha: float = 0.05,
    prior: float = DEFAULT_PRIOR,
    cap: int = 100_000,
    seed: int | Sequence[int] = 0,
    batch_fraction: float = BATCH_FRACTION,
    transitive: bool = True,
    mixing: str = DEFAULT_MIXING,
    crowd: tuple[float, int] | None = None,
) -> dict:
    """One adaptive study. Returns {judgments, paid, decided, correct, false_positive, n_per_pair}:
    judgments = those the tests used (a pair stops at the judgment where it crosses), paid = every
    judgment handed out in a batch (a crowd batch is paid in full, even past a pair's stop);
    `crowd` = (sd, per_annotator): heterogeneous annotators and the annotator-level test;
    decided = every allowed pair resolved within `cap`; correct = decided and no decision against
    the truth; false_positive = some pair was decided although the truth is in the other direction
    or a tie (for A/A: any decision). `mixing`: the test statistic (stats.sequential)."""
    P = scenario.probs
    K = len(scenario.bots)
    pairs = scenario.allowed
    m = len(pairs)
    level = bonferroni_alpha(alpha, m)
    lo, hi = cached_decision_bounds(int(cap), level, float(prior), mixing)
    ss = np.random.SeedSequence(seed)
    children = ss.spawn(m + 1)
    spec = None if crowd is None else (float(crowd[0]), int(crowd[1]), level, float(prior), mixing)
    streams = [
        _Stream(float(P[i, j]), lo, hi, np.random.default_rng(children[k]), spec) for k, (i, j) in enumerate(pairs)
    ]
    sel_rng = np.random.default_rng(children[m])
    index = {pr: k for k, pr in enumerate(pairs)}
    n = np.zeros(m, dtype=np.int64)
    W = np.zeros((K, K))
    beats = np.zeros((K, K), dtype=bool)
    total = paid = 0
    while total < cap:
        cands = active.candidate_pairs(K, beats, pairs, transitive)
        if not cands:
            break
        batch = int(min(cap - total, max(len(cands), math.ceil(batch_fraction * total))))
        if spec is not None:  # whole annotators: a batch is a number of annotator blocks
            batch = -(-batch // spec[1]) * spec[1]
        alloc = active.allocate(rule, W, cands, batch, sel_rng)
        if spec is not None:
            alloc = -(-np.asarray(alloc) // spec[1]) * spec[1]
        paid += int(np.sum(alloc))
        for (i, j), g in zip(cands, alloc):
            if g <= 0:
                continue
            k = index[(i, j)]
            s = streams[k]
            new = int(n[k] + g)
            s.ensure(new)
            if s.stop is not None and s.stop <= new:
                new = s.stop
                if s.side > 0:
                    beats[i, j] = True
                else:
                    beats[j, i] = True
            new = min(new, len(s.cum))
            n[k] = new
            w = s.wins(new)
            W[i, j], W[j, i] = w, new - w
        total = int(n.sum())
    resolved = active.resolved_matrix(beats, transitive)
    decided = all(resolved[i, j] for i, j in pairs)
    wrong = bool((beats & ~(P > 0.5)).any())
    return {
        "judgments": total,
        "paid": paid,
        "decided": bool(decided),
        "correct": bool(decided and not wrong),
        "false_positive": wrong,
        "any_decision": bool(beats.any()),
        "n_per_pair": n.tolist(),
    }


def _study_worker(args):
    scenario, rule, alpha, prior, cap, seed, mixing, crowd = args
    r = simulate_adaptive_study(scenario, rule, alpha, prior, cap, seed, mixing=mixing, crowd=crowd)
    r.pop("n_per_pair")
    return r


def simulate_adaptive(
    scenario: Scenario,
    repeats: int,
    seed: int = 0,
    rule: str = "rank-overlap",
    alpha: float = 0.05,
    prior: float = DEFAULT_PRIOR,
    cap: int = 100_000,
    workers: int = 1,
    mixing: str = DEFAULT_MIXING,
    crowd: tuple[float, int] | None = None,
) -> dict[str, np.ndarray]:
    """`repeats` adaptive studies (study r uses seed (seed, r), so runs are reproducible and the
    rules see the same judgments). Returns arrays judgments, correct, decided, false_positive."""
    jobs = [(scenario, rule, alpha, prior, cap, (seed, r), mixing, crowd) for r in range(repeats)]
    if workers > 1 and repeats > 1:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            res = list(ex.map(_study_worker, jobs, chunksize=max(1, repeats // (4 * workers))))
    else:
        res = [_study_worker(j) for j in jobs]
    keys = ("judgments", "paid", "correct", "decided", "false_positive", "any_decision")
    return {k: np.array([r[k] for r in res]) for k in keys}


def _fixed_bound(n: int, level: float) -> int:
    """Largest c with P(Binomial(n, .5) <= c) < level/2 (two-sided exact test rejects at wins <= c
    or >= n - c); -1 when none."""
    if n <= 0:
        return -1
    q = level / 2.0
    c = int(sps.binom.ppf(q, n, 0.5)) - 1
    while c >= 0 and sps.binom.cdf(c, n, 0.5) >= q:
        c -= 1
    while c + 1 <= n / 2 and sps.binom.cdf(c + 1, n, 0.5) < q:
        c += 1
    return c


def two_bot_uniform_accuracy(p: float, n_max: int, level: float = 0.05) -> np.ndarray:
    """Exact accuracy of the fixed-size two-sided binomial test at `level` for n = 0..n_max
    judgments when the first bot wins with probability p: P(decided in the true direction);
    0 at p = 0.5 (any decision is wrong) and where no count can reject."""
    lo, hi = naive_bounds(int(n_max), level)
    ns = np.arange(int(n_max) + 1)
    if p > 0.5:
        acc = sps.binom.sf(hi - 1, ns, p)
    elif p < 0.5:
        acc = sps.binom.cdf(lo, ns, p)
    else:
        acc = np.zeros(len(ns))
    return np.where(lo >= 0, acc, 0.0)


def two_bot_rate(scenario: Scenario) -> float | None:
    pairs = scenario.allowed
    if len(pairs) != 1:
        return None
    i, j = pairs[0]
    return float(scenario.probs[i, j])


def uniform_accuracy(
    scenario: Scenario, n_per_pair: int, alpha: float = 0.05, reps: int = 4000, seed: int = 0
) -> float:
    """Share of uniform fixed-size studies (n judgments per allowed pair, exact binomial test per
    pair at alpha/m, decisions closed under transitivity) that end with the correct and complete
    ranking. Simulated with `reps` studies; exact (binomial power) for a single pair."""
    P = scenario.probs
    K = len(scenario.bots)
    pairs = scenario.allowed
    m = len(pairs)
    c = _fixed_bound(int(n_per_pair), bonferroni_alpha(alpha, m))
    if c < 0:
        return 0.0
    p2 = two_bot_rate(scenario)
    if p2 is not None:
        return float(two_bot_uniform_accuracy(p2, int(n_per_pair), alpha)[int(n_per_pair)])
    rng = np.random.default_rng(seed)
    ii = np.array([i for i, _ in pairs])
    jj = np.array([j for _, j in pairs])
    wins = rng.binomial(int(n_per_pair), P[ii, jj], size=(reps, m))
    beats = np.zeros((reps, K, K), dtype=bool)
    beats[:, ii, jj] = wins >= n_per_pair - c
    beats[:, jj, ii] = wins <= c
    closure = beats.copy()
    for k in range(K):
        closure |= closure[:, :, [k]] & closure[:, [k], :]
    resolved = closure | np.transpose(closure, (0, 2, 1))
    decided = resolved[:, ii, jj].all(axis=1)
    wrong = (beats & ~(P > 0.5)[None]).any(axis=(1, 2))
    return float((decided & ~wrong).mean())


def uniform_accuracy_curve(
    scenario: Scenario, grid: Sequence[int], alpha: float = 0.05, reps: int = 4000, seed: int = 0
) -> np.ndarray:
    """Accuracy of the uniform design at each n per pair of `grid`, made non-decreasing."""
    acc = np.array([uniform_accuracy(scenario, int(n), alpha, reps, seed + 7919 * k) for k, n in enumerate(grid)])
    return np.maximum.accumulate(acc)


def matched_uniform_n(grid: Sequence[int], curve: Sequence[float], target: float) -> float | None:
    """Smallest n per pair reaching accuracy `target` on the curve (log-linear interpolation);
    None if the grid never reaches it."""
    g = np.asarray(grid, dtype=float)
    c = np.asarray(curve, dtype=float)
    ok = np.flatnonzero(c >= target)
    if ok.size == 0:
        return None
    k = int(ok[0])
    if k == 0 or c[k] == c[k - 1]:
        return float(g[k])
    f = (target - c[k - 1]) / (c[k] - c[k - 1])
    return float(np.exp(np.log(g[k - 1]) + f * (np.log(g[k]) - np.log(g[k - 1]))))
