"""Rater agreement of the judge audit, checked against scikit-learn and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from dialeval.stats.rater_agreement import agreement, share_test, two_shares_test


def test_kappa_and_raw_agreement_match_sklearn_and_the_interval_covers_them():
    rng = np.random.default_rng(3)
    truth = rng.choice(["a", "b", "tie"], size=400, p=[0.45, 0.4, 0.15])
    judge = np.where(rng.random(400) < 0.7, truth, rng.choice(["a", "b", "tie"], size=400))
    result = agreement([[(j, t)] for j, t in zip(judge, truth)], n_boot=500, seed=1)
    assert result["agreement"] == pytest.approx(float(np.mean(judge == truth)), abs=1e-4)
    assert result["kappa"] == pytest.approx(cohen_kappa_score(judge, truth), abs=1e-4)
    assert result["agreement_ci"][0] < result["agreement"] < result["agreement_ci"][1]
    assert result["kappa_ci"][0] < result["kappa"] < result["kappa_ci"][1]
    assert (result["items"], result["pairs"]) == (400, 400)


def test_two_people_are_interchangeable_and_empty_input_is_none():
    pairs = [[("x", "y")], [("y", "x")], [("x", "x")], [("y", "y")]]
    result = agreement(pairs, symmetric=True, n_boot=0)
    assert result["agreement"] == 0.5 and result["kappa"] == 0.0
    assert agreement([], n_boot=10)["agreement"] is None


def test_binomial_share_and_fisher_test():
    always_first = share_test(40, 40)
    assert always_first["share"] == 1.0 and always_first["p_value"] < 1e-6
    assert share_test(20, 40)["p_value"] == 1.0
    assert two_shares_test(30, 30, 15, 30) < 0.001
    assert two_shares_test(1, 0, 3, 4) is None
