"""Active pair selection (stats/active.py) and the scheduler glue (dialeval.scheduling.state)."""

import numpy as np
import pytest

from dialeval.config import AdaptiveConfig
from dialeval.scheduling.state import AdaptiveState
from dialeval.stats import active
from dialeval.stats.bradley_terry import fit_bt


def test_transitivity_resolves_implied_pairs():
    beats = np.zeros((4, 4), dtype=bool)
    beats[0, 1] = beats[1, 2] = True
    cands = active.candidate_pairs(4, beats)
    assert (0, 2) not in cands and (0, 1) not in cands and (1, 2) not in cands
    assert set(cands) == {(0, 3), (1, 3), (2, 3)}
    assert active.candidate_pairs(4, beats, transitive=False).count((0, 2)) == 1
    beats[2, 3] = True
    assert active.candidate_pairs(4, beats) == []
    assert active.ranking_from_beats(beats) == [0, 1, 2, 3]
    assert active.candidate_pairs(4, beats, allowed=[(3, 0)]) == []


def test_bt_fit_matches_fit_bt():
    rng = np.random.default_rng(0)
    W = rng.integers(0, 30, (5, 5)).astype(float)
    np.fill_diagonal(W, 0)
    theta, se = active.bt_fit_with_se(W, l2=1e-6)
    assert np.allclose(theta, fit_bt(W, l2=1e-6), atol=1e-6)
    assert (se > 0).all()


def test_selection_is_deterministic_and_only_candidates():
    W = np.array([[0, 30, 40], [20, 0, 25], [5, 20, 0]], dtype=float)
    cands = [(0, 1), (1, 2)]
    for rule in active.RULES:
        a = [active.select_pair(rule, W, cands, np.random.default_rng(5)) for _ in range(3)]
        assert a[0] == a[1] == a[2] and a[0] in cands
        picks = {active.select_pair(rule, W, cands, np.random.default_rng(s)) for s in range(30)}
        assert picks <= set(cands)
        alloc = active.allocate(rule, W, cands, 100, np.random.default_rng(1))
        assert alloc.sum() == 100 and (alloc >= 0).all()
    assert active.select_pair("uniform", W, [], np.random.default_rng(0)) is None
    with pytest.raises(ValueError):
        active.select_pair("best", W, cands, np.random.default_rng(0))


def test_variance_reduction_prefers_less_judged_pairs():
    W = np.zeros((3, 3))
    W[0, 1], W[1, 0] = 300, 300  # (0,1) well measured
    W[1, 2], W[2, 1] = 6, 4  # (1,2) barely
    W[0, 2], W[2, 0] = 0, 0  # (0,2) never
    w = active.variance_reduction_weights(W, [(0, 1), (1, 2), (0, 2)])
    assert np.isinf(w[2]) and w[1] > 10 * w[0]
    assert active.select_pair("variance-reduction", W, [(0, 1), (1, 2), (0, 2)], np.random.default_rng(0)) == (0, 2)
    counts = active.allocate("variance-reduction", W, [(0, 1), (1, 2)], 1000, np.random.default_rng(0))
    assert counts[1] > 5 * counts[0]


def test_rank_overlap_prefers_uncertain_pair():
    # bots 0 and 1 are close; bot 2 is far below both
    W = np.array([[0, 52, 190], [48, 0, 185], [10, 15, 0]], dtype=float)
    cands = [(0, 1), (0, 2), (1, 2)]
    assert active.rank_overlap_pairs(W, cands) == [(0, 1)]
    for seed in range(5):
        assert active.select_pair("rank-overlap", W, cands, np.random.default_rng(seed)) == (0, 1)
    alloc = active.allocate("rank-overlap", W, cands, 50, np.random.default_rng(0))
    assert alloc.tolist() == [50, 0, 0]


def test_adaptive_state_decides_and_stops():
    cfg = AdaptiveConfig(enabled=True, selection="rank-overlap")
    rng = np.random.default_rng(1)
    truth = {"x": 2.0, "y": 1.0, "z": 0.0}
    st = AdaptiveState.from_outcomes([], ["x", "y", "z"], cfg)
    for _ in range(5000):
        pair = st.next_pair(rng)
        if pair is None:
            break
        a, b = pair
        p = 1 / (1 + np.exp(-(truth[a] - truth[b])))
        st.update(a, b, a if rng.random() < p else b)
    assert st.done and st.ranking() == ["x", "y", "z"]
    assert st.next_pair(rng) is None
    table = st.stopping_table()
    assert {r["a"] + r["b"] for r in table} == {"xy", "xz", "yz"}
    for r in table:
        assert set(r) >= {"a", "b", "n", "wins_a", "p_always_valid", "decided", "stopped_at_n", "rule"}
        if r["decided"]:
            assert r["p_always_valid"] <= 0.05 / 3 and r["stopped_at_n"] <= r["n"]
    assert all(w in ("x", "y") for w, _ in st.decided_pairs())


def test_adaptive_state_replay_and_options():
    outcomes = [("y", "x", "a")] * 40 + [("x", "x", "x")] + [("x", "q", "x")]  # A/A and unknown bots ignored
    st = AdaptiveState.from_outcomes(
        outcomes, ["x", "y", "z"], AdaptiveConfig(enabled=True), pairs=[("x", "y"), ("y", "z")]
    )
    assert st.decided_pairs() == [("y", "x")]
    assert st.next_pair(0) == ("y", "z")
    none = AdaptiveState.from_outcomes(outcomes, ["x", "y"], AdaptiveConfig(enabled=True, stopping="none"))
    assert none.decided_pairs() == [] and none.next_pair(0) == ("x", "y")
    assert none.stopping_table()[0]["p_always_valid"] < 0.05
    with pytest.raises(ValueError):
        AdaptiveState.from_outcomes([], ["x", "y"], pairs=[("x", "w")])
