"""Anytime-valid stopping (stats/sequential.py). Fixed seeds; exact checks where possible."""

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from dialeval.stats.sequential import (
    NaivePairTest,
    SequentialPairTest,
    always_valid_p,
    bonferroni_alpha,
    confidence_sequence,
    crossing_probability,
    decision_bounds,
    first_crossing,
    log_mixture_lr,
    mixture_components,
    naive_bounds,
)


def test_bounds_match_the_mixture_statistic():
    lo, hi = decision_bounds(400, 0.05)
    thr = math.log(20)
    for n in (25, 60, 137, 400):
        k = int(hi[n])
        assert log_mixture_lr(k, n) >= thr > log_mixture_lr(k - 1, n)
        assert lo[n] == n - hi[n]
        assert log_mixture_lr(int(lo[n]), n) >= thr > log_mixture_lr(int(lo[n]) + 1, n)
    assert hi[5] == 6 and lo[5] == -1  # nothing can be decided after 5 judgments


def test_always_valid_p_is_inverse_martingale():
    assert always_valid_p(0, 0) == 1.0
    p = always_valid_p(70, 100)
    assert p == pytest.approx(math.exp(-log_mixture_lr(70, 100)))
    assert always_valid_p(50, 100) == 1.0
    with pytest.raises(ValueError):
        always_valid_p(5, 3)


def test_exact_aa_false_positive_rate_within_alpha_naive_not():
    n_max = 3000
    lo, hi = decision_bounds(n_max, 0.05)
    exact = crossing_probability(0.5, lo, hi)
    assert exact["any"] <= 0.05
    assert exact["upper"] == pytest.approx(exact["lower"])
    nlo, nhi = naive_bounds(n_max, 0.05)
    assert crossing_probability(0.5, nlo, nhi)["any"] > 0.3  # peeking inflates the error


def test_simulated_aa_false_positive_rate_binomial_bound():
    rng = np.random.default_rng(20240601)
    n_paths, n_max, alpha = 4000, 1500, 0.05
    lo, hi = decision_bounds(n_max, alpha)
    cum = np.cumsum(rng.random((n_paths, n_max)) < 0.5, axis=1)
    t, _ = first_crossing(cum, lo, hi)
    fp = int((t > 0).sum())
    # one-sided exact binomial test of "FPR <= alpha": not rejected, and the point estimate is below alpha
    assert binomtest(fp, n_paths, alpha, alternative="greater").pvalue > 0.01
    assert fp / n_paths <= alpha
    nlo, nhi = naive_bounds(n_max, alpha)
    tn, _ = first_crossing(cum, nlo, nhi)
    assert (tn > 0).mean() > 0.25


def test_bonferroni_family_wise_error():
    m = 28
    level = bonferroni_alpha(0.05, m)
    lo, hi = decision_bounds(1000, level)
    per_pair = crossing_probability(0.5, lo, hi)["any"]
    assert 1 - (1 - per_pair) ** m <= 0.05


def test_confidence_sequence_covers_at_all_times():
    rng = np.random.default_rng(7)
    p_true, n_paths, n_max, alpha = 0.3, 2000, 800, 0.05
    x = rng.random((n_paths, n_max)) < p_true
    k = np.cumsum(x, axis=1)
    n = np.arange(1, n_max + 1)
    # CS_n excludes p_true  <=>  M_n(p_true) >= 1/alpha
    miss = (log_mixture_lr(k, n[None, :], p0=p_true) >= math.log(1 / alpha)).any(axis=1)
    misses = int(miss.sum())
    assert binomtest(misses, n_paths, alpha, alternative="greater").pvalue > 0.01
    assert misses / n_paths <= alpha
    # the interval form agrees with the test
    for kk, nn in ((3, 10), (40, 100), (0, 30), (30, 30), (230, 800)):
        lo_, hi_ = confidence_sequence(kk, nn, alpha)
        assert 0 <= lo_ <= kk / nn <= hi_ <= 1
        for q in (lo_ - 1e-4, hi_ + 1e-4):
            if 0 < q < 1:
                assert log_mixture_lr(kk, nn, p0=q) >= math.log(1 / alpha) - 1e-6
        mid = min(max((lo_ + hi_) / 2, 1e-6), 1 - 1e-6)
        assert log_mixture_lr(kk, nn, p0=mid) < math.log(1 / alpha)
    assert confidence_sequence(0, 0) == (0.0, 1.0)


