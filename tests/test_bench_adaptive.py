"""The adaptive-collection benchmark (quick mode) and its building blocks."""

import json

import numpy as np

from dialeval.bench import calibration as cal
from dialeval.bench.adaptive import run_adaptive_benchmark, simulate_adaptive_study, uniform_accuracy


def test_calibration_reads_paper_tables():
    W = cal.win_share_matrix(cal.PERSONACHAT_HUMAN_MODEL)
    names = cal.PERSONACHAT_BOTS
    assert W[names.index("H"), names.index("RC")] == 0.67  # H beat RC in 67% (003 Table 2)
    s = cal.personachat_scenario()
    assert s.true_order()[0] == "H" and s.true_order()[-1] == "RC"
    assert np.allclose(s.probs + s.probs.T, 1.0)
    two = cal.paper000_scenarios()
    assert len(two) == 6 and sum(x.near_null for x in two) == 1


def test_simulated_study_and_uniform_accuracy():
    s = cal.Scenario(name="t", bots=["a", "b", "c"], probs=cal.bt_probabilities([0.6, 0.0, -0.6]))
    r = simulate_adaptive_study(s, "rank-overlap", cap=20_000, seed=(1, 2))
    assert r["correct"] and r["judgments"] == sum(r["n_per_pair"])
    assert r == simulate_adaptive_study(s, "rank-overlap", cap=20_000, seed=(1, 2))  # deterministic
    assert uniform_accuracy(s, 20, reps=500) < uniform_accuracy(s, 400, reps=500)
    aa = simulate_adaptive_study(cal.aa_scenario(3), "uniform", cap=3000, seed=0)
    assert aa["judgments"] == 3000 and not aa["decided"]


def test_quick_benchmark_keys_and_savings():
    out = run_adaptive_benchmark(quick=True, seed=0)
    for key in ("uniform_judgments", "adaptive_judgments", "aa_false_positive_rate", "naive_aa_false_positive_rate",
                "savings", "savings_ci", "settings"):
        assert key in out
    assert out["savings"] > 0
    assert out["aa_false_positive_rate"] <= 0.05 < out["naive_aa_false_positive_rate"]
    json.dumps(out)
