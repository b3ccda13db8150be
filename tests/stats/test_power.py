import numpy as np
import pytest
from scipy.stats import binomtest

from dialeval.stats import power as pw


def test_rejection_bound_matches_binomtest():
    for n in [1, 5, 6, 10, 17, 30, 101]:
        ks = [k for k in range(n // 2 + 1) if binomtest(k, n).pvalue < 0.05]
        assert pw.binomial_rejection_bound(n) == (max(ks) if ks else -1)


def test_binomial_power_exact_small_n():
    # n=10 rejects k<=1 or k>=9
    w = 0.7
    expected = sum(pw.sps.binom.pmf(k, 10, w) for k in (0, 1, 9, 10))
    assert pw.binomial_power(w, [10])[0] == pytest.approx(expected)
    # under the null the size never exceeds alpha
    assert (pw.binomial_power(0.5, np.arange(2, 300)) <= 0.05).all()


def test_ttest_power_known_value():
    # d = 0.5, n = 64 per group gives the textbook ~80% power
    assert pw.ttest_power(0.5, [64])[0] == pytest.approx(0.80, abs=0.01)


def test_simulation_agrees_with_closed_form():
    outcomes = np.r_[np.ones(60), np.zeros(40)]
    ns = np.array([50, 100, 200])
    sim = pw.simulate_binomial_power(outcomes, ns, n_sim=4000, seed=1)
    assert sim == pytest.approx(pw.binomial_power(0.6, ns), abs=0.03)
    x = np.r_[np.full(50, 4.0), np.full(50, 3.0)]
    y = np.r_[np.full(35, 4.0), np.full(65, 3.0)]
    d = pw.cohens_d(x, y)
    simt = pw.simulate_ttest_power(x, y, [50, 150], n_sim=4000, seed=2)
    assert simt == pytest.approx(pw.ttest_power(d, [50, 150]), abs=0.04)


def test_pairwise_time_to_significance():
    r = pw.pairwise_time_to_significance(
        win_rate=0.6, seconds_per_judgment=36, onboarding_seconds=360, judgments_per_annotator=10, n_sim=0
    )
    n = r["n_needed"]
    assert pw.binomial_power(0.6, [n])[0] >= 0.8
    assert 150 < n < 260
    assert r["hours_needed"] == pytest.approx((n * 36 + np.ceil(n / 10) * 360) / 3600)
    curve = r["curve"]
    assert list(curve.columns) == ["n", "power", "power_sim", "hours"]
    assert curve["hours"].is_monotonic_increasing


def test_single_model_time_to_significance():
    r = pw.single_model_time_to_significance(effect_size=0.5, seconds_per_judgment=600)
    assert r["n_needed"] in range(60, 70)
    assert r["hours_needed"] == pytest.approx(2 * r["n_needed"] * 600 / 3600)
    rng = np.random.default_rng(0)
    x, y = rng.integers(3, 6, 80), rng.integers(2, 5, 80)
    r2 = pw.single_model_time_to_significance(x, y, seconds_per_judgment=300, n_sim=500)
    assert r2["n_needed_sim"] is not None
    assert abs(r2["n_needed_sim"] - r2["n_needed"]) <= max(5, 0.3 * r2["n_needed"])


# --- exact time to significance -------------------------------------------------------------------


def _brute_force(win_rate, target=0.8, upto=3000):
    # every n from 1 to `upto`, the test's p-values straight from the binomial distribution
    # (two-sided at 0.5 = min(1, 2 min(P(X <= k), P(X >= k))), what scipy's binomtest gives, checked
    # below on a few n): no code of stats.power involved
    from scipy.stats import binom

    first = stable = None
    for n in range(1, upto + 1):
        ks = np.arange(n + 1)
        p_values = np.minimum(1.0, 2 * np.minimum(binom.cdf(ks, n, 0.5), binom.sf(ks - 1, n, 0.5)))
        if n in (7, 50, 333):
            assert p_values == pytest.approx([binomtest(int(k), n).pvalue for k in ks], rel=1e-9, abs=1e-12)
        pw_n = float(binom.pmf(ks[p_values < 0.05], n, win_rate).sum())
        if pw_n >= target:
            first = first or n
            stable = stable or n
        else:
            stable = None
    return first, stable


def test_exact_n_needed_win_rate_055_is_786_not_the_grid_832():
    # Frozen: 786 and 820 = _brute_force(0.55, upto=2500) (every n, p-values from scipy's binomial;
    # run once, 3 s); the old geometric grid gave 832.
    r = pw.pairwise_time_to_significance(win_rate=0.55, n_sim=0)
    assert r["n_needed"] == 786
    assert r["n_needed_stable"] == 820
    assert pw.binomial_power(0.55, [785])[0] < 0.8 <= pw.binomial_power(0.55, [786])[0]
    dips = np.arange(786, 820)
    assert (pw.binomial_power(0.55, dips) < 0.8).any()  # the power dips below again before 820
    assert (pw.binomial_power(0.55, np.arange(820, 5000)) >= 0.8).all()
    assert {786, 820} <= set(r["curve"]["n"])  # the curve shows the crossing


def test_exact_n_needed_matches_brute_force_binomtest():
    first, stable = _brute_force(0.62, upto=400)
    r = pw.pairwise_time_to_significance(win_rate=0.62, n_sim=0)
    assert (r["n_needed"], r["n_needed_stable"]) == (first, stable)
    assert first < stable  # the discrete test's power is not monotone even here


def test_smallest_n_on_monotone_power_and_unreachable_target():
    assert pw.smallest_n(lambda n: n / 1000.0, 0.5, 10_000) == (500, 500)
    assert pw.smallest_n(lambda n: np.zeros(len(n)), 0.8, 5000) == (None, None)
    # a dip after the first crossing moves the stable n past it; a dip at the horizon: none
    assert pw.smallest_n(lambda n: np.where(n == 150, 0.0, n / 100.0), 0.8, 900) == (80, 151)
    assert pw.smallest_n(lambda n: np.where(n == 120, 0.0, n / 100.0), 0.8, 120) == (80, None)


def test_single_model_exact_n_and_no_nan_power():
    # textbook: d = 0.5, 80 % power at alpha 0.05 needs 64 per group (G*Power / pwr::pwr.t.test: 63.77)
    r = pw.single_model_time_to_significance(effect_size=0.5, n_sim=0)
    assert r["n_needed"] == r["n_needed_stable"] == 64
    # scipy's noncentral t gives NaN at large noncentrality: the power must stay a number
    assert np.isfinite(pw.ttest_power(0.5, np.arange(2, 20_000))).all()
