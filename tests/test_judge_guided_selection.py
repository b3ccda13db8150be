"""Judge-guided choice of the units people label (guided.judge_guided_selection, guided.judge_uncertainty)."""

import numpy as np
import pytest

from dialeval.guided import judge_guided_selection, judge_uncertainty
from dialeval.stats.ppi import ppi_mean_active


def test_uncertainty_from_the_two_side_orders():
    u = judge_uncertainty([1.0, 1.0, 0.5, np.nan], [1.0, 0.0, 1.0, 1.0])
    assert u[0] == pytest.approx(0.05)  # consistent: only the floor
    assert u[1] == pytest.approx(1.0)  # flips with the order: a guess
    assert u[0] < u[2] < u[1] and u[3] == pytest.approx(1.0)


def test_selection_spends_the_budget_where_the_judge_is_unsure_and_stays_unbiased():
    rng = np.random.default_rng(4)
    M, budget = 5000, 500
    consistent = rng.random(M) < 0.7  # the judge gave the same verdict in both orders on 70% of units
    first = (rng.random(M) < 0.5).astype(float)
    second = np.where(consistent, first, 1 - first)
    u = judge_uncertainty(first, second)
    ids = [f"unit-{k}" for k in range(M)]
    chosen = judge_guided_selection(ids, u, budget, seed=1)
    assert chosen == judge_guided_selection(ids, u, budget, seed=1)  # a replay draws the same
    assert abs(len(chosen) - budget) < 4 * np.sqrt(budget)
    picked = np.asarray([i in chosen for i in ids])
    assert picked[~consistent].mean() > 2 * picked[consistent].mean()
    # people agree with a consistent judge 90% of the time, with an inconsistent one 50%: the
    # weighted estimate of the people's mean covers the truth
    hits = 0
    reps = 200
    for r in range(reps):
        yh = (first + second) / 2
        right = rng.random(M) < np.where(consistent, 0.9, 0.5)
        y = np.where(right, np.round(yh + 1e-9), 1 - np.round(yh + 1e-9))
        truth = np.mean(np.where(consistent, 0.9 * first + 0.1 * (1 - first), 0.5))  # E[mean of y]
        sel = judge_guided_selection(ids, u, budget, seed=100 + r)
        lab = np.asarray([i in sel for i in ids])
        pi = np.asarray([sel.get(i, 1.0) for i in ids])  # only the labelled units' π is used
        res = ppi_mean_active(yh, lab, y, pi)
        hits += float(res.ci_low) <= truth <= float(res.ci_high)
    assert hits / reps >= 0.91  # 95% nominal; 200 studies: 3 standard errors below is 0.904
