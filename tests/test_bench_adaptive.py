"""The adaptive-collection benchmark (quick mode) and its building blocks."""

import json

import numpy as np
import pytest

from dialeval.bench import calibration as cal
from dialeval.bench.adaptive import (
    compare_scenario,
    run_adaptive_benchmark,
    simulate_adaptive_study,
    smallest_n_reaching,
    two_bot_uniform_accuracy,
    uniform_accuracy,
)
from dialeval.stats.study_design import Scenario, bt_probabilities


def test_calibration_reads_paper_tables():
    W = cal.win_share_matrix(cal.PERSONACHAT_HUMAN_MODEL)
    names = cal.PERSONACHAT_BOTS
    assert W[names.index("H"), names.index("RC")] == 0.67  # H beat RC in 67% (Li et al. 2019, Table 2)
    s = cal.personachat_scenario()
    assert s.true_order()[0] == "H" and s.true_order()[-1] == "RC"
    assert np.allclose(s.probs + s.probs.T, 1.0)
    two = cal.paper000_scenarios()
    assert len(two) == 6 and sum(x.near_null for x in two) == 1


def test_simulated_study_and_uniform_accuracy():
    s = Scenario(name="t", bots=["a", "b", "c"], probs=bt_probabilities([0.6, 0.0, -0.6]))
    r = simulate_adaptive_study(s, "rank-overlap", cap=20_000, seed=(1, 2))
    assert r["correct"] and r["judgments"] == sum(r["n_per_pair"])
    assert r == simulate_adaptive_study(s, "rank-overlap", cap=20_000, seed=(1, 2))  # deterministic
    assert uniform_accuracy(s, 20, reps=500) < uniform_accuracy(s, 400, reps=500)
    aa = simulate_adaptive_study(cal.aa_scenario(3), "uniform", cap=3000, seed=0)
    assert aa["judgments"] == 3000 and not aa["decided"]


def test_quick_benchmark_keys_and_savings():
    out = run_adaptive_benchmark(quick=True, seed=0)
    for key in (
        "uniform_judgments",
        "adaptive_judgments",
        "aa_false_positive_rate",
        "naive_aa_false_positive_rate",
        "savings",
        "savings_ci",
        "settings",
        "scenarios",
        "rules",
        "aa",
        "mixing_comparison",
    ):
        assert key in out
    assert out["savings"] > 0
    assert out["aa_false_positive_rate"] <= 0.05 < out["naive_aa_false_positive_rate"]
    assert out["settings"]["mixing"] == "mixture" and "Beta(0.3125, 0.3125)" in out["settings"]["prior"]
    assert out["aa"]["two_bots"]["adaptive_exact"] <= 0.05 and out["aa"]["two_bots"]["single_exact"] <= 0.05
    for s in out["scenarios"][1:]:  # two-bot studies carry the exact (dynamic programming) figures
        assert s["mixing"] == "mixture" and 0.99 < s["adaptive_accuracy_exact"] <= 1
        assert s["adaptive_judgments_exact"] > 0 and s["uniform_n_at_exact_accuracy"] >= s["uniform_n_per_pair"]
    assert [c["scenario"] for c in out["mixing_comparison"]] == [s["scenario"] for s in out["scenarios"]]
    assert {"mixture", "single"} <= set(out["mixing_comparison"][1])
    json.dumps(out)


def test_two_bot_uniform_accuracy_is_exact_binomial_power():
    acc = two_bot_uniform_accuracy(0.74, 200)
    assert acc[5] == 0.0  # the exact test cannot reject with 5 judgments at 0.05
    s = cal.paper000_scenarios()[0]  # length, PW-Turn: BB3B wins 74%
    assert uniform_accuracy(s, 67) == acc[67]
    # simulation of the fixed-size design agrees with the exact power
    rng = np.random.default_rng(3)
    wins = rng.binomial(67, 0.74, 20_000)
    assert abs((wins >= 67 - 25).mean() - acc[67]) < 0.01  # c(67) = 25 at 0.05 two-sided
    n = smallest_n_reaching(acc, 0.982)
    assert acc[n] >= 0.982 and (acc[:n] < 0.982).all()
    assert smallest_n_reaching(acc, 1.0) is None
    assert two_bot_uniform_accuracy(0.3, 50)[40] == pytest.approx(two_bot_uniform_accuracy(0.7, 50)[40])
    assert not two_bot_uniform_accuracy(0.5, 50).any()


def test_two_bot_comparison_mixture_vs_single():
    s = cal.paper000_scenarios()[4]  # fine-tuning, PW-Turn: 93%, where one Beta(20, 20) needed 20 wins
    mix = compare_scenario(s, 60, seed=1, cap=2000, n_boot=50)
    one = compare_scenario(s, 60, seed=1, cap=2000, n_boot=50, mixing="single")
    assert mix["uniform_n_per_pair"] == one["uniform_n_per_pair"]  # same baseline (same accuracy: 60/60)
    assert mix["adaptive_judgments"] < 0.6 * one["adaptive_judgments"]
    assert mix["savings"] > 0 > one["savings"]
    assert abs(mix["adaptive_judgments"] - mix["adaptive_judgments_exact"]) < 1.5
