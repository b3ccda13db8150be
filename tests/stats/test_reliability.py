"""Krippendorff's alpha (dialeval.stats.reliability) against the worked examples of Krippendorff
(2011), "Computing Krippendorff's Alpha-Reliability", and against the values the GPL `krippendorff`
package it replaced gave on the released Spot The Bot data (frozen here, to 1e-9)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from dialeval.stats import spot_the_bot as stb
from dialeval.stats.reliability import krippendorff_alpha

nan = float("nan")

# Krippendorff (2011): 4 observers x 12 units with missing values; the paper's alphas per level.
FOUR_OBSERVERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]


@pytest.mark.parametrize(
    "level, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_four_observers_with_missing_values(level, published):
    assert round(krippendorff_alpha(FOUR_OBSERVERS, level), 3) == published


def test_two_observers_binary_and_nominal():
    # Krippendorff (2011): binary data, two observers (0.095); nominal data a..e, two observers (0.692)
    binary = [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]
    assert round(krippendorff_alpha(binary, "nominal"), 3) == 0.095
    code = {c: i for i, c in enumerate("abcde")}
    nominal = [[code[c] for c in "aabbdcccedda"], [code[c] for c in "babbbccceddd"]]
    assert round(krippendorff_alpha(nominal, "nominal"), 3) == 0.692


def test_a_distance_function_is_a_level():
    # the squared difference as a function is the interval level
    squared = krippendorff_alpha(FOUR_OBSERVERS, lambda a, b: (a - b) ** 2)
    assert squared == pytest.approx(krippendorff_alpha(FOUR_OBSERVERS, "interval"), abs=1e-12)


def test_spot_the_bot_distance_by_hand():
    # units (1, 1), (-1, 0), (0, 0) with |a - b|: n = 6 values (one -1, three 0, two 1);
    # D_o = (1 + 1) / 6, D_e = 2 (1*3*1 + 1*2*2 + 3*2*1) / (6 * 5) = 26/30; alpha = 1 - 10/26 = 8/13
    assert krippendorff_alpha([[1, -1, 0], [1, 0, 0]], stb._abs_distance) == pytest.approx(8 / 13, abs=1e-12)


def test_undefined_alpha_is_nan_and_a_bad_level_is_named():
    assert np.isnan(krippendorff_alpha([[1, 1, 1], [1, 1, 1]]))  # no variation
    assert np.isnan(krippendorff_alpha([[1, nan], [nan, 2]]))  # no unit coded twice
    assert np.isnan(krippendorff_alpha(np.empty((0, 0))))
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha(FOUR_OBSERVERS, "cardinal")


# What `krippendorff` 0.9.0 gave on the bot-bot segments of the released data, per feature:
# nominal, ordinal, interval, and the |a - b| distance Spot The Bot reports (feature_alpha).
RELEASED = {
    ("dailydialog", "fluency"): (0.12270603697201676, 0.19353905973295826, 0.1957317243498422, 0.15244058485318945),
    ("dailydialog", "sensibleness"): (0.08463704019354845, 0.147726946683858, 0.14781294290840985, 0.11141376985925655),
    ("dailydialog", "specificity"): (0.11760858004734276, 0.23470215980396691, 0.2355351402098892, 0.16981985614453998),
    ("empathetic", "fluency"): (0.19268311831052243, 0.24351066423155943, 0.2451764137750636, 0.2133677437769823),
    ("empathetic", "sensibleness"): (0.24816168746585987, 0.2973831388220828, 0.29305157022158446, 0.2666905190778164),
    ("empathetic", "specificity"): (0.14328716216216209, 0.2285168380676793, 0.22991300313188723, 0.17978593421631395),
}


@cache
def _bot_bot_frame(folder: str, domain: str):
    from dialeval.formats.spot_the_bot import read_spot_the_bot
    from dialeval.methods.spot_the_bot.analysis import annotation_frame

    frame = annotation_frame(read_spot_the_bot(folder, domain))
    return frame[frame["bot_bot"]].reset_index(drop=True)


@pytest.mark.shared_data
@pytest.mark.parametrize("domain", ["dailydialog", "empathetic"])
def test_released_spot_the_bot_alphas_unchanged(shared_data, domain):
    bots = _bot_bot_frame(str(shared_data("spot-the-bot")), domain)
    reported = stb.feature_alpha(bots)
    for feature in stb.FEATURES:
        *levels, custom = RELEASED[domain, feature]
        assert reported[feature] == pytest.approx(custom, abs=1e-9)
        data = stb.feature_reliability_data(bots, feature)
        for level, expected in zip(("nominal", "ordinal", "interval"), levels):
            assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-9), (feature, level)
