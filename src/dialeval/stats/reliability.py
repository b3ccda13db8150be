"""Krippendorff's alpha (Krippendorff, 2011, "Computing Krippendorff's Alpha-Reliability",
University of Pennsylvania, Annenberg School for Communication Departmental Papers 43).

The one place dialeval computes alpha. It delegates to evalica (Apache-2.0), which
covers every level dialeval needs (nominal, ordinal, interval, ratio and a custom distance such as
the one Spot The Bot uses) with numpy, pandas and scipy as its only dependencies. It replaced the
GPL-3.0 `krippendorff` package, which an MIT package cannot require; its results on the released
Spot The Bot data are unchanged to 1e-9 (tests/stats/test_reliability.py). evalica is a 0.x
library: only this module may call it, so an API change is fixed here.

Pure: numpy/pandas/evalica in, a float out; nothing from the project.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import pandas as pd

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha(data, level: Level | Callable[[float, float], float] = "nominal") -> float:
    """Krippendorff's alpha of a reliability data matrix: one row per coder, one column per unit,
    NaN where a coder gave no value (Krippendorff, 2011).

    ``level`` is a level of measurement (its distance metric as in Krippendorff, 2011) or a distance
    function of two values, called on scalars. Units with fewer than two values carry no information
    and are left out. NaN when alpha is undefined: no unit with two values, or no variation at all
    (a single value throughout, whose expected disagreement is 0).

    The worked example of Krippendorff (2011): 4 observers, 12 units, with missing values.

    >>> nan = float("nan")
    >>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...         [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    >>> [round(krippendorff_alpha(data, level), 3) for level in ("nominal", "ordinal", "interval")]
    [0.743, 0.815, 0.849]
    """
    import evalica  # imported on use: importing dialeval.stats stays cheap

    matrix = np.asarray(data, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"reliability data must be a coders x units matrix, got shape {matrix.shape}")
    pairable = matrix[:, (~np.isnan(matrix)).sum(axis=0) >= 2]
    if pairable.size == 0 or np.unique(pairable[~np.isnan(pairable)]).size < 2:
        return float("nan")
    if not callable(level) and level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS} or a distance function, got {level!r}")
    # evalica's compiled solver takes level names only; the pure-Python one also takes a function
    # (its result is the same to rounding).
    solver: Literal["naive", "pyo3"] = "naive" if callable(level) else "pyo3"
    return float(evalica.alpha(pd.DataFrame(pairable), distance=level, solver=solver).alpha)
