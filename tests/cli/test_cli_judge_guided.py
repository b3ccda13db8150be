"""Judge-guided collection (issue 13, part 3) through the commands a researcher runs:

    dialeval init acute STUDY            # then, in study.yaml: judges: [...] and adaptive: {enabled, judge}
    dialeval generate STUDY
    dialeval judge STUDY --bot longer    # a real HTTP judge on loopback labels every unit first
    dialeval simulate STUDY ...          # a simulated crowd works through the pages over HTTP
    dialeval report STUDY

and checks what the scheduler did with the judge's labels (tickets drawn by the judge's doubt, each
answer tied to its ticket), and that the report's stopping table is the judge-guided test replayed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.scheduling.pools import PairPool, ticket_unit
from dialeval.store import work
from dialeval.study import open_study
from tests.bots.fake_openai_server import start_fake_openai
from tests.judges.rules import prefer_longer

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def guided_study(folder: Path, judge_url: str | None, judge: str = "longer", extra: str = "") -> Path:
    result = invoke("init", "acute", folder)
    assert result.exit_code == 0, result.output
    text = (folder / "study.yaml").read_text()
    text = text.replace("conversations: 10", "conversations: 6").replace(
        "annotations_per_pair: 50", "annotations_per_pair: 40"
    )
    text += (
        "judges:\n"
        "  - name: longer\n"
        "    type: openai\n"
        f"    options: {{base_url: '{judge_url or 'http://127.0.0.1:9/v1'}', model: fake}}\n"
        "adaptive:\n"
        "  enabled: true\n"
        f"  judge: {judge}\n"
        f"{extra}"
    )
    (folder / "study.yaml").write_text(text)
    return folder


def stored(folder: Path):
    opened = open_study(folder)
    try:
        dataset = opened.store.load_dataset(opened.id)
        states = [state for _status, state in _states(opened)]
        return dataset, states
    finally:
        opened.close()


def _states(opened):
    with opened.store.read() as s:
        return work.assignment_states(s, opened.id, "acute")


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guided") / "study"
    with start_fake_openai(reply=prefer_longer) as url:
        guided_study(folder, url)
        assert invoke("generate", folder).exit_code == 0
        judged = invoke("judge", folder, "--bot", "longer", "--concurrency", "3")
        assert judged.exit_code == 0, judged.output
    # --no-report: the report is the `dialeval report` below (simulate would build the same one first)
    result = invoke("simulate", folder, "--annotators", "30", "--careless", "0", "--seed", "3", "--no-report")
    assert result.exit_code == 0, result.output
    report = invoke("report", folder)
    assert report.exit_code == 0, report.output
    return folder, json.loads((folder / "report" / "report.json").read_text())


def test_the_scheduler_hands_out_judge_guided_tickets_and_answers_carry_them(collected):
    folder, _report = collected
    dataset, states = stored(folder)
    snapshot = dataset.meta["judge_guided"]
    assert snapshot["judge"] == "longer" and snapshot["mix"] == 0.5
    pools = {(p["question"], p["a"], p["b"]): PairPool.from_dict(p) for p in snapshot["pools"]}
    assert len(pools) == 3  # three bots, one question
    # the judge answered every unit in both orders before collection, so every pool is labelled
    assert all(p.judged == len(p.units) > 0 for p in pools.values())
    tickets = [s["guided"] for s in states if "guided" in s]
    assert len(tickets) >= 30
    seed = dataset.meta["config"]["seed"]
    for t in tickets:  # each ticket asks for the unit its seeded draw names
        assert t["unit"] == ticket_unit(pools[tuple(t["group"])], seed, t["ticket"])
    answers = [j for j in dataset.judgments if j.question == "preference" and not j.annotator_id.startswith("judge-")]
    assert answers and all("guided" in j.meta for j in answers)
    # no ticket is answered twice
    assert len({(tuple(j.meta["guided"]["group"]), j.meta["guided"]["ticket"]) for j in answers}) == len(answers)


def test_units_the_judge_doubts_are_drawn_more_often(collected):
    folder, _report = collected
    dataset, states = stored(folder)
    pools = [PairPool.from_dict(p) for p in dataset.meta["judge_guided"]["pools"]]
    doubted = drawn_doubted = drawn = 0
    counts = Counter((tuple(s["guided"]["group"]), s["guided"]["unit"]) for s in states if "guided" in s)
    for p in pools:
        unsure = {k for k, f in enumerate(p.pool.judge_scores) if f == 0.5}
        doubted += len(unsure)
        for (group, unit), n in counts.items():
            if group == p.key:
                drawn += n
                drawn_doubted += n * (unit in unsure)
    # the length rule is consistent in both orders except on ties of length, so few units are doubted;
    # whatever their share of the pools, q gives each doubted unit more weight than a sure one
    for p in pools:
        q, f = p.pool.probabilities, p.pool.judge_scores
        if (f == 0.5).any() and (f != 0.5).any():
            assert q[f == 0.5].min() > q[f != 0.5].max()
    assert drawn > 0


def test_the_report_replays_the_judge_guided_test(collected):
    _folder, report = collected
    stop = report["stopping"]
    assert stop["enabled"] and stop["used_for_stopping"]
    guided = stop["judge_guided"]
    assert stop["selection"].startswith("uniform") and "judge longer's doubt" in stop["selection"]
    assert guided["judge"] == "longer" and len(guided["pairs"]) == 3
    rows = stop["pairs"]
    assert all(r["judge_guided"] for r in rows)
    for r in rows:
        assert r["tested_n"] + r["untested"] == r["n"] + r["ties"] - r["unticketed"]
        if r["tested_n"] > 1:
            # the anytime-valid sequence is an intersection over time, so it need not hold today's mean
            assert 0 <= r["ci_low"] <= r["ci_high"] <= 1 and 0 <= r["win_rate_a"] <= 1
            lo, hi = r["fixed_n_ci"]
            assert lo <= r["win_rate_a"] <= hi or r["win_rate_a"] in (0, 1)  # the estimate is clipped
    # the matchups show the pool-weighted win rate, with the raw share kept beside it
    for m in report["matchups"]:
        assert m.get("judge_guided") and "win_rate_a_raw" in m
    assert "lean toward the units the judge doubted" in report["judge_guided_note"]


def test_a_study_naming_an_unknown_judge_is_refused_with_a_clear_message(tmp_path):
    folder = guided_study(tmp_path / "bad", None, judge="nobody")
    result = invoke("generate", folder)
    assert result.exit_code == 2
    assert "adaptive.judge names 'nobody', which is not a judge of this study (judges: longer)" in result.output


def test_without_judge_labels_the_draw_is_uniform_and_collection_still_runs(tmp_path):
    folder = guided_study(tmp_path / "unjudged", None)
    assert invoke("generate", folder).exit_code == 0
    result = invoke("simulate", folder, "--annotators", "6", "--careless", "0", "--seed", "1")
    assert result.exit_code == 0, result.output
    dataset, states = stored(folder)
    pools = [PairPool.from_dict(p) for p in dataset.meta["judge_guided"]["pools"]]
    assert all(p.judged == 0 for p in pools)
    for p in pools:
        assert p.pool.probabilities == pytest.approx([1 / len(p.units)] * len(p.units))
    assert any("guided" in s for s in states)
    # the admin page says the judge never labelled anything, so the draws were uniform
    page = admin_page(folder)
    assert "judge-guided by longer (0 of 108 units labelled when collection began: no labels" in page


def admin_page(folder: Path) -> str:
    from html import unescape

    from fastapi.testclient import TestClient

    from dialeval.web.app import create_app

    app = create_app([folder])
    slug, served = next(iter(app.state.studies.items()))
    with TestClient(app) as client:
        page = client.get(f"/s/{slug}/admin", params={"token": served.admin_token})
        assert page.status_code == 200
        return unescape(page.text)