def test_sequential_pair_test_stops_where_bounds_say():
    rng = np.random.default_rng(3)
    outcomes = rng.random(2000) < 0.62
    t = SequentialPairTest("x", "y", alpha=0.05)
    for o in outcomes:
        t.update("x" if o else "y")
    lo, hi = decision_bounds(2000, 0.05)
    stop, side = first_crossing(np.cumsum(outcomes)[None], lo, hi)
    assert t.decided and t.winner == "x" and side[0] == 1
    assert t.stopped_at == stop[0]
    assert t.n == 2000  # later judgments are counted but do not change the decision
    lo_, hi_ = t.interval
    assert lo_ > 0.5 and hi_ >= lo_
    t.update("tie")
    assert t.ties == 1 and t.n == 2000


def test_sequential_pair_test_bonferroni_and_inputs():
    t1 = SequentialPairTest(n_pairs=1).extend([True] * 40)
    t10 = SequentialPairTest(n_pairs=10).extend([True] * 40)
    assert t1.stopped_at < t10.stopped_at
    with pytest.raises(ValueError):
        SequentialPairTest("x", "y").update("z")


def test_naive_rule_decides_under_aa_more_often():
    rng = np.random.default_rng(11)
    naive = seq = 0
    for _ in range(100):
        o = rng.random(300) < 0.5
        nt, st = NaivePairTest(min_n=10), SequentialPairTest()
        for x in o:
            nt.update(bool(x))
            st.update(bool(x))
        naive += nt.decided
        seq += st.decided
    assert naive > 3 * max(seq, 5)


# -- the default statistic: an equal-weight mixture over Beta(c, c) priors ---------------------------


def test_mixture_components_and_statistic_is_their_average():
    assert mixture_components(20) == ((20.0, 20.0), (5.0, 5.0), (1.25, 1.25), (0.3125, 0.3125))
    assert mixture_components(20, "single") == ((20.0, 20.0),)
    assert mixture_components(0.5) == ((0.5, 0.5),)  # nothing flatter than Beta(1/4, 1/4)
    with pytest.raises(ValueError):
        mixture_components(20, "bogus")
    with pytest.raises(ValueError):
        SequentialPairTest(mixing="bogus")
    k, n = 37, 60
    singles = [log_mixture_lr(k, n, prior=c, mixing="single") for c in (20, 5, 1.25, 0.3125)]
    avg = math.log(sum(math.exp(x) for x in singles) / 4)
    assert log_mixture_lr(k, n) == pytest.approx(avg, rel=1e-12)
    assert log_mixture_lr(k, n, p0=0.4) == pytest.approx(
        math.log(sum(math.exp(log_mixture_lr(k, n, 0.4, c, "single")) for c in (20, 5, 1.25, 0.3125)) / 4)
    )
    # the old rule is still there: Beta(20, 20) needs 20 straight wins at 0.05
    assert decision_bounds(40, 0.05, mixing="single")[1][20] == 20
    assert decision_bounds(40, 0.05, mixing="single")[1][19] == 20
    assert SequentialPairTest(mixing="single").extend([True] * 40).stopped_at == 20
    assert SequentialPairTest().extend([True] * 40).stopped_at == 8


