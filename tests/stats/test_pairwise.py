import math
from datetime import datetime, timedelta

import pandas as pd
import pytest
from scipy.stats import binomtest

from dialeval.stats import pairwise as pw


def test_stars_thresholds():
    assert [pw.stars(p) for p in (0.2, 0.04, 0.009, 0.0009, float("nan"), None)] == ["", "*", "**", "***", "", ""]


def test_binomial_p_known_values():
    assert pw.binomial_p(7, 3) == pytest.approx(0.34375)  # 2 * (1+10+45+120)/1024
    assert pw.binomial_p(10, 0) == pytest.approx(2 / 1024)
    assert pw.binomial_p(60, 40) == pytest.approx(binomtest(60, 100).pvalue)
    assert pw.binomial_p(0, 0) == 1.0


def test_pair_table_and_grid():
    df = pd.DataFrame({"winner": ["A"] * 9 + ["B"] + ["C", "A", "A"], "loser": ["B"] * 9 + ["A"] + ["A", "C", "C"]})
    t = pw.pair_table(df)
    ab = t[(t.a == "A") & (t.b == "B")].iloc[0]
    assert (ab.wins_a, ab.wins_b, ab.n) == (9, 1, 10)
    assert ab.win_rate_a == pytest.approx(0.9)
    assert ab.p == pytest.approx(22 / 1024) and ab.stars == "*"
    ac = t[(t.a == "A") & (t.b == "C")].iloc[0]
    assert (ac.wins_a, ac.wins_b) == (2, 1)
    g = pw.win_rate_grid(df)
    assert g.rates.loc["A", "B"] == pytest.approx(0.9)
    assert g.rates.loc["B", "A"] == pytest.approx(0.1)
    assert math.isnan(g.rates.loc["B", "C"])
    assert g.formatted().loc["A", "B"] == "90*"
    assert g.to_dict()["rates"][1][2] is None


def test_agreement_and_question_agreement():
    df = pd.DataFrame(
        {
            "question": ["q1"] * 6 + ["q2"] * 4,
            "item": [1, 1, 1, 1, 2, 3, 1, 1, 1, 1],
            "choice": ["x", "x", "x", "y", "z", "z", "x", "y", "x", "y"],
        }
    )
    a = pw.agreement(df[df.question == "q1"])
    # only item 1 has >= 2 annotations: 3 of 4 chose x; pairs agreeing 3 of 6
    assert a["items"] == 1 and a["annotations"] == 4
    assert a["majority"] == pytest.approx(0.75)
    assert a["pairwise"] == pytest.approx(0.5)
    qa = pw.question_agreement(df)
    assert qa["question"].tolist() == ["q1", "q2"]
    assert qa["majority"].tolist() == pytest.approx([0.75, 0.5])


def test_aa_test():
    r = pw.aa_test([True] * 10 + [False] * 10)
    assert r["rate"] == 0.5 and r["p"] == pytest.approx(1.0) and r["passed"]
    assert not pw.aa_test([True] * 20)["passed"]


@pytest.fixture
def turns():
    # conversation 1: A wins turns 1,2,3 ; B wins 4  -> x=3, y=1
    # conversation 2: A wins 1 ; B wins 2,3,4          -> x=1, y=3
    # conversation 3: A wins 1,2 ; B wins 3,4          -> x=2, y=2
    chosen = ["A", "A", "A", "B", "A", "B", "B", "B", "A", "A", "B", "B"]
    return pd.DataFrame({"conversation": [1] * 4 + [2] * 4 + [3] * 4, "turn": [1, 2, 3, 4] * 3, "chosen": chosen})


def test_lin_sqr_wta_exact(turns):
    s = pw.pw_turn_scores(turns, "A", "B")
    assert (s["wins_a"], s["wins_b"]) == (6, 6)
    assert s["lin"] == pytest.approx(0.5)
    assert s["sqr"] == pytest.approx((9 / 10 + 1 / 10 + 4 / 8) / 3)
    assert s["wta"] == pytest.approx((1 + 0 + 0.5) / 3)
    r = pw.pw_turn_scores(turns, "A", "B", turn_range=(2, 4))
    # in turns 2-4: conv1 x=2,y=1 ; conv2 x=0,y=3 ; conv3 x=1,y=2
    assert (r["wins_a"], r["wins_b"]) == (3, 6)
    assert r["lin"] == pytest.approx(3 / 9)
    assert r["sqr"] == pytest.approx((4 / 5 + 0 + 1 / 5) / 3)
    assert r["wta"] == pytest.approx(1 / 3)
    assert r["p"] == pytest.approx(binomtest(3, 9).pvalue)


def test_per_turn_win_rates(turns):
    c = pw.per_turn_win_rates(turns, "A", "B")
    assert c["turn"].tolist() == [1, 2, 3, 4]
    assert c["win_rate_a"].tolist() == pytest.approx([1.0, 2 / 3, 1 / 3, 0.0])


def test_chunk_variability():
    t0 = datetime(2024, 1, 1)
    # 12 ratings of 15 min each => 4 chunks of 45 min; win rates 1, 2/3, 1/3, 0
    wins = [1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0]
    df = pd.DataFrame(
        {"win": wins, "elapsed_s": [900] * 12, "created_at": [t0 + timedelta(minutes=i) for i in range(12)]}
    )
    df = df.sample(frac=1, random_state=0)  # ordering comes from created_at
    r = pw.chunk_variability(df, score="win")
    assert r["chunks"] == 4
    assert r["rates"] == pytest.approx([1, 2 / 3, 1 / 3, 0])
    assert r["std"] == pytest.approx(pd.Series([1, 2 / 3, 1 / 3, 0]).std(ddof=1))
    # a trailing partial chunk is dropped
    r2 = pw.chunk_variability(pd.concat([df, df.iloc[:1].assign(created_at=t0 + timedelta(hours=5))]), score="win")
    assert r2["chunks"] == 4
