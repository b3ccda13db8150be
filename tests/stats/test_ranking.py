"""Bootstrap rank ranges, clusters and TrueSkill."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.stats import ranking


def test_rank_range_shortest():
    assert ranking.rank_range([1] * 1000) == (1, 1)
    assert ranking.rank_range([1] * 996 + [2] * 4) == (1, 1)  # 99.6 % > 99.5 %
    assert ranking.rank_range([1] * 995 + [2] * 5) == (1, 2)  # exactly 99.5 % is not enough
    assert ranking.rank_range([1] * 3 + [2] * 997) == (2, 2)  # shortest, not lowest
    assert ranking.rank_range([2] * 500 + [3] * 500) == (2, 3)
    assert ranking.rank_range([1, 2, 3, 4], coverage=0.5) == (1, 3)


def test_clusters_transitive_and_ordered():
    ranges = {"A": (1, 2), "B": (2, 3), "C": (3, 3), "D": (4, 5), "E": (5, 5), "F": (6, 6)}
    cl = ranking.clusters_from_ranges(ranges)
    assert cl["A"] == cl["B"] == cl["C"] == 1  # A overlaps B, B overlaps C
    assert cl["D"] == cl["E"] == 2
    assert cl["F"] == 3
    assert ranking.cluster_list(cl) == [["A", "B", "C"], ["D", "E"], ["F"]]
    assert ranking.clusters_from_ranges({"X": (2, 2), "Y": (1, 1)}) == {"Y": 1, "X": 2}


def _tournament(strength, n_per_pair, rng):
    a, b, out = [], [], []
    names = list(strength)
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            p = strength[x] / (strength[x] + strength[y])
            for _ in range(n_per_pair):
                a.append(x)
                b.append(y)
                if rng.random() < 0.2:
                    out.append(0)  # a draw
                else:
                    out.append(1 if rng.random() < p else -1)
    return a, b, out


def test_bootstrap_separates_clear_differences():
    rng = np.random.default_rng(1)
    a, b, out = _tournament({"S": 50.0, "M": 1.0, "W": 0.02}, 200, rng)
    for statistic in ("win_share", "mean_win_rate"):
        table = ranking.bootstrap_clusters(a, b, out, n_bootstrap=300, seed=0, statistic=statistic)
        assert list(table["system"]) == ["S", "M", "W"]
        assert list(table["cluster"]) == [1, 2, 3]
        assert list(zip(table["lo"], table["hi"])) == [(1, 1), (2, 2), (3, 3)]


def test_bootstrap_merges_equal_systems_and_is_seeded():
    rng = np.random.default_rng(2)
    a, b, out = _tournament({"P": 1.0, "Q": 1.0, "W": 0.01}, 100, rng)
    s1, r1 = ranking.bootstrap_ranks(a, b, out, n_bootstrap=400, seed=7)
    s2, r2 = ranking.bootstrap_ranks(a, b, out, n_bootstrap=400, seed=7)
    assert s1 == s2 and np.array_equal(r1, r2)
    assert r1.shape == (400, 3) and set(np.unique(r1)) <= {1, 2, 3}
    cl = ranking.clusters_from_ranges(ranking.rank_ranges(s1, r1))
    assert cl["P"] == cl["Q"] == 1 and cl["W"] == 2


def test_block_bootstrap_keeps_groups_together():
    a = ["A", "A", "B"] * 10
    b = ["B", "C", "C"] * 10
    out = [1, 1, 1] * 10
    groups = [f"g{i // 3}" for i in range(30)]
    systems, ranks = ranking.bootstrap_ranks(a, b, out, n_bootstrap=50, seed=0, groups=groups)
    assert (ranks[:, systems.index("A")] == 1).all()
    with pytest.raises(ValueError):
        ranking.bootstrap_ranks(a, b, out, groups=groups[:-1])


def test_point_scores_mean_win_rate():
    s = ranking.point_scores(["A", "A", "B", "A"], ["B", "B", "C", "C"], [1, -1, 1, 0], statistic="mean_win_rate")
    assert s["A"] == pytest.approx(0.5)  # 0.5 vs B; no decisive match vs C
    assert s["B"] == pytest.approx(0.75)  # 0.5 vs A, 1.0 vs C
    ws = ranking.point_scores(["A", "A", "B", "A"], ["B", "B", "C", "C"], [1, -1, 1, 0])
    assert ws["A"] == pytest.approx(1 / 3)


def test_trueskill_orders_by_strength():
    a = ["A", "B", "A"] * 30
    b = ["B", "C", "C"] * 30
    out = [1, 1, 0] * 30
    ts = ranking.trueskill_ratings(a, b, out, n_shuffles=2, seed=0)
    assert list(ts["system"]) == ["A", "B", "C"]
    assert ts["mu"].iloc[0] > 0 > ts["mu"].iloc[-1]


# --- rank-range rules and the bootstrap of independent matches -------------------------------------


def test_rank_range_rules_released_keeps_the_best_rank_seen():
    # 1000 resamples: rank 1 three times, rank 2 990 times, rank 3 seven times
    ranks = [1] * 3 + [2] * 990 + [3] * 7
    # shortest range holding > 99.5 %: [2, 3] (997) ; [1, 2] holds 993, not enough
    assert ranking.rank_range(ranks, 0.995, rule="shortest") == (2, 3)
    # released: from the best rank seen (1) to the first upper bound with > 995 -> [1, 3]
    assert ranking.rank_range(ranks, 0.995, rule="released") == (1, 3)
    # equally short ranges: the shortest rule takes the better ranks ([1, 2] and [2, 3] both hold 55 %)
    tie = [1] * 45 + [2] * 10 + [3] * 45
    assert ranking.rank_range(tie, 0.5, rule="shortest") == (1, 2)
    # released, where the shortest range does not start at the best rank seen: [1, 4] vs [4, 4]
    assert ranking.rank_range([1] + [4] * 999, 0.995, rule="released") == (1, 4)
    assert ranking.rank_range([1] + [4] * 999, 0.995, rule="shortest") == (4, 4)
    with pytest.raises(ValueError, match="rule"):
        ranking.rank_range(ranks, 0.995, rule="widest")


def test_multinomial_bootstrap_has_the_distribution_of_drawing_matches():
    # groups = one label per match is the plain index bootstrap (each match drawn on its own);
    # without groups the kinds are drawn as one multinomial: the rank frequencies must agree
    rng = np.random.default_rng(3)
    systems = ["a", "b", "c", "d"]
    a, b, outcome = [], [], []
    strength = {"a": 0.3, "b": 0.25, "c": 0.0, "d": -0.5}
    for _ in range(600):
        x, y = rng.choice(systems, 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[x] - strength[y])))
        u = rng.random()
        a.append(x)
        b.append(y)
        outcome.append(1 if u < p * 0.8 else (-1 if u < 0.8 else 0))
    _, fast = ranking.bootstrap_ranks(a, b, outcome, n_bootstrap=4000, n_samples=900, seed=1, statistic="win_share")
    _, slow = ranking.bootstrap_ranks(
        a, b, outcome, n_bootstrap=4000, n_samples=900, seed=2, statistic="win_share", groups=range(len(a))
    )
    for j in range(4):
        f = np.bincount(fast[:, j], minlength=5)[1:] / 4000
        s = np.bincount(slow[:, j], minlength=5)[1:] / 4000
        assert np.abs(f - s).max() < 0.045  # 4 sd of a difference of two shares of 4000 (sd <= 0.0112)


def test_coding_and_kinds_are_the_lookup_and_unique_ones():
    # _encode by hashing gives the codes of a dict lookup in sorted-name order, and the multinomial
    # bootstrap draws the same ranks as with its kinds found by np.unique's columns
    rng = np.random.default_rng(4)
    names = np.array([f"sys-{k}" for k in rng.permutation(30)], dtype=object)
    a, b = names[rng.integers(0, 30, 5_000)], names[rng.integers(0, 30, 5_000)]
    outcome = rng.integers(-1, 2, 5_000)
    systems, ia, ib, out = ranking._encode(a, b, outcome, None)
    index = {s: i for i, s in enumerate(sorted(set(a) | set(b)))}
    assert systems == sorted(index)
    assert ia.tolist() == [index[x] for x in a] and ib.tolist() == [index[x] for x in b]
    given = list(reversed(systems))
    _, ja, _, _ = ranking._encode(list(a), list(b), list(outcome), given)
    assert ja.tolist() == [given.index(x) for x in a]
    with pytest.raises(ValueError, match="not in systems"):
        ranking._encode(["x", "y"], ["y", "z"], [1, 0], ["x", "y"])
    with pytest.raises(ValueError, match="outcome"):
        ranking._encode(["x"], ["y"], [2], None)
    for statistic in ("win_share", "mean_win_rate"):
        got = ranking._bootstrap_kinds(ia, ib, out, len(systems), 300, 2_000, 9, statistic, 250)
        assert np.array_equal(
            got, _bootstrap_kinds_by_unique_columns(ia, ib, out, len(systems), 300, 2_000, 9, statistic)
        )


def _bootstrap_kinds_by_unique_columns(ia, ib, outcome, n_systems, n_bootstrap, n_samples, seed, statistic):
    """The multinomial bootstrap with the kinds found by np.unique along an axis: the reference."""
    kinds, inverse = np.unique(np.stack([ia, ib, outcome]), axis=1, return_inverse=True)
    weight = np.bincount(np.ravel(inverse), minlength=kinds.shape[1]) / len(ia)
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n_bootstrap, 250):
        counts = rng.multinomial(n_samples, weight, size=min(250, n_bootstrap - start)).astype(float)
        scores = ranking._statistic(counts, kinds[0], kinds[1], kinds[2], n_systems, statistic)
        out.append(ranking.ranks_from_scores(scores))
    return np.vstack(out)
