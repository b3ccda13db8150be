"""Direct Assessment statistics on tiny hand-made frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dialeval.stats import direct_assessment as da

CRIT = list(da.CRITERIA)


def frame(rows):
    """rows: (annotator, system, unit, [7 raw scores in CRITERIA order])"""
    out = []
    for k, (ann, system, unit, scores) in enumerate(rows):
        row = {
            "annotator": ann,
            "conversation": f"c{k}",
            "unit": unit,
            "system": system,
            "is_qc": system == "qc",
            "elapsed_s": 60.0 * (k + 1),
        }
        row.update(dict(zip(CRIT, map(float, scores))))
        out.append(row)
    return pd.DataFrame(out)


def test_reverse_negatives_only_touches_robotic_and_repetitive():
    f = frame([("w", "a", "u", [10, 20, 30, 40, 50, 60, 70])])
    r = da.reverse_negatives(f)
    assert r.loc[0, CRIT].tolist() == [90, 20, 30, 40, 50, 40, 70]
    assert f.loc[0, "robotic"] == 10  # input untouched


def test_z_uses_all_scores_of_the_annotator_including_qc():
    f = frame(
        [
            ("w", "a", "u", [0, 10, 20, 30, 40, 50, 60]),
            ("w", "qc", "u", [100, 0, 0, 0, 0, 0, 0]),
            ("v", "a", "u2", [50] * 7),
        ]
    )
    z = da.standardize(f)
    values = np.array([0, 10, 20, 30, 40, 50, 60, 100, 0, 0, 0, 0, 0, 0], dtype=float)
    mean, sd = values.mean(), values.std(ddof=1)
    assert z.loc[0, "annotator_mean"] == pytest.approx(mean)
    assert z.loc[0, "annotator_sd"] == pytest.approx(sd)
    assert z.loc[0, "z_interesting"] == pytest.approx((10 - mean) / sd)
    assert z.loc[1, "z_robotic"] == pytest.approx((100 - mean) / sd)
    assert z.loc[0, "z"] == pytest.approx(((np.arange(0, 70, 10) - mean) / sd).mean())
    assert z.loc[0, "raw"] == pytest.approx(30.0)
    assert np.isnan(z.loc[2, "z"])  # constant annotator: no z


def test_qc_test_direction_and_positive_criteria_only():
    good = [
        ("good", "a", "u", [50, 80, 70, 75, 85, 50, 90]),
        ("good", "b", "u", [50, 70, 75, 80, 70, 50, 85]),
        ("good", "qc", "u", [50, 10, 15, 5, 20, 50, 10]),
    ]
    # rates the QC bot HIGHER: must fail; its negatives are lowest for qc but those do not count
    backwards = [
        ("back", "a", "u2", [0, 10, 15, 5, 20, 0, 10]),
        ("back", "b", "u2", [0, 12, 14, 6, 18, 0, 11]),
        ("back", "qc", "u2", [100, 80, 70, 75, 85, 100, 90]),
    ]
    qc = da.qc_test(frame(good + backwards))
    assert bool(qc.loc["good", "passed"]) and qc.loc["good", "p"] < 0.05
    assert not bool(qc.loc["back", "passed"]) and qc.loc["back", "p"] > 0.9
    assert qc.loc["good", "n_qc"] == 5 and qc.loc["good", "n_ordinary"] == 10
    assert qc.loc["back", "reason"].startswith("QC bot not rated lower")


def test_qc_test_only_negative_criteria_separate_does_not_pass():
    # QC distinguished only through robotic/repetitive: positives identical -> fail
    rows = [
        ("w", "a", "u", [90, 50, 50, 50, 50, 90, 50]),
        ("w", "b", "u", [80, 50, 50, 50, 50, 80, 50]),
        ("w", "qc", "u", [0, 50, 50, 50, 50, 0, 50]),
    ]
    qc = da.qc_test(da.reverse_negatives(frame(rows)))
    assert not bool(qc.loc["w", "passed"]) and qc.loc["w", "reason"] == "constant scores"


def test_qc_test_without_qc_ratings_fails():
    qc = da.qc_test(frame([("w", "a", "u", [1, 2, 3, 4, 5, 6, 7])]))
    assert qc.loc["w", "p"] == 1.0 and qc.loc["w", "reason"] == "no QC ratings"


def test_system_scores_n_and_overall():
    f = da.standardize(
        da.reverse_negatives(
            frame(
                [
                    ("w", "a", "u", [0, 90, 90, 90, 90, 0, 90]),
                    ("w", "b", "u", [50, 50, 50, 50, 50, 50, 50]),
                    ("w", "a", "u3", [10, 80, 80, 80, 80, 10, 80]),
                ]
            )
        )
    )
    t = da.system_scores(f)
    assert t.index.tolist() == ["a", "b"]  # best first
    assert t.loc["a", "n"] == 14 and t.loc["a", "conversations"] == 2
    zcols = [f"z_{c}" for c in CRIT]
    assert t.loc["a", "overall"] == pytest.approx(f.loc[f.system == "a", zcols].to_numpy().mean())
    raw = da.raw_system_scores(f)
    assert raw.loc["b", "overall"] == pytest.approx(50)
    assert raw.loc["a", "robotic"] == pytest.approx(95)  # reversed


def test_pairwise_is_one_sided():
    f = pd.DataFrame({"system": ["a"] * 6 + ["b"] * 6, "z": [1, 2, 3, 4, 5, 6] + [-6, -5, -4, -3, -2, -1]})
    p = da.pairwise_tests(f).set_index(["a", "b"])["p"]
    assert p[("a", "b")] < 0.01 and p[("b", "a")] > 0.99


def test_rater_agreement_pairs_units_with_same_systems():
    rows = []
    for unit, ann, zs in [("u1", "w1", [1, 2, 3]), ("u2", "w2", [2, 4, 6.5]), ("u3", "w3", [3, 2, 1])]:
        for system, z in zip(["a", "b", "c"], zs):
            rows.append({"unit": unit, "annotator": ann, "system": system, "z": z})
    rows.append({"unit": "u4", "annotator": "w4", "system": "d", "z": 0.0})  # different set: no pair
    agree = da.rater_agreement(pd.DataFrame(rows))
    assert len(agree) == 3
    r = agree.set_index(["unit_a", "unit_b"])["r"]
    assert r[("u1", "u3")] == pytest.approx(-1.0)
    assert r[("u1", "u2")] > 0.99


def test_criteria_correlations_and_minutes_and_rates():
    t = pd.DataFrame({"overall": [1, 2, 3, 4], "fun": [1, 2, 3, 5], "topic": [4, 3, 2, 1]}, index=list("abcd"))
    c = da.criteria_correlations(t)
    assert c["spearman"].loc["overall", "fun"] == pytest.approx(1.0)
    assert c["pearson"].loc["overall", "topic"] == pytest.approx(-1.0)
    f = frame([("p", "a", "u", [1] * 7), ("f", "a", "u2", [2] * 7)])  # elapsed 60 s, 120 s
    assert da.minutes_per_conversation(f, ["p"]) == {"passed": 1.0, "failed": 2.0, "all": 1.5}
    qc = pd.DataFrame({"passed": [True, False]}, index=["p", "f"])
    assert da.pass_rates(qc, total_annotators=4) == {"total": 4, "passed": 1, "failed": 3, "pass_rate": 0.25}
