"""Direct Assessment analysis end to end: the reproduction of Ji et al. (2022) (Free run 1) and compare_runs."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from dialeval.analysis.compare import compare_runs
from dialeval.formats.dialogue_eval import read_dialogue_eval_csv
from dialeval.methods.direct_assessment.analysis import (
    analyze_direct_assessment,
    direct_assessment_frames,
    judgments_frame,
)
from dialeval.records import DA_CRITERIA, Annotator, Conversation, Dataset, Judgment

DATA = "dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv"

# Ji et al. 2022, Table 3: overall average standardized score and n ratings (Free run 1)
TABLE3 = {
    "biencoder": (0.534, 798),
    "polyencoder": (0.419, 798),
    "biencoder+persona": (0.318, 707),
    "kvmemnn": (0.262, 791),
    "kvmemnn+persona": (0.189, 714),
    "polyencoder+persona": (0.173, 707),
    "seq2seq": (-0.087, 707),
    "seq2seq+persona": (-0.201, 798),
    "lan_model+persona": (-0.217, 763),
    "lan_model": (-0.243, 742),
}
# Table 3 per-criterion columns for the best system (A = biencoder)
TABLE3_A = {
    "interesting": 0.564,
    "fun": 0.602,
    "consistent": 0.711,
    "fluent": 0.863,
    "topic": 0.964,
    "robotic": -0.038,
    "repetitive": 0.069,
}
# Table 10 raw averages, Free run 1, A = biencoder
TABLE10_A = {
    "overall": 52.49,
    "interesting": 53.03,
    "fun": 54.07,
    "consistent": 58.12,
    "fluent": 61.78,
    "topic": 65.24,
    "robotic": 35.73,
    "repetitive": 39.47,
}
# Table 8, Pearson (upper half), Overall row
TABLE8_OVERALL = {
    "interesting": 0.959,
    "fun": 0.976,
    "consistent": 0.861,
    "fluent": 0.966,
    "topic": 0.796,
    "robotic": 0.916,
    "repetitive": 0.674,
}


@lru_cache(maxsize=1)
def _published(path: str):
    ds = read_dialogue_eval_csv(path)
    return ds, analyze_direct_assessment(ds)


@pytest.fixture
def published(shared_data):
    return _published(str(shared_data(DATA)))


def test_reproduces_table_1(published):
    _, report = published
    assert report["method"] == "direct-assessment"
    assert report["annotators"]["total"] == 249 and report["annotators"]["passed"] == 173
    assert report["conversations"]["total"] == 1525 and report["conversations"]["passed"] == 1075
    assert report["minutes_per_conversation"]["passed"] == pytest.approx(6.53, abs=0.005)
    assert report["minutes_per_conversation"]["all"] == pytest.approx(6.68, abs=0.005)
    assert report["minutes_per_conversation"]["failed"] == pytest.approx(7.04, abs=0.005)
    assert len(report["filtered_annotators"]) == 76
    reasons = {f["reason"] for f in report["filtered_annotators"]}
    assert "no ratings (empty submission)" in reasons


def test_reproduces_table_3(published):
    _, report = published
    systems = report["systems"]
    assert [s["name"] for s in systems] == list(TABLE3)  # the paper's order, best first
    for s in systems:
        score, n = TABLE3[s["name"]]
        assert s["score"] == pytest.approx(score, abs=0.001) and s["n"] == n, s["name"]
        assert s["z"]["overall"] == s["score"]
    a = systems[0]
    for c, v in TABLE3_A.items():
        assert a["z"][c] == pytest.approx(v, abs=0.001), c
    for c, v in TABLE10_A.items():
        assert a["raw"][c] == pytest.approx(v, abs=0.005), c
    assert report["qc_system"]["name"] == "qc" and report["qc_system"]["score"] < -0.5


def test_table_8_pairwise_and_agreement(published):
    _, report = published
    row = report["criteria_correlation"]["pearson"]["overall"]
    for c, v in TABLE8_OVERALL.items():
        assert row[c] == pytest.approx(v, abs=0.001), c
    assert report["criteria_correlation"]["spearman"]["interesting"]["overall"] == pytest.approx(0.927, abs=0.001)
    pairs = {(p["a"], p["b"]): p["p"] for p in report["pairwise"]}
    assert len(pairs) == 90
    assert pairs[("biencoder", "lan_model")] < 0.001 and pairs[("lan_model", "biencoder")] > 0.999
    agreement = report["rater_agreement"]
    assert agreement["passed"]["pairs"] > 100 and agreement["failed"]["pairs"] > 10
    assert agreement["passed"]["median"] > agreement["failed"]["median"] + 0.2
    assert agreement["passed"]["peak"] == pytest.approx(0.6)  # paper Fig. 2: peak between 0.6 and 0.7
    assert sum(b["count"] for b in agreement["passed"]["histogram"]) == agreement["passed"]["pairs"]
    json.dumps(report, allow_nan=False)  # JSON-ready, no NaN


def test_self_comparison(published):
    _, report = published
    out = compare_runs(report, report)
    assert out["pearson"] == pytest.approx(1.0) and out["n"] == 10
    assert out["criteria"]["fun"]["spearman"] == pytest.approx(1.0)


def test_compare_runs_shared_systems_only():
    a = {
        "systems": [
            {"name": "x", "score": 1.0},
            {"name": "y", "score": 2.0},
            {"name": "z", "score": 3.0},
            {"name": "only_a", "score": 0.0},
        ]
    }
    b = {"systems": [{"name": "z", "score": 0.3}, {"name": "y", "score": 0.25}, {"name": "x", "score": 0.1}]}
    out = compare_runs(a, b)
    assert out["n"] == 3 and out["only_a"] == ["only_a"] and out["only_b"] == []
    assert out["spearman"] == pytest.approx(1.0) and 0.9 < out["pearson"] < 1.0
    assert out["systems"][0] == {"name": "x", "a": 1.0, "b": 0.1}
    assert "criteria" not in out
    with pytest.raises(ValueError, match="systems"):
        compare_runs({}, b)


def _tiny_dataset() -> Dataset:
    """Two annotators; 'good' rates the degraded bot (flagged in meta, not named qc) low, 'bad' high."""
    convs, judgments = [], []
    plan = {
        "good": {"alpha": 80, "beta": 60, "degraded": 10},
        "bad": {"alpha": 20, "beta": 40, "degraded": 90},
    }
    for ann, levels in plan.items():
        for rep in range(3):
            unit = f"{ann}-{rep}"
            for system, level in levels.items():
                cid = f"{unit}-{system}"
                convs.append(Conversation(id=cid, bots=[system], turns=[], meta={"qc": system == "degraded"}))
                value = {c: float(level + rep + k) for k, c in enumerate(DA_CRITERIA)}
                value["robotic"] = 100.0 - value["robotic"]  # raw slider: negative criteria not reversed
                value["repetitive"] = 100.0 - value["repetitive"]
                judgments.append(
                    Judgment(
                        annotator_id=ann,
                        unit_id=unit,
                        question="ratings",
                        value=value,
                        conversation_id=cid,
                        elapsed_s=120.0,
                    )
                )
    return Dataset(
        method="direct-assessment",
        conversations=convs,
        judgments=judgments,
        annotators=[Annotator(id="good"), Annotator(id="bad"), Annotator(id="silent")],
    )


def test_tiny_dataset_flags_qc_from_meta_and_filters():
    ds = _tiny_dataset()
    frame = judgments_frame(ds)
    assert frame["is_qc"].sum() == 6 and frame.loc[0, "robotic"] == 20.0  # raw, unreversed
    report = analyze_direct_assessment(ds)
    assert report["annotators"] == {"total": 3, "passed": 1, "failed": 2, "pass_rate": pytest.approx(1 / 3)}
    assert [s["name"] for s in report["systems"]] == ["alpha", "beta"]
    assert report["systems"][0]["n"] == 21 and report["qc_system"]["name"] == "degraded"
    assert report["conversations"] == {"total": 12, "rated": 12, "passed": 6, "pass_rate": 0.5}
    filtered = {f["id"]: f for f in report["filtered_annotators"]}
    assert set(filtered) == {"bad", "silent"} and filtered["bad"]["p"] > 0.05
    assert report["minutes_per_conversation"] == {"passed": 2.0, "failed": 2.0, "all": 2.0}
    frames = direct_assessment_frames(ds)
    assert frames.ratings.loc[frames.ratings.annotator == "good", "passed"].all()
    assert list(frames.systems.index) == ["alpha", "beta"]
