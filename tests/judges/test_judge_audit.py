"""The judge audit on a data set built in the test: known agreement, position bias and the
judge-corrected intervals' gain when a good judge labels more battles than people did."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.judges.audit import judge_audit, people_only
from dialeval.records import JUDGE_PLATFORM, Annotator, Dataset, Judgment

STRENGTH = {"m1": 1.0, "m2": 0.3, "m3": -0.4, "m4": -0.9}


def battles(n: int, people_share: float, judge_accuracy: float, seed: int = 0) -> Dataset:
    """n battles; people vote on the first `people_share` of them; the judge on all, agreeing with the
    true outcome with probability `judge_accuracy`."""
    rng = np.random.default_rng(seed)
    names = list(STRENGTH)
    out = Dataset(method="arena", annotators=[Annotator("crowd"), Annotator("gpt", platform=JUDGE_PLATFORM)])
    for k in range(n):
        a, b = rng.choice(names, size=2, replace=False)
        p_a = 1 / (1 + np.exp(STRENGTH[b] - STRENGTH[a]))
        truth = "model_a" if rng.random() < p_a else "model_b"
        wrong = "model_b" if truth == "model_a" else "model_a"
        judged = truth if rng.random() < judge_accuracy else wrong
        for who, winner, keep in (("crowd", truth, k < n * people_share), ("gpt", judged, True)):
            if keep:
                value = {"model_a": str(a), "model_b": str(b), "winner": winner}
                out.judgments.append(Judgment(who, None, "battle", value, meta={"battle": str(k)}))
    return out


def test_agreement_and_one_order_position_share_are_what_the_data_says():
    data = battles(600, 1.0, 0.8, seed=1)
    audit = judge_audit(data, n_boot=200)
    got = audit["questions"]["battle"]["judges"]["gpt"]["all"]
    crowd = {j.meta["battle"]: j.value["winner"] for j in data.judgments if j.annotator_id == "crowd"}
    gpt = {j.meta["battle"]: j.value["winner"] for j in data.judgments if j.annotator_id == "gpt"}
    assert got["agreement"] == pytest.approx(np.mean([crowd[b] == gpt[b] for b in crowd]), abs=1e-4)
    assert got["agreement_ci"][0] < got["agreement"] < got["agreement_ci"][1]
    position = audit["bias"]["gpt"]["position_bias"]
    assert position["basis"] == "one side order (no swapped pairs)"
    assert position["first_share"]["share"] == pytest.approx(np.mean([v == "model_a" for v in gpt.values()]), abs=1e-4)
    assert len(people_only(data).judgments) == 600


def test_a_good_judge_on_more_battles_narrows_the_intervals_and_a_useless_one_costs_little():
    good = judge_audit(battles(2000, 0.2, 0.95, seed=2), n_boot=0)
    corrected = good["questions"]["battle"]["judges"]["gpt"]["judge_corrected"]
    assert (corrected["labelled"], corrected["judge_only"]) == (400, 1600)
    assert corrected["lambda_bt"] > 0.5 and corrected["mean_width_ratio_bt"] < 0.85
    best = corrected["systems"][0]
    assert best["name"] == "m1" and best["bt_corrected_ci"][0] < best["bt_corrected"] < best["bt_corrected_ci"][1]
    useless = judge_audit(battles(2000, 0.2, 0.5, seed=3), n_boot=0)
    ratio = useless["questions"]["battle"]["judges"]["gpt"]["judge_corrected"]["mean_width_ratio_bt"]
    assert ratio < 1.05
