"""Rankings from pairwise matches: bootstrap rank ranges, clusters, TrueSkill.

Pure and method-independent: a *match* is ``(a, b, outcome)`` with outcome +1 (a won), -1 (b won)
or 0 (draw). Spot The Bot uses one match per annotation; any pairwise method can do the same.

The procedure follows Deriu et al. (2020) (after Dušek et al. 2018) and its released code:

- :func:`bootstrap_ranks`: resample the matches with replacement ``n_bootstrap`` times, rank the
  systems on each resample (vectorised with numpy: one matrix product per resample batch).
- :func:`rank_range`: a range of ranks that holds more than 99.5 % of a system's bootstrap ranks,
  by one of two rules (``RANK_RANGE_RULES``):

  * ``"released"`` (what the released code computed, ``compute_rank_range`` in
    ``segmented_bootstrap_sampling.py``): of the qualifying ranges it sorts by length and then,
    stably, by lower bound and takes the first, i.e. the *lowest lower bound wins over the
    shortest*. Since [best rank seen, worst rank seen] always qualifies, the range runs from the
    best rank the system got in any resample to the smallest upper bound that then holds > 99.5 %:
    only the bad tail is trimmed. (Its authors' comment there: "best range? smallest range?")
  * ``"shortest"`` (the paper's wording, after Dušek et al. 2018): the shortest qualifying range;
    among equally short ranges the one with the best (lowest) ranks.

  Ranks within one resample: a higher statistic ranks first; equal statistics keep the systems'
  sorted-name order (the released code kept the order in which systems first appeared in the
  resample; with thousands of draws exact ties are rare).
- :func:`clusters_from_ranges`: systems whose ranges overlap, transitively, share a cluster;
  cluster 1 is the best.
- :func:`trueskill_ratings`: TrueSkill with mu=0, sigma=0.5, tau=0 as in the released code.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import pandas as pd

Statistic = Literal["win_share", "mean_win_rate"]
RankRangeRule = Literal["released", "shortest"]
RANK_RANGE_RULES = ("released", "shortest")


def _encode(a: Iterable, b: Iterable, outcome: Iterable, systems: Sequence[str] | None):
    a = np.asarray(a if isinstance(a, (np.ndarray, pd.Series)) else list(a), dtype=object)
    b = np.asarray(b if isinstance(b, (np.ndarray, pd.Series)) else list(b), dtype=object)
    outcome = np.asarray(outcome if isinstance(outcome, (np.ndarray, pd.Series)) else list(outcome), dtype=int)
    if not (len(a) == len(b) == len(outcome)):
        raise ValueError("a, b and outcome must have the same length")
    names = None
    if len(a):
        # the distinct names by hashing (a dict lookup per match was most of a ranking's time)
        codes, uniques = pd.factorize(np.concatenate([a, b]))
        if (codes >= 0).all():
            names = list(uniques)
    if names is None:  # None or NaN among the names: as they are, by dict lookups
        return _encode_by_lookup(a, b, outcome, systems)
    if systems is None:
        systems = sorted(names)
    index = {s: i for i, s in enumerate(systems)}
    missing = [x for x in names if x not in index]
    if missing:
        raise ValueError(f"system {missing[0]!r} is not in systems")
    code = np.array([index[x] for x in names], dtype=int)[codes]
    ia, ib = code[: len(a)], code[len(a) :]
    if not np.isin(outcome, (-1, 0, 1)).all():
        raise ValueError("outcome must be +1, -1 or 0")
    return list(systems), ia, ib, outcome


def _encode_by_lookup(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, systems: Sequence[str] | None):
    if systems is None:
        systems = sorted(set(a.tolist()) | set(b.tolist()))
    index = {s: i for i, s in enumerate(systems)}
    try:
        ia = np.array([index[x] for x in a], dtype=int)
        ib = np.array([index[x] for x in b], dtype=int)
    except KeyError as exc:
        raise ValueError(f"system {exc.args[0]!r} is not in systems") from exc
    if not np.isin(outcome, (-1, 0, 1)).all():
        raise ValueError("outcome must be +1, -1 or 0")
    return list(systems), ia, ib, outcome


def _statistic(counts: np.ndarray, ia, ib, outcome, n_systems: int, statistic: Statistic) -> np.ndarray:
    """Per-row statistic for match multiplicities ``counts`` (rows × matches) -> rows × systems."""
    n_matches = len(ia)
    rows = np.arange(n_matches)
    if statistic == "win_share":
        # the released code's bootstrap: wins / matches played (draws count as played)
        won = np.zeros((n_matches, n_systems))
        won[rows[outcome == 1], ia[outcome == 1]] = 1
        won[rows[outcome == -1], ib[outcome == -1]] = 1
        played = np.zeros((n_matches, n_systems))
        played[rows, ia] += 1
        played[rows, ib] += 1
        wins = counts @ won
        games = counts @ played
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(games > 0, wins / games, np.nan)
    if statistic == "mean_win_rate":
        # mean over opponents of WINS(i,j) / (WINS(i,j) + WINS(j,i)), pairs without decisive games skipped
        winner = np.where(outcome == 1, ia, ib)
        loser = np.where(outcome == 1, ib, ia)
        decisive = outcome != 0
        pair = np.zeros((n_matches, n_systems * n_systems))
        pair[rows[decisive], (winner * n_systems + loser)[decisive]] = 1
        w = (counts @ pair).reshape(len(counts), n_systems, n_systems)
        tot = w + np.transpose(w, (0, 2, 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(tot > 0, w / tot, np.nan)
        n_opp = (~np.isnan(rate)).sum(axis=2)
        total = np.nansum(rate, axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n_opp > 0, total / n_opp, np.nan)
    raise ValueError(f"unknown statistic {statistic!r}; use 'win_share' or 'mean_win_rate'")


def ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """1-based ranks per row, highest score first; NaN ranks last; ties keep the system order."""
    s = np.where(np.isnan(scores), -np.inf, scores)
    order = np.argsort(-s, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, s.shape[-1] + 1)[None, :].repeat(s.shape[0], 0), axis=-1)
    return ranks


def point_scores(a, b, outcome, systems: Sequence[str] | None = None, statistic: Statistic = "win_share") -> pd.Series:
    """The statistic on all matches (no resampling), indexed by system."""
    systems, ia, ib, outcome = _encode(a, b, outcome, systems)
    counts = np.ones((1, len(ia)))
    return pd.Series(_statistic(counts, ia, ib, outcome, len(systems), statistic)[0], index=systems)


def bootstrap_ranks(
    a: Iterable,
    b: Iterable,
    outcome: Iterable,
    systems: Sequence[str] | None = None,
    n_bootstrap: int = 1000,
    n_samples: int | None = None,
    seed: int | None = 0,
    statistic: Statistic = "win_share",
    batch: int = 250,
    groups: Iterable | None = None,
) -> tuple[list[str], np.ndarray]:
    """Bootstrap ranks: ``(systems, ranks)`` with ``ranks`` of shape (n_bootstrap, n_systems), 1 = best.

    Each repetition draws ``n_samples`` matches with replacement (default: as many as there are;
    the released code drew a fixed 5000) and ranks systems by ``statistic``: ``"win_share"``
    (wins / matches played, the released code) or ``"mean_win_rate"`` (mean pairwise win rate,
    the paper's score).

    ``groups`` (one label per match, e.g. the conversation) makes it a block bootstrap: whole
    groups are drawn with replacement (``n_samples`` then counts groups), so dependent matches,
    such as the annotations of one conversation, stay together.
    """
    systems, ia, ib, outcome = _encode(a, b, outcome, systems)
    return list(systems), _bootstrap_coded(
        ia, ib, outcome, len(systems), n_bootstrap, n_samples, seed, statistic, batch, groups
    )


def _bootstrap_coded(ia, ib, outcome, n_systems, n_bootstrap, n_samples, seed, statistic, batch, groups) -> np.ndarray:
    """:func:`bootstrap_ranks` on matches already coded by :func:`_encode`."""
    m = len(ia)
    if m == 0:
        raise ValueError("no matches to bootstrap")
    if groups is None:
        return _bootstrap_kinds(ia, ib, outcome, n_systems, n_bootstrap, n_samples, seed, statistic, batch)
    labels = list(groups)
    if len(labels) != m:
        raise ValueError("groups must have one label per match")
    _, member = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    g = int(member.max()) + 1
    n = g if n_samples is None else int(n_samples)
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n_bootstrap, batch):
        r = min(batch, n_bootstrap - start)
        idx = rng.integers(0, g, size=(r, n))
        flat = (np.arange(r)[:, None] * g + idx).ravel()
        counts = np.bincount(flat, minlength=r * g).reshape(r, g).astype(float)[:, member]
        out.append(ranks_from_scores(_statistic(counts, ia, ib, outcome, n_systems, statistic)))
    return np.vstack(out)


def _bootstrap_kinds(ia, ib, outcome, n_systems, n_bootstrap, n_samples, seed, statistic, batch) -> np.ndarray:
    """Bootstrap of independent matches. A match enters the statistic only through its kind
    (a, b, outcome), so drawing n matches uniformly with replacement and counting them is drawn as
    one multinomial over the kinds (with the kinds' shares as probabilities): the same
    distribution, at a cost that does not grow with the number of matches or draws."""
    # the kinds in the order of np.unique(np.stack([ia, ib, outcome]), axis=1), by one integer key
    # per match (sorting the key sorts the triples; unique along an axis was a third of the time)
    key = (ia * n_systems + ib) * 3 + (outcome + 1)
    keys, inverse = np.unique(key, return_inverse=True)
    kinds = np.stack([keys // (3 * n_systems), keys // 3 % n_systems, keys % 3 - 1])
    weight = np.bincount(np.ravel(inverse), minlength=kinds.shape[1]) / len(ia)
    n = len(ia) if n_samples is None else int(n_samples)
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n_bootstrap, batch):
        r = min(batch, n_bootstrap - start)
        counts = rng.multinomial(n, weight, size=r).astype(float)
        out.append(ranks_from_scores(_statistic(counts, kinds[0], kinds[1], kinds[2], n_systems, statistic)))
    return np.vstack(out)


def rank_range(ranks: Iterable[int], coverage: float = 0.995, rule: RankRangeRule = "shortest") -> tuple[int, int]:
    """A range [lo, hi] holding more than ``coverage`` of the ranks (see the module docstring).

    ``rule="shortest"``: the shortest such range; among equally short ones the best (lowest) lo.
    ``rule="released"``: the released code's choice: lo = the best rank seen at all, hi = the
    smallest rank from which [lo, hi] holds more than ``coverage``.
    """
    r = np.asarray(list(ranks), dtype=int)
    if r.size == 0:
        raise ValueError("no ranks")
    if rule not in RANK_RANGE_RULES:
        raise ValueError(f"rule must be one of {RANK_RANGE_RULES}, got {rule!r}")
    lo_all, hi_all = int(r.min()), int(r.max())
    counts = np.bincount(r - lo_all, minlength=hi_all - lo_all + 1)
    cum = np.concatenate([[0], np.cumsum(counts)])
    need = coverage * r.size
    if rule == "released":
        hi = lo_all + int(np.flatnonzero(cum[1:] > need)[0])
        return lo_all, hi
    best: tuple[int, int] | None = None
    for lo in range(lo_all, hi_all + 1):
        for hi in range(lo, hi_all + 1):
            if cum[hi - lo_all + 1] - cum[lo - lo_all] > need:
                if best is None or hi - lo < best[1] - best[0]:
                    best = (lo, hi)
                break
    assert best is not None  # the full range holds 100 %
    return best


def rank_ranges(
    systems: Sequence[str], ranks: np.ndarray, coverage: float = 0.995, rule: RankRangeRule = "shortest"
) -> dict[str, tuple[int, int]]:
    return {s: rank_range(ranks[:, j], coverage, rule) for j, s in enumerate(systems)}


def clusters_from_ranges(ranges: dict[str, tuple[int, int]]) -> dict[str, int]:
    """Cluster number per system (1 = best): ranges that overlap, transitively, form one cluster."""
    names = list(ranges)
    parent = {s: s for s in names}

    def find(s: str) -> str:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            (xl, xh), (yl, yh) = ranges[x], ranges[y]
            if not (xh < yl or yh < xl):
                parent[find(x)] = find(y)
    groups: dict[str, list[str]] = {}
    for s in names:
        groups.setdefault(find(s), []).append(s)
    ordered = sorted(groups.values(), key=lambda g: (min(ranges[s][0] for s in g), min(ranges[s][1] for s in g)))
    return {s: k for k, g in enumerate(ordered, start=1) for s in g}


def cluster_list(clusters: dict[str, int]) -> list[list[str]]:
    """Clusters as lists of names, best cluster first."""
    out: dict[int, list[str]] = {}
    for s, c in clusters.items():
        out.setdefault(c, []).append(s)
    return [sorted(out[c]) for c in sorted(out)]


def bootstrap_clusters(
    a: Iterable,
    b: Iterable,
    outcome: Iterable,
    n_bootstrap: int = 1000,
    seed: int | None = 0,
    coverage: float = 0.995,
    statistic: Statistic = "win_share",
    n_samples: int | None = None,
    systems: Sequence[str] | None = None,
    groups: Iterable | None = None,
    rank_range_rule: RankRangeRule = "shortest",
) -> pd.DataFrame:
    """Columns ``system, score, mean_rank, lo, hi, cluster``, best first (see :func:`bootstrap_ranks`;
    ``rank_range_rule``: see :func:`rank_range`)."""
    # coded once for the bootstrap and the point scores
    systems, ia, ib, outcome = _encode(a, b, outcome, systems)
    ranks = _bootstrap_coded(ia, ib, outcome, len(systems), n_bootstrap, n_samples, seed, statistic, 250, groups)
    ranges = rank_ranges(systems, ranks, coverage, rank_range_rule)
    clusters = clusters_from_ranges(ranges)
    score = _statistic(np.ones((1, len(ia))), ia, ib, outcome, len(systems), statistic)[0]  # as point_scores
    frame = pd.DataFrame(
        {
            "system": systems,
            "score": [float(x) for x in score],
            "mean_rank": ranks.mean(axis=0),
            "lo": [ranges[s][0] for s in systems],
            "hi": [ranges[s][1] for s in systems],
            "cluster": [clusters[s] for s in systems],
        }
    )
    return frame.sort_values(["cluster", "mean_rank"]).reset_index(drop=True)


def trueskill_ratings(
    a: Iterable,
    b: Iterable,
    outcome: Iterable,
    n_shuffles: int = 20,
    seed: int | None = 0,
    mu: float = 0.0,
    sigma: float = 0.5,
    beta: float | None = None,
    tau: float = 0.0,
    draw_probability: float = 0.1,
) -> pd.DataFrame:
    """TrueSkill ratings from matches played in random order, averaged over ``n_shuffles`` orders.

    Settings of the released code: mu=0, sigma=0.5, tau=0, beta = 0.025 · sigma² · (number of
    matches), a draw rated as a draw (``drawn=True``), the trueskill package's draw probability
    (0.1). (The released code built this environment but called the module-level ``rate_1vs1``,
    which rates with the package's global defaults; we apply the environment it meant.)
    Columns ``system, mu, sigma`` (means over shuffles), best first.

    Each match is rated by :func:`_trueskill_1vs1`, the package's ``rate_1vs1`` in closed form (same
    ratings to round-off, tested against the package on the published Spot The Bot matches).
    """
    a, b, outcome = list(a), list(b), list(outcome)
    systems, ia, ib, out = _encode(a, b, outcome, None)
    if beta is None:
        beta = max(0.025 * sigma**2 * len(ia), 1e-6)
    rate = _trueskill_1vs1(beta, tau, draw_probability)
    # the winner first, as rate_1vs1 takes it; a draw keeps the match's order
    first = np.where(out == -1, ib, ia).tolist()
    second = np.where(out == -1, ia, ib).tolist()
    drawn = (out == 0).tolist()
    rng = np.random.default_rng(seed)
    mus = np.zeros(len(systems))
    sigmas = np.zeros(len(systems))
    for _ in range(max(1, n_shuffles)):
        m = [float(mu)] * len(systems)
        s = [float(sigma)] * len(systems)
        for k in rng.permutation(len(ia)).tolist():
            i, j = first[k], second[k]
            m[i], s[i], m[j], s[j] = rate(m[i], s[i], m[j], s[j], drawn[k])
        mus += m
        sigmas += s
    n = max(1, n_shuffles)
    frame = pd.DataFrame({"system": systems, "mu": mus / n, "sigma": sigmas / n})
    return frame.sort_values("mu", ascending=False).reset_index(drop=True)


def _trueskill_1vs1(beta: float, tau: float, draw_probability: float):
    """``rate(mu1, sigma1, mu2, sigma2, drawn) -> (mu1, sigma1, mu2, sigma2)``: one 1-vs-1 TrueSkill
    update (player 1 the winner unless ``drawn``), as ``trueskill.rate_1vs1`` with
    ``TrueSkill(beta=beta, tau=tau, draw_probability=draw_probability)``.

    Why not the package itself: its ``rate_1vs1`` builds a factor graph of Rating, Variable and
    message objects for every match (~0.3 ms each); Spot The Bot at 100k segments rates ~0.6M
    matches, which took most of the report's time. For two players that graph is one truncated
    Gaussian step (Herbrich et al. 2007; Moser, "Computing your skill"), written out here with
    plain floats. The package's own normal cdf/pdf/ppf are used (its cdf is an erfc approximation,
    not exact), so the ratings match it to round-off, not just to the approximation error.
    """
    from trueskill.backends import choose_backend

    cdf, pdf, ppf = choose_backend(None)
    # the package's calc_draw_margin for two players
    margin = ppf((draw_probability + 1) / 2.0) * math.sqrt(2) * beta
    beta2 = beta * beta
    tau2 = tau * tau

    def rate(m1: float, s1: float, m2: float, s2: float, drawn: bool) -> tuple[float, float, float, float]:
        v1 = s1 * s1 + tau2
        v2 = s2 * s2 + tau2
        c2 = 2 * beta2 + v1 + v2
        c = math.sqrt(c2)
        t = (m1 - m2) / c
        e = margin / c
        if drawn:
            u = abs(t)
            hi, lo = e - u, -e - u
            denom = cdf(hi) - cdf(lo)
            if not denom:
                raise FloatingPointError("TrueSkill draw update underflows")
            v = (pdf(lo) - pdf(hi)) / denom
            w = v * v + (hi * pdf(hi) - lo * pdf(lo)) / denom
            if t < 0:
                v = -v
        else:
            x = t - e
            denom = cdf(x)
            v = pdf(x) / denom if denom else -x
            w = v * (v + x)
            if not 0 < w < 1:
                raise FloatingPointError("TrueSkill win update underflows")
        return (
            m1 + v1 / c * v,
            math.sqrt(v1 * (1 - v1 / c2 * w)),
            m2 - v2 / c * v,
            math.sqrt(v2 * (1 - v2 / c2 * w)),
        )

    return rate
