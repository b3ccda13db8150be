import numpy as np
import pandas as pd
import pytest
from scipy.stats import ttest_ind

from dialeval.stats import single_model as sm

Q = ["engaging", "humanlike", "interesting"]


@pytest.fixture
def turns():
    rows = []
    # bot A conv a1: engaging marked on turns 1-6 except 1,2 ; conv a2: marked on 3 only
    for conv, bot, marks in [("a1", "A", {3, 4, 5, 6}), ("a2", "A", {3}), ("b1", "B", {1, 2}), ("b2", "B", {1, 4, 5})]:
        for t in range(1, 7):
            rows.append(
                {
                    "conversation": conv,
                    "bot": bot,
                    "turn": t,
                    "engaging": float(t in marks),
                    "humanlike": 1.0,
                    "interesting": 0.0,
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture
def dialog():
    return pd.DataFrame(
        {
            "conversation": ["a1", "a2", "b1", "b2"],
            "bot": ["A", "A", "B", "B"],
            "engaging": [5, 3, 2, 4],
            "humanlike": [4, 4, 3, 3],
            "interesting": [5, 1, 1, 2],
        }
    )


def test_success_rates_and_wta(turns):
    r = sm.turn_success_rates(turns).set_index(["bot", "quality"])["rate"]
    assert r[("A", "engaging")] == pytest.approx(5 / 12)
    assert r[("B", "engaging")] == pytest.approx(5 / 12)
    s = sm.turn_success_rates(turns, (3, 6)).set_index(["bot", "quality"])["rate"]
    assert s[("A", "engaging")] == pytest.approx(5 / 8)
    assert s[("B", "engaging")] == pytest.approx(2 / 8)
    w = sm.turn_wta(turns, (3, 6)).set_index(["bot", "quality"])["wta"]
    # a1: 4/4 >= .5 ; a2: 1/4 ; b1: 0/4 ; b2: 2/4 (exactly half counts)
    assert w[("A", "engaging")] == pytest.approx(0.5)
    assert w[("B", "engaging")] == pytest.approx(0.5)
    assert w[("A", "humanlike")] == 1.0 and w[("A", "interesting")] == 0.0


def test_likert_and_ttest(dialog):
    s = sm.likert_summary(dialog).set_index(["bot", "quality"])
    assert s.loc[("A", "engaging"), "mean"] == 4.0
    assert s.loc[("A", "engaging"), "sd"] == pytest.approx(np.sqrt(2))
    r = sm.ttest([5, 3, 4, 5], [2, 4, 1, 2])
    ref = ttest_ind([5, 3, 4, 5], [2, 4, 1, 2])
    assert r["p"] == pytest.approx(ref.pvalue) and r["t"] == pytest.approx(ref.statistic)
    t = sm.pairwise_ttests(dialog, ["engaging"])
    assert t.iloc[0][["a", "b", "metric"]].tolist() == ["A", "B", "engaging"]


def test_effective_win_rate():
    x = [1, 2, 3]
    y = [2, 2]
    # pairs: (1,2) lose, (2,2) tie, (3,2) win -> (0 + .5 + 1)/3 per y value
    r = sm.effective_win_rate(x, y, n_boot=40000, seed=1)
    assert r["exact"] == pytest.approx(0.5)
    assert r["win_rate"] == pytest.approx(0.5, abs=0.01)
    r2 = sm.effective_win_rate([4, 5, 5], [1, 2], n_boot=2000)
    assert r2["exact"] == 1.0 and r2["win_rate"] == 1.0
    big = sm.effective_win_rate([3, 4] * 50, [3, 3, 4] * 30, n_boot=4000, sample_size=50, seed=0)
    assert big["win_rate"] > 0.8  # larger samples separate the means more often


def test_ols_recovers_coefficients():
    rng = np.random.default_rng(0)
    n = 400
    marks = rng.integers(0, 2, (n, 6)).astype(float)
    coef = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 1.0])
    y = 1.5 + marks @ coef
    rows, drows = [], []
    for i in range(n):
        for t in range(6):
            rows.append({"conversation": i, "bot": "A", "turn": t + 1, **{q: marks[i, t] for q in Q}})
        drows.append({"conversation": i, "bot": "A", **{q: y[i] for q in Q}})
    res = sm.ols_turn_coefficients(pd.DataFrame(rows), pd.DataFrame(drows))
    assert res["n"] == n
    assert res["coefficients"]["turn"].tolist() == [1, 2, 3, 4, 5, 6]
    assert res["coefficients"]["coef"].to_numpy() == pytest.approx(coef, abs=1e-8)
    assert res["intercept"] == pytest.approx(1.5) and res["r2"] == pytest.approx(1.0)


def test_combine_scores(turns, dialog):
    c = sm.combine_scores(turns, dialog, weight_turn=1, weight_dialog=3, turn_range=(3, 6)).set_index("conversation")
    # a1 engaging: WTA 1, Likert 5 -> 1 ; a2: WTA 0, Likert 3 -> .5 => (0 + 3*.5)/4
    assert c.loc["a1", "engaging"] == pytest.approx(1.0)
    assert c.loc["a2", "engaging"] == pytest.approx(1.5 / 4)
    assert c.loc["b1", "humanlike"] == pytest.approx((1 + 3 * 0.5) / 4)
    only_dialog = sm.combine_scores(turns, dialog, 0, 1).set_index("conversation")
    assert only_dialog.loc["b2", "interesting"] == pytest.approx(0.25)
    assert sm.likert_to_unit([1, 3, 5]).tolist() == [0, 0.5, 1]
    with pytest.raises(ValueError):
        sm.combine_scores(turns, dialog, 0, 0)


def test_effective_win_rate_interval_reflects_the_sample_not_the_bootstrap_count():
    """Issue 10: with 10 conversations per bot the interval was +-0.008 (the Monte Carlo error of
    10,000 rounds); it must be as wide as ten ratings per side allow, and narrow with more data."""
    rng = np.random.default_rng(4)
    x, y = rng.integers(1, 6, 10), rng.integers(1, 6, 10)
    small = sm.effective_win_rate(x, y, n_boot=10000, seed=0)
    assert small["ci_low"] <= small["exact"] <= small["ci_high"]
    assert small["ci_high"] - small["ci_low"] > 0.2
    big = sm.effective_win_rate(np.tile(x, 40), np.tile(y, 40), n_boot=10000, seed=0)
    assert big["ci_high"] - big["ci_low"] < (small["ci_high"] - small["ci_low"]) / 3
