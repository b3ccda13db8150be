"""stats/binomial.py gives scipy.stats.binomtest's values to the bit, without importing scipy.stats."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from scipy.stats import binomtest

from dialeval.stats.binomial import two_sided_p, wilson_interval


def test_the_p_value_at_one_half_is_binomtests_to_the_bit():
    cases = [(k, n) for n in range(1, 61) for k in range(n + 1)]
    rng = np.random.default_rng(0)
    for n in (501, 1000, 4096, 20_001, 123_456, 1_000_000):  # large n: a few k near and far from n/2
        cases += [(int(k), n) for k in rng.integers(0, n + 1, 8)] + [(n // 2 - 3, n), (0, n), (n, n)]
    different = [(k, n) for k, n in cases if two_sided_p(k, n) != binomtest(k, n).pvalue]
    assert different == []


def test_other_nulls_go_to_binomtest():
    assert two_sided_p(7, 20, 0.3) == binomtest(7, 20, 0.3).pvalue


def test_the_wilson_interval_is_binomtests():
    for n in [*range(1, 31), 97, 1000, 123_457]:
        for k in {*range(min(n, 30) + 1), n // 3, n - 1, n}:
            test = binomtest(k, n)
            for level in (0.95, 0.9, 0.99):
                ci = test.proportion_ci(confidence_level=level, method="wilson")
                assert wilson_interval(k, n, level) == (ci.low, ci.high), (k, n, level)


def test_importing_it_does_not_import_scipy_stats():
    code = "import sys, dialeval.stats.binomial as b; b.two_sided_p(3, 10); print('scipy.stats' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_binom_cdf_sf_ppf_are_scipy_stats_binoms_to_the_bit():
    """What the power of a pairwise study asks for (stats/power.py), ends of the support and invalid
    arguments included, as arrays and as scalars."""
    from scipy.stats import binom

    from dialeval.stats.binomial import binom_cdf, binom_ppf, binom_sf

    rng = np.random.default_rng(1)
    n = np.concatenate([np.arange(0, 80), rng.integers(80, 200_000, 200), [2.5, -1, np.nan]])
    k = np.concatenate([rng.integers(-3, 90, n.size - 3), [1, 1, 1]]).astype(float)
    k[:5] = [-np.inf, np.inf, np.nan, -0.5, 3.7]
    for p in (0.0, 0.5, 0.3, 0.77, 1.0, 1.5, np.nan):
        for ours, theirs in ((binom_cdf, binom.cdf), (binom_sf, binom.sf)):
            assert np.array_equal(ours(k, n, p), theirs(k, n, p), equal_nan=True), (ours, p)
            ki, ni = k[5:-3].astype(int), n[5:-3].astype(int)  # integer arrays, as power.py passes them
            assert np.array_equal(ours(ki, ni, p), theirs(ki, ni, p), equal_nan=True), (ours, p)
        for q in (0.0, 0.025, 0.005, 0.5, 0.975, 1.0, 1.2):
            assert np.array_equal(binom_ppf(q, n, p), binom.ppf(q, n, p), equal_nan=True), (q, p)
    assert binom_cdf(3, 10, 0.5) == binom.cdf(3, 10, 0.5) and binom_ppf(0.025, 10, 0.5) == binom.ppf(0.025, 10, 0.5)
    assert binom_sf(3.0, 10, 0.4) == binom.sf(3.0, 10, 0.4) and np.ndim(binom_sf(3.0, 10, 0.4)) == 0
