"""The simulated crowd works through the real app (uvicorn in-process) for every method.

Each test checks: the crowd finishes without errors, every judgment the simulator had accepted is
stored exactly once (despite refreshes, double submits and abandoned units), the report recovers
the simulated order of the bots, and the quality control catches careless annotators at the rate
documented in docs/simulated-crowd.md.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from dialeval.report import build_report
from dialeval.simulate import SimTruth, recovered_order, simulate_study, write_study_report
from dialeval.study import open_study, write_study_file
from tests.conftest import strict_json_loads
from tests.web.studies import make_acute_study, make_stb_study

# clearly separated bots: adjacent pairs are chosen 80-90% of the time by careful annotators
STRENGTHS = {"retrieval": 1.2, "eliza": 0.0, "repeat": -1.2}
LIVE_STRENGTHS = {"good": 1.2, "mid": 0.0, "weak": -1.2}
# fast bundled bots under the names of the truth (the simulated choice depends on the truth only)
LIVE_BOTS = [{"name": "good", "type": "eliza"}, {"name": "mid", "type": "repeat"}, {"name": "weak", "type": "eliza"}]


def report_of(folder: Path) -> dict:
    study = open_study(folder)
    try:
        return build_report(study.store.load_dataset(study.id), study.config.model_dump(mode="json"))
    finally:
        study.close()


# Known app issue (protocols/pairwise_turn.py, reported to the lead): a repeated onboarding submit
# (same request id) is answered 400 "Reload the page..." instead of OK, because the first submit
# already removed the practice orders from the state. No judgment is lost or doubled.
KNOWN_APP_ISSUES: tuple[str, ...] = ()  # app bugs the simulator may meet; none known


def check_bookkeeping(result, folder: Path) -> None:
    assert [e for e in result.errors if not any(k in e for k in KNOWN_APP_ISSUES)] == []
    assert result.judgments_mismatch == []
    assert result.judgments_stored == result.judgments_submitted > 0
    assert result.finished + result.abandoned - result.returned >= result.annotators - 1
    assert SimTruth.load(folder).strengths == result.truth["strengths"]


def test_acute_crowd_recovers_order_and_catches_careless(tmp_path):
    folder = make_acute_study(tmp_path / "acute", per_bot=6, comparisons=3, per_pair=40)
    result = simulate_study(
        folder,
        annotators=36,
        seed=0,
        careless_share=0.25,
        strengths=STRENGTHS,
        refresh_p=0.3,
        double_submit_p=0.3,
        abandon_p=0.1,
    )
    check_bookkeeping(result, folder)
    assert result.refreshed > 0 and result.double_submits > 0 and result.abandoned > 0
    # onboarding (a careless annotator picks the weak bot half of the time) + "never gives a reason"
    assert result.catch_rate >= 0.75
    assert result.careful_flagged <= 3  # a careful annotator fails onboarding ~3% of the time
    recovery = recovered_order(report_of(folder), result.truth)
    assert recovery["exact"], recovery
    assert recovery["truth_order"] == ["retrieval", "eliza", "repeat"]


def test_spot_the_bot_crowd_recovers_order(tmp_path):
    folder = make_stb_study(tmp_path / "stb", per_pair=4, humans=4, packages_per_annotator=2)
    result = simulate_study(
        folder, annotators=24, seed=1, careless_share=0.15, strengths=STRENGTHS, refresh_p=0.3, double_submit_p=0.3
    )
    check_bookkeeping(result, folder)
    assert result.completed_units > 0
    recovery = recovered_order(report_of(folder), result.truth)
    assert recovery["spearman"] >= 0.8, recovery
    # report files are written (report.json, index.html)
    out = write_study_report(folder)
    assert strict_json_loads((out / "report.json").read_text())["method"] == "spot-the-bot"
    assert (out / "index.html").exists()


def live_study(folder: Path, method: str) -> Path:
    data = {"name": f"sim-{method}", "method": method, "seed": 1}
    if method == "pairwise-turn":
        data.update(
            bots=LIVE_BOTS[:2],
            onboarding={"enabled": True, "on_fail": "block", "tries": 2},
            protocol={"bot_turns": 3, "conversations_per_pair": 12},
        )
    elif method == "single-model":
        data.update(
            bots=LIVE_BOTS, protocol={"bot_turns": 3, "conversations_per_bot": 8}, annotation={"units_per_annotator": 2}
        )
    else:
        data.update(
            bots=LIVE_BOTS + [{"name": "qc", "type": "degraded", "options": {"seed": 7}}],
            protocol={"min_inputs": 3, "qc_bot": "qc", "hits_per_annotator": 1},
        )
    write_study_file(folder, data)
    return folder


@pytest.mark.parametrize("method", ["pairwise-turn", "single-model", "direct-assessment"])
def test_live_crowd(tmp_path, method):
    folder = live_study(tmp_path / method, method)
    annotators = {"pairwise-turn": 12, "single-model": 12, "direct-assessment": 10}[method]
    strengths = LIVE_STRENGTHS if method != "pairwise-turn" else {"good": 1.2, "mid": 0.0}
    result = simulate_study(
        folder,
        annotators=annotators,
        seed=2,
        careless_share=0.3,
        strengths=strengths,
        refresh_p=0.2,
        double_submit_p=0.2,
    )
    check_bookkeeping(result, folder)
    assert result.messages > 0 and result.completed_units > 0
    # careless chatters: onboarding (PW-Turn), worker message filters, the degraded-bot QC test (DA)
    assert result.careless == round(annotators * 0.3)
    assert result.catch_rate >= 0.75, result.reasons
    assert result.careful_flagged == 0
    recovery = recovered_order(report_of(folder), result.truth)
    if method == "pairwise-turn":
        assert recovery["exact"], recovery
    else:
        assert recovery["spearman"] >= 0.5, recovery  # few conversations per bot: noisy but ordered


def test_recovered_order_is_undefined_when_the_report_scores_are_all_equal():
    truth = {"strengths": {"a": 1.0, "b": 0.0, "c": -1.0}}
    tied = {"systems": [{"name": n, "score": 0.5} for n in "abc"]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no scipy ConstantInputWarning
        result = recovered_order(tied, truth)
    assert result["spearman"] is None and result["truth_order"] == ["a", "b", "c"]
    spread = {"systems": [{"name": "a", "score": 0.9}, {"name": "b", "score": 0.2}, {"name": "c", "score": 0.5}]}
    assert recovered_order(spread, truth)["spearman"] == pytest.approx(0.5)