def test_mixture_bounds_match_statistic_and_are_symmetric():
    lo, hi = decision_bounds(600, 0.01)
    thr = math.log(100)
    assert hi[10] == 11 and hi[11] == 11  # at 0.01: 11 straight wins are the fastest decision
    for n in (11, 30, 123, 600):
        k = int(hi[n])
        assert log_mixture_lr(k, n) >= thr > log_mixture_lr(k - 1, n)
        assert lo[n] == n - hi[n]
    assert (np.diff(hi[10:]) >= 0).all()


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 28])
def test_mixture_exact_aa_false_positive_rate_within_alpha(alpha):
    # exact (dynamic programming) probability that the A/A path ever crosses within 4000 judgments
    lo, hi = decision_bounds(4000, alpha)
    exact = crossing_probability(0.5, lo, hi)
    assert exact["any"] <= alpha
    assert exact["upper"] == pytest.approx(exact["lower"])
    # Ville's bound is not loose by much: the mixture uses most of its error budget
    assert exact["any"] > 0.6 * alpha


def test_mixture_simulated_aa_false_positive_rate():
    rng = np.random.default_rng(20250101)
    n_paths, n_max, alpha = 4000, 1500, 0.05
    lo, hi = decision_bounds(n_max, alpha)
    cum = np.cumsum(rng.random((n_paths, n_max)) < 0.5, axis=1)
    t, _ = first_crossing(cum, lo, hi)
    fp = int((t > 0).sum())
    assert binomtest(fp, n_paths, alpha, alternative="greater").pvalue > 0.01
    assert fp / n_paths <= alpha
    # the online test object decides exactly where the bounds say (first 200 paths)
    for path in rng.random((200, 300)) < 0.5:
        st = SequentialPairTest().extend(path.tolist())
        s, _ = first_crossing(np.cumsum(path)[None], lo, hi)
        assert (st.stopped_at or 0) == s[0]


def _expected_n(p, mixing, n_max=3000, alpha=0.05):
    lo, hi = decision_bounds(n_max, alpha, mixing=mixing)
    r = crossing_probability(p, lo, hi, tol=1e-12)
    return r["expected_n"], r["upper"]


def test_mixture_stops_earlier_on_large_effect_not_much_later_on_small():
    mix9, acc9 = _expected_n(0.9, "mixture")
    one9, _ = _expected_n(0.9, "single")
    assert acc9 > 0.9999
    assert mix9 < 0.6 * one9  # 13.5 vs 26.0 judgments: the flat components take over
    mix6, acc6 = _expected_n(0.6, "mixture")
    one6, _ = _expected_n(0.6, "single")
    assert acc6 > 0.999
    assert one6 <= mix6 < 1.08 * one6  # 229 vs 221 judgments: the price of mixing is small


def test_mixture_earlier_on_large_effect_simulated():
    rng = np.random.default_rng(42)
    bounds = {m: decision_bounds(3000, 0.05, mixing=m) for m in ("mixture", "single")}
    for p, limit in ((0.9, 0.6), (0.6, 1.1)):
        cum = np.cumsum(rng.random((2000, 3000)) < p, axis=1)
        t = {}
        for m, (lo, hi) in bounds.items():
            t[m], side = first_crossing(cum, lo, hi)
            assert (t[m] > 0).all() and (side == 1).mean() > 0.995
        assert t["mixture"].mean() < limit * t["single"].mean()
    # the online test object agrees with the bounds
    x = (np.random.default_rng(5).random(60) < 0.9).tolist()
    assert SequentialPairTest().extend(x).stopped_at == first_crossing(np.cumsum(x)[None], *bounds["mixture"])[0][0]


def test_mixture_confidence_sequence_covers():
    rng = np.random.default_rng(8)
    p_true, n_paths, n_max, alpha = 0.8, 2000, 600, 0.05
    k = np.cumsum(rng.random((n_paths, n_max)) < p_true, axis=1)
    n = np.arange(1, n_max + 1)
    miss = (log_mixture_lr(k, n[None, :], p0=p_true) >= math.log(1 / alpha)).any(axis=1)
    assert miss.mean() <= alpha
    lo_, hi_ = confidence_sequence(40, 50, alpha)
    lo1, hi1 = confidence_sequence(40, 50, alpha, mixing="single")
    assert 0.5 < lo_ < 0.8 < hi_ and lo1 < 0.8 < hi1
    assert lo_ > lo1  # with a large effect the mixture's interval is tighter on the side of 0.5


