"""The judge's doubt about a unit, from its two side orders (guided.judge_uncertainty)."""

import numpy as np
import pytest

from dialeval.scheduling.pools import judge_uncertainty


def test_uncertainty_from_the_two_side_orders():
    u = judge_uncertainty([1.0, 1.0, 0.5, np.nan], [1.0, 0.0, 1.0, 1.0])
    assert u[0] == pytest.approx(0.05)  # consistent: only the floor
    assert u[1] == pytest.approx(1.0)  # flips with the order: a guess
    assert u[0] < u[2] < u[1] and u[3] == pytest.approx(1.0)
