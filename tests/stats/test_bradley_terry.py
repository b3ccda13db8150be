import numpy as np
import pandas as pd
import pytest

from dialeval.stats.bradley_terry import aggregate_votes, bootstrap_bt, bradley_terry, ci_rank, fit_bt, to_elo


def _simulate(strengths, n_votes, seed=0, tie_share=0.0):
    rng = np.random.default_rng(seed)
    k = len(strengths)
    a = rng.integers(0, k, n_votes)
    b = rng.integers(0, k - 1, n_votes)
    b[b >= a] += 1
    p = 1 / (1 + np.exp(-(strengths[a] - strengths[b])))
    names = np.array([f"m{i}" for i in range(k)])
    winner = np.where(rng.random(n_votes) < p, names[a], names[b]).astype(object)
    winner[rng.random(n_votes) < tie_share] = "tie"
    return pd.DataFrame({"a": names[a], "b": names[b], "winner": winner})


def test_two_bots_closed_form():
    # 3 wins vs 1 win: P = 0.75 => rating gap = 400 log10(3)
    df = pd.DataFrame({"a": ["x"] * 4, "b": ["y"] * 4, "winner": ["x", "x", "x", "y"]})
    lb = bradley_terry(df, n_boot=0, l2=0.0)
    r = lb.set_index("name")["rating"]
    assert r["x"] - r["y"] == pytest.approx(400 * np.log10(3), abs=1e-6)
    assert r.mean() == pytest.approx(1000)
    assert list(lb["name"]) == ["x", "y"]


def test_ties_are_half_wins_and_winner_aliases():
    df = pd.DataFrame({"model_a": ["x", "x", "y"], "model_b": ["y", "y", "x"], "winner": ["model_a", "tie", "model_a"]})
    names, wins, ties = aggregate_votes(df)
    assert names == ["x", "y"]
    assert wins.tolist() == [[0, 1], [1, 0]]
    assert ties.tolist() == [[0, 1], [1, 0]]
    r = bradley_terry(df, n_boot=0, l2=0.0).set_index("name")["rating"]
    assert r["x"] == pytest.approx(r["y"])  # 1.5 vs 1.5 half-wins


def test_bad_winner_raises():
    df = pd.DataFrame({"a": ["x"], "b": ["y"], "winner": ["z"]})
    with pytest.raises(ValueError, match="neither bot"):
        aggregate_votes(df)


def test_recovers_simulated_order_and_scale():
    strengths = np.array([-1.0, -0.3, 0.2, 0.9, 1.6])
    df = _simulate(strengths, 40_000, seed=1)
    lb = bradley_terry(df, n_boot=200, seed=3)
    assert list(lb["name"]) == ["m4", "m3", "m2", "m1", "m0"]
    est = lb.set_index("name")["rating"].reindex([f"m{i}" for i in range(5)]).to_numpy()
    truth = to_elo(strengths - strengths.mean())
    assert np.abs(est - truth).max() < 15
    assert (lb["ci_low"] < lb["rating"]).all() and (lb["rating"] < lb["ci_high"]).all()
    assert lb["rank"].tolist() == [1, 2, 3, 4, 5]
    assert lb["rank_ci"].tolist() == [(i, i) for i in range(1, 6)]


def test_anchor_and_ci_rank():
    df = _simulate(np.array([0.0, 0.05, 1.0]), 2_000, seed=2)
    lb = bradley_terry(df, n_boot=100, anchor=("m0", 800.0))
    assert lb.set_index("name").loc["m0", "rating"] == pytest.approx(800.0)
    # m0 and m1 are nearly equal: overlapping CIs share rank 2
    ranks = lb.set_index("name")["rank"]
    assert ranks["m2"] == 1 and ranks["m0"] == 2 and ranks["m1"] == 2
    assert ci_rank([10, 0, -5], [20, 12, 1]).tolist() == [1, 1, 2]
    assert ci_rank([10, 5, -5], [20, 12, 1]).tolist() == [1, 1, 3]


def test_bootstrap_matches_vote_resampling_spread():
    df = _simulate(np.array([0.0, 0.5, 1.0]), 1_500, seed=4)
    _names, wins, ties = aggregate_votes(df)
    theta = fit_bt(wins, ties)
    agg = bootstrap_bt(wins, ties, n_boot=400, seed=0)
    rng = np.random.default_rng(0)
    per_vote = []
    for _ in range(60):
        s = df.iloc[rng.integers(0, len(df), len(df))]
        _, w, t = aggregate_votes(s)
        per_vote.append(fit_bt(w, t))
    per_vote = np.array(per_vote)
    assert np.allclose(agg.mean(axis=0), theta, atol=0.02)
    assert np.allclose(agg.std(axis=0), per_vote.std(axis=0), rtol=0.3)


def test_one_blas_thread_limits_blas_and_keeps_its_library_scan(monkeypatch):
    """The fits run with one BLAS thread; the scan of the process's libraries is made once, not per
    fit (it cost 2 ms a call in a report), and again when modules were imported since."""
    import sys
    import types

    from threadpoolctl import threadpool_info

    from dialeval.stats import bradley_terry as bt

    with bt.one_blas_thread():
        assert {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"} == {1}
    first = bt._controller
    with bt.one_blas_thread():
        pass
    assert bt._controller is first  # nothing imported in between: the same scan
    monkeypatch.setitem(sys.modules, "dialeval_test_new_module", types.ModuleType("dialeval_test_new_module"))
    with bt.one_blas_thread():
        pass
    assert bt._controller is not first
