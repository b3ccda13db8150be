"""Spot The Bot statistics on tiny frames."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dialeval.stats import spot_the_bot as stb


def frame(rows):
    cols = [
        "conversation_id",
        "exchanges",
        "system0",
        "system1",
        "label0",
        "label1",
        "fluency",
        "sensibleness",
        "specificity",
    ]
    return pd.DataFrame(rows, columns=cols)


def test_win_function_order():
    assert stb.win_outcome("human", "bot") == 1
    assert stb.win_outcome("human", "unsure") == 1
    assert stb.win_outcome("unsure", "bot") == 1
    assert stb.win_outcome("bot", "unsure") == -1
    assert stb.win_outcome("unsure", "human") == -1
    for label in ("human", "unsure", "bot"):
        assert stb.win_outcome(label, label) == 0
    assert stb.win_outcomes(["human", "bot", "unsure"], ["bot", "bot", "human"]).tolist() == [1, 0, -1]
    with pytest.raises(ValueError):
        stb.win_outcomes(["robot"], ["bot"])


def test_feature_outcomes():
    assert stb.feature_outcomes([0, 1, "tie", None, np.nan]).tolist() == [1, -1, 0, 0, 0]


def test_pairwise_win_rates_and_scores():
    f = frame(
        [
            ("c1", 2, "A", "B", "human", "bot", 0, 0, 0),
            ("c1", 3, "A", "B", "human", "unsure", 0, 0, 0),
            ("c2", 2, "B", "A", "bot", "unsure", 1, 1, 1),  # A wins as entity 1
            ("c2", 3, "B", "A", "human", "human", "tie", 0, 1),  # draw
            ("c3", 2, "B", "A", "human", "bot", 0, 0, 0),  # B wins
            ("c4", 2, "A", "C", "bot", "human", 1, 1, 1),  # C wins
        ]
    )
    wr = stb.pairwise_win_rates(f)
    ab = wr[(wr.a == "A") & (wr.b == "B")].iloc[0]
    assert (ab.wins, ab.losses, ab.draws, ab.total) == (3, 1, 1, 5)
    assert ab.win_rate == pytest.approx(0.75)
    ba = wr[(wr.a == "B") & (wr.b == "A")].iloc[0]
    assert ba.win_rate == pytest.approx(0.25) and ba.p == ab.p
    scores = stb.system_scores(wr)
    assert scores["A"] == pytest.approx((0.75 + 0.0) / 2)
    assert scores["C"] == pytest.approx(1.0)
    assert scores.index[0] == "C"


def _chi_square_by_hand(wins: int, losses: int, total: int, yates: bool) -> float:
    """p of the 2x2 test on [[w, l], [total - w, total - l]] written out: both columns sum to
    `total`, so every cell is off its expected count by the same d = |w - l| / 2; Yates takes 0.5
    off d (never below 0); with 1 degree of freedom P(chi2 > x) = erfc(sqrt(x / 2))."""
    n = 2 * total
    rows = (wins + losses, n - wins - losses)
    expected = [r * total / n for r in rows for _ in range(2)]
    d = abs(wins - losses) / 2
    if yates:
        d = max(0.0, d - 0.5)
    chi2 = sum(d * d / e for e in expected)
    return math.erfc(math.sqrt(chi2 / 2))


def test_chi_square_matches_released_choice():
    # the released code: chi2_contingency([[w, l], [total - w, total - l]]) with default Yates correction.
    # [[46, 9], [227, 264]]: expected 27.5 / 245.5, |O - E| = 18.5; Yates chi2 = 18^2 (2/27.5 + 2/245.5)
    assert 18**2 * (2 / 27.5 + 2 / 245.5) == pytest.approx(26.20315, abs=1e-5)
    assert stb.chi_square_p(46, 9, 273) == pytest.approx(3.073212e-07, rel=1e-6)
    assert stb.chi_square_p(46, 9, 273) == pytest.approx(_chi_square_by_hand(46, 9, 273, yates=True), rel=1e-9)
    uncorrected = stb.chi_square_p(46, 9, 273, correction=False)  # chi2 = 18.5^2 (2/27.5 + 2/245.5) = 27.679
    assert uncorrected == pytest.approx(1.432018e-07, rel=1e-6)
    assert uncorrected == pytest.approx(_chi_square_by_hand(46, 9, 273, yates=False), rel=1e-9)
    assert uncorrected < stb.chi_square_p(46, 9, 273)
    # [[30, 12], [30, 48]]: expected 21 / 39, Yates chi2 = 8.5^2 (2/21 + 2/39) = 10.586
    assert stb.chi_square_p(30, 12, 60) == pytest.approx(math.erfc(math.sqrt(8.5**2 * (2 / 21 + 2 / 39) / 2)))
    assert stb.chi_square_p(5, 4, 20) == 1.0  # |O - E| = 0.5: Yates leaves nothing
    assert stb.chi_square_p(10, 10, 40) == pytest.approx(1.0)
    assert stb.chi_square_p(0, 0, 10) == 1.0  # degenerate table


def test_label_agreement():
    f = frame(
        [
            ("c1", 2, "A", "B", "human", "bot", 0, 0, 0),
            ("c1", 2, "A", "B", "human", "human", 0, 0, 0),
            ("c2", 2, "A", "B", "bot", "bot", 0, 0, 0),
            ("c2", 2, "A", "B", "unsure", "bot", 0, 0, 0),
            ("c3", 2, "A", "B", "bot", "bot", 0, 0, 0),  # single annotation: ignored
        ]
    )
    ag = stb.label_agreement(f).set_index(["system", "label"])["agreement"]
    assert ag["A", "human"] == 1.0
    assert ag["A", "bot"] == 0.0 and ag["A", "unsure"] == 0.0
    # B: c1 (bot, human) disagree, c2 (bot, bot) agree: bot -> [0, 1, 1]
    assert ag["B", "bot"] == pytest.approx(2 / 3)
    assert ag["B", "human"] == 0.0


def test_feature_alpha_perfect_and_oriented():
    rows = []
    for i in range(6):
        better = i % 2
        # pair written in both entity orders: orientation by system name keeps agreement perfect
        s0, s1 = ("A", "B") if i < 3 else ("B", "A")
        for _ in range(2):
            rows.append((f"c{i}", 2, s0, s1, "bot", "bot", better, better, "tie" if i == 0 else better))
    alpha = stb.feature_alpha(frame(rows))
    assert alpha["fluency"] == pytest.approx(1.0)
    assert alpha["specificity"] == pytest.approx(1.0)
    disagree = frame([(f"c{i}", 2, "A", "B", "bot", "bot", w, w, w) for i in range(4) for w in (0, 1)])
    assert stb.feature_alpha(disagree)["fluency"] < 0


def test_time_summary():
    t = stb.time_summary([10, 20, 30, None, 4000])
    assert t["n"] == 4 and t["median_s"] == 25 and t["mean_s"] == pytest.approx(1015)
    assert t["mean_s_under_10min"] == pytest.approx(20)


def test_conversation_matches():
    f = frame(
        [
            ("c1", 2, "A", "B", "human", "bot", 0, 0, 0),  # A wins k=2
            ("c1", 2, "A", "B", "human", "bot", 0, 0, 0),
            ("c1", 5, "A", "B", "bot", "human", 0, 0, 0),  # B wins k=5 -> B wins the conversation
            ("c1", 5, "A", "B", "bot", "unsure", 0, 0, 0),
            ("c2", 3, "B", "C", "human", "unsure", 0, 0, 0),  # 1:0 annotations -> B
            ("c2", 3, "B", "C", "bot", "bot", 0, 0, 0),
            ("c3", 2, "A", "C", "bot", "bot", 0, 0, 0),  # draw
        ]
    )
    m = stb.conversation_matches(f).set_index("conversation_id")
    assert m.loc["c1", "outcome"] == -1
    assert m.loc["c2", "outcome"] == 1
    assert m.loc["c3", "outcome"] == 0


def test_leave_one_out():
    rows = []
    for i, (x, y) in enumerate([("A", "B"), ("A", "C"), ("B", "C")] * 4):
        rows.append((f"c{i}", 2, x, y, "human", "bot", 0, 0, 0))
    loo = stb.leave_one_out(frame(rows))
    assert [x["left_out"] for x in loo] == ["A", "B", "C"]
    assert all(x["same"] for x in loo)
    assert loo[0]["ranking"] == ["B", "C"]


def _random_annotations(seed: int, n: int = 4_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    systems = np.array(["ba", "bb", "bc", "bd", "be"])
    conv = rng.integers(0, 600, n)
    first, shift = rng.integers(0, 5, 600), rng.integers(1, 5, 600)
    return pd.DataFrame(
        {
            "conversation_id": [f"c{c}" for c in conv],
            "system0": systems[first[conv]],
            "system1": systems[(first[conv] + shift[conv]) % 5],
            "label0": rng.choice(stb.LABELS, n),
            "label1": rng.choice(stb.LABELS, n),
        }
    )


def _pair_subsample_as_first_written(frame, k, rng):
    conv = frame[["conversation_id", "system0", "system1"]].drop_duplicates("conversation_id")
    pairs = [tuple(sorted(p)) for p in zip(conv["system0"], conv["system1"])]
    conv = conv[["conversation_id"]].assign(pair=pairs)
    keep: list[str] = []
    for _, g in conv.groupby("pair"):
        ids = g["conversation_id"].to_numpy()
        keep.extend(rng.choice(ids, size=min(k, len(ids)), replace=False).tolist())
    return frame[frame["conversation_id"].isin(set(keep))]


def test_pair_subsample_draws_as_first_written():
    # the pools found once draw the same conversations from the same generator as the ids did
    f = _random_annotations(0)
    for k in (1, 3, 30, 10_000):
        fast, slow = np.random.default_rng(k), np.random.default_rng(k)
        for _ in range(4):
            assert stb.pair_subsample(f, k, fast).equals(_pair_subsample_as_first_written(f, k, slow))
        assert fast.random() == slow.random()


def test_win_outcomes_are_the_label_scores_mapped():
    f = _random_annotations(1)
    s0 = f["label0"].map(stb.LABEL_SCORE).to_numpy(int)
    s1 = f["label1"].map(stb.LABEL_SCORE).to_numpy(int)
    assert np.array_equal(stb.win_outcomes(f["label0"], f["label1"]), np.sign(s0 - s1))
    assert stb.win_outcomes(list(f["label0"]), tuple(f["label1"])).tolist() == np.sign(s0 - s1).tolist()
    for bad in (None, float("nan"), "robot"):
        with pytest.raises(ValueError, match="labels must be one of"):
            stb.win_outcomes(["human", bad], ["bot", "bot"])