def _running_intersection(outcomes, level):
    """Reference: the intersection over every n of the confidence sequence CS_n, computed directly."""
    lo, hi, wins = 0.0, 1.0, 0
    for n, won in enumerate(outcomes, start=1):
        wins += int(won)
        lo_n, hi_n = confidence_sequence(wins, n, level)
        lo, hi = max(lo, lo_n), min(hi, hi_n)
    return lo, hi


def test_interval_is_the_same_whether_read_after_every_update_or_once():
    rng = np.random.default_rng(12)
    outcomes = (rng.random(300) < 0.7).tolist()
    every, once = SequentialPairTest("x", "y"), SequentialPairTest("x", "y")
    for n, won in enumerate(outcomes, start=1):
        every.update(won)
        once.update(won)
        lo, hi = every.interval  # read after every judgment
        ref_lo, ref_hi = _running_intersection(outcomes[:n], every.level)
        assert lo <= hi
        assert (lo, hi) == pytest.approx((ref_lo, ref_hi), abs=1e-9)
        assert not every.interval_empty
    assert once.interval == pytest.approx(every.interval, abs=1e-12)
    # the intersection is narrower than the last confidence sequence alone
    last = confidence_sequence(every.wins_a, every.n, every.level)
    assert last[0] <= every.interval[0] and every.interval[1] <= last[1]
    assert every.interval != pytest.approx(last)


def test_empty_running_intersection_is_reported_not_inverted():
    # 30 wins then 30 losses: CS_30 lies above 0.8, CS_60 below 0.7, so no p is in every CS_n
    outcomes = [True] * 30 + [False] * 30
    every, once = SequentialPairTest("x", "y"), SequentialPairTest("x", "y")
    for won in outcomes:
        every.update(won)
        once.update(won)
        lo, hi = every.interval
        assert lo <= hi
    ref_lo, ref_hi = _running_intersection(outcomes, every.level)
    assert ref_lo > ref_hi  # the intersection really is empty
    for t in (every, once):
        assert t.interval_empty
        # documented fallback: the current confidence sequence CS_n alone
        assert t.interval == pytest.approx(confidence_sequence(30, 60, t.level), abs=1e-12)
        assert t.interval[0] < 0.5 < t.interval[1]
    # the flag turns on at the first judgment where the intersection becomes empty, and stays on
    t = SequentialPairTest("x", "y")
    first_empty = None
    for n, won in enumerate(outcomes, start=1):
        t.update(won)
        ref_lo, ref_hi = _running_intersection(outcomes[:n], t.level)
        assert t.interval_empty == (ref_lo > ref_hi)
        if t.interval_empty and first_empty is None:
            first_empty = n
    assert first_empty is not None and 30 < first_empty < 60


def test_stopping_table_reports_an_empty_intersection():
    from dialeval.config import AdaptiveConfig
    from dialeval.scheduling.state import AdaptiveState

    # x beats y 30 times, then y beats x 30 times: no win rate lies in every confidence sequence
    outcomes = [("x", "y", "x")] * 30 + [("x", "y", "y")] * 30
    (row,) = AdaptiveState.from_outcomes(outcomes, ["x", "y"], AdaptiveConfig(enabled=True)).stopping_table()
    assert row["ci_empty"] is True and row["ci_low"] < 0.5 < row["ci_high"]
    (row,) = AdaptiveState.from_outcomes(outcomes[:30], ["x", "y"], AdaptiveConfig(enabled=True)).stopping_table()
    assert row["ci_empty"] is False and 0.5 < row["ci_low"] <= row["ci_high"]
