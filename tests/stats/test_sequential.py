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
