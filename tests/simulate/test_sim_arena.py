"""A simulated crowd fights arena battles through the real app (uvicorn in-process): every vote the
simulator made final is stored exactly once (despite refreshes, double submits, changed votes and
abandoned battles), and the Bradley-Terry leaderboard recovers the simulated order of the bots."""

from __future__ import annotations

from pathlib import Path

from dialeval.report import build_report
from dialeval.simulate import recovered_order, simulate_study
from dialeval.study import open_study, write_study_file
from tests.simulate.test_sim_crowd import LIVE_BOTS, LIVE_STRENGTHS, check_bookkeeping


def arena_study(folder: Path, **protocol) -> Path:
    write_study_file(
        folder,
        {
            "name": "sim-arena",
            "method": "arena",
            "seed": 4,
            "bots": LIVE_BOTS,
            "annotation": {"units_per_annotator": 3, "expire_minutes": 30},
            "protocol": {"turns": 2, "battles_per_pair": 30, **protocol},
        },
    )
    return folder


def test_arena_crowd_recovers_the_order(tmp_path):
    folder = arena_study(tmp_path / "arena")
    result = simulate_study(
        folder,
        annotators=24,
        seed=3,
        careless_share=0.1,
        strengths=LIVE_STRENGTHS,
        refresh_p=0.2,
        double_submit_p=0.2,
        abandon_p=0.05,
    )
    check_bookkeeping(result, folder)
    assert result.messages > 0 and result.completed_units >= 40
    study = open_study(folder)
    try:
        report = build_report(study.store.load_dataset(study.id), study.config.model_dump(mode="json"))
    finally:
        study.close()
    recovery = recovered_order(report, result.truth)
    assert recovery["exact"], recovery
    assert report["battles"] == result.judgments_stored - report.get("non_anonymous", {}).get("votes", 0)
    assert set(report["turn_curve"]) == set(LIVE_STRENGTHS)


def test_arena_adaptive_stops_once_the_order_is_known(tmp_path):
    """Adaptive pair choice and anytime-valid stopping, the scheduler acute and PW-Turn use: with
    clearly separated bots the study stops handing out battles before the uniform target."""
    from dialeval.scheduling.plan import ADAPTIVE_STOPPED
    from dialeval.store import work

    folder = arena_study(tmp_path / "arena", battles_per_pair=60)
    data = (folder / "study.yaml").read_text()
    (folder / "study.yaml").write_text(data + "adaptive:\n  enabled: true\n  alpha: 0.05\n")
    strong = {"good": 2.5, "mid": 0.0, "weak": -2.5}
    result = simulate_study(
        folder, annotators=60, seed=5, careless_share=0.0, strengths=strong, concurrency=4, abandon_p=0.0
    )
    check_bookkeeping(result, folder)
    study = open_study(folder)
    try:
        events = work.list_events(study.store, study.id, ADAPTIVE_STOPPED)
        report = build_report(study.store.load_dataset(study.id), study.config.model_dump(mode="json"))
    finally:
        study.close()
    assert events and events[0]["payload"]["reason"] == "decided"
    assert events[0]["payload"]["questions"]["battle"]["ranking"] == ["good", "mid", "weak"]
    print(f"arena adaptive: stopped after {events[0]['payload']['judgments']} votes, {result.completed_units} battles")
    assert result.completed_units < 3 * 60  # stopped before the uniform design's 60 battles per pair
    assert recovered_order(report, result.truth)["exact"]
