"""Voter screening and annotator models through the command line, as the README prints it: a
rigging voter (always votes for the weakest bot) planted among honest simulated ones is flagged by
the sequential test in the report and on the admin page, and with ``annotators.exclude_flagged``
the leaderboard without it restores the true order, which the rigged votes had changed."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from fastapi.testclient import TestClient

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def run(*args, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([*DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=600)
    if ok:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def edit(folder, change) -> None:
    path = folder / "study.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_rigging_voter_is_flagged_and_excluding_it_restores_the_order(tmp_path):
    folder = tmp_path / "arena"
    run("init", "arena", folder)

    def honest(data):
        data["protocol"]["turns"] = 2
        data["annotators"] = {"exclude_flagged": True}

    # Bots 1.5 apart on the simulation's logit scale. At the default 0.6 the honest votes for the
    # weakest bot against the middle one have a share near 1/3 (the screen's null for three outcome
    # kinds), so the rigged votes there carry little evidence and the honest votes the rigger casts
    # in the pair without its favourite cost about as much: the rigger's e-value then spread from 3
    # to 1e5 around the threshold of 220 from one run to the next (the crowd's threads interleave
    # differently), and CI saw it unflagged. 1.5 apart it came out 1e10-1e11.
    strengths = ("--strengths", "retrieval=1.5,eliza=0,repeat=-1.5")
    edit(folder, honest)
    run("simulate", folder, "--annotators", "10", "--careless", "0", "--seed", "1", "--no-report", *strengths)

    # the rigger stays for long battles (more votes per battle) and votes for the weakest bot
    edit(folder, lambda data: data["protocol"].update(turns=12))
    run(
        "simulate", folder, "--annotators", "1", "--careless", "0", "--adversaries", "1", "--seed", "2",
        "--no-report", *strengths,
    )  # fmt: skip
    run("report", folder)
    roles = json.loads((folder / "simulation" / "annotators.json").read_text())
    riggers = [k for k, r in roles.items() if r["role"] == "adversary"]
    assert len(riggers) == 1 and len(roles) == 11
    truth = json.loads((folder / "simulation" / "truth.json").read_text())["order"]
    assert roles[riggers[0]]["favourite"] == truth[-1] == "repeat"

    report = json.loads((folder / "report" / "report.json").read_text())
    section = report["annotator_model"]["pairwise"]
    screen = section["screening"]
    # the rigger is flagged and stands out most; an honest voter whose few votes all went against the
    # rigged pair shares may pass the threshold now and then (the test is per study, not per voter)
    assert riggers[0] in screen["flagged"] and screen["excluded_from_leaderboard"] == screen["flagged"]
    assert max(screen["voters"], key=lambda v: v["e_value"])["annotator"] == riggers[0]
    assert screen["alpha"] == 0.05 and screen["threshold"] == 11 / 0.05  # alpha for the study: 11 voters
    # every vote counted: the rigged order; the study's leaderboard without the flagged voter: the truth
    # the rigger's votes lift its favourite: it stands closer to the best-rated bot with every vote
    # than without the flagged voter (whether that also reorders the board depends on how the honest
    # votes fell; the favourite is the weakest bot, so it is often last on both boards and its gap to
    # the last one says nothing)
    favourite = roles[riggers[0]]["favourite"]
    rating = {row["name"]: row["rating"] for row in section["leaderboard"]}
    clean = {row["name"]: row["rating"] for row in section["without_flagged"]["leaderboard"]}
    assert max(rating.values()) - rating[favourite] < max(clean.values()) - clean[favourite]
    assert section["without_flagged"]["order"] == truth
    assert [s["name"] for s in report["systems"]] == truth
    html = (folder / "report" / "index.html").read_text()
    assert "annotator_model.pairwise.screening" in html and riggers[0] in html

    # the admin page marks the same voter (shown, never deleted)
    from dialeval.web.app import create_app

    app = create_app([folder])
    with TestClient(app) as client:
        slug, served = next(iter(app.state.studies.items()))
        page = client.get(f"/s/{slug}/admin", params={"token": served.admin_token}, follow_redirects=True)
    assert page.status_code == 200
    rows = [r for r in page.text.split("<tr") if "vote screen: flagged" in r]
    assert len(rows) == len(screen["flagged"]) and any(riggers[0] in row for row in rows)
    assert "voters flagged by the sequential test" in page.text


def test_simulate_refuses_shares_that_do_not_add_up(tmp_path):
    folder = tmp_path / "arena"
    run("init", "arena", folder)
    done = run("simulate", folder, "--careless", "0.5", "--spammers", "0.6", ok=False)
    assert done.returncode != 0
    assert "add up to more than 1" in done.stderr + done.stdout and "Traceback" not in done.stderr
    done = run("simulate", folder, "--adversaries", "0.2", "--adversary-target", "nobody", ok=False)
    assert "'nobody' is not a bot of this study" in done.stderr + done.stdout and "Traceback" not in done.stderr
    # simulated strengths: every bot once, each a number. The flag in a subprocess once; its other
    # refusals through the same command parser in this process (typer's runner), without paying a
    # Python start-up each for the same path
    done = run("simulate", folder, "--strengths", "retrieval=1,eliza=0", ok=False)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "missing: repeat" in done.stderr + done.stdout, done.stderr + done.stdout
    from typer.testing import CliRunner

    from dialeval.cli import app

    for strengths, said in (
        ("retrieval=1,eliza=0,repeat=-1,gpt=2", "not bots of this study: gpt"),
        ("retrieval=high,eliza=0,repeat=-1", "'retrieval=high' is not BOT=NUMBER"),
        ("retrieval=1,eliza=0,repeat=nan", "'repeat=nan' is not BOT=NUMBER"),
        ("retrieval=1,retrieval=2,eliza=0,repeat=-1", "names 'retrieval' twice"),
    ):
        # catch_exceptions=False: an exception (a traceback for the user) fails the test
        result = CliRunner().invoke(app, ["simulate", str(folder), "--strengths", strengths], catch_exceptions=False)
        assert result.exit_code != 0 and said in " ".join(result.output.split()), result.output
    assert not (folder / "simulation").exists()  # refused before anybody was simulated


def test_imported_battles_with_a_judge_report_label_models(tmp_path):
    """With --include-judges the LLM judge is one more annotator of the same battles: Dawid-Skene and
    MACE estimate both reliabilities (the judge marked so), each inside its bootstrap interval."""
    models = ["m1", "m2", "m3"]
    human, judge = [], []
    for k in range(120):
        a, b = models[k % 3], models[(k + 1) % 3]
        crowd = "model_a" if (k % 5) else "model_b"
        human.append({"question_id": f"q{k}", "model_a": a, "model_b": b, "winner": crowd})
        judge.append({"question_id": f"q{k}", "model_a": a, "model_b": b, "winner": "model_a" if k % 7 else "tie"})
    (tmp_path / "human.jsonl").write_text("".join(json.dumps(r) + "\n" for r in human))
    (tmp_path / "judge.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judge))
    run("import", "arena", tmp_path / "human.jsonl", tmp_path / "study", "--judges", tmp_path / "judge.jsonl")
    run("report", tmp_path / "study", "--include-judges")
    report = json.loads((tmp_path / "study" / "report" / "report.json").read_text())
    labels = report["annotator_model"]["labels"]
    assert labels["multiply_labelled_items"] == 120 and labels["classes"] == ["model_a", "model_b", "tie"]
    assert {a["judge"] for a in labels["annotators"]} == {True, False}
    for a in labels["annotators"]:
        ds = a["dawid_skene"]
        assert ds["ci_low"] <= ds["reliability"] <= ds["ci_high"]
    # the crowd's Crowd-BT board leaves the judge out
    assert [v["votes"] for v in report["annotator_model"]["pairwise"]["voters"]] == [120]


def test_daily_cap_holds_volunteer_link_annotators_only(tmp_path):
    """`annotators.daily_cap: 1`: annotators who came by the volunteer link submit one battle today;
    those who came by Prolific or a plain link do their whole session (3 battles)."""
    from dialeval.store import work
    from dialeval.study import open_study

    folder = tmp_path / "arena"
    run("init", "arena", folder)

    def cap(data):
        data["protocol"]["turns"] = 1
        data["annotators"] = {"daily_cap": 1}

    edit(folder, cap)
    run("simulate", folder, "--annotators", "8", "--careless", "0", "--seed", "3", "--no-report")
    study = open_study(folder)
    try:
        rows = work.list_annotators(study.store, study.id)
    finally:
        study.close()
    # simulated annotators have the platform `simulated` and keep the door they came in by
    volunteers = [r["submitted"] for r in rows if r["entered_as"] == "volunteer"]
    others = [r["submitted"] for r in rows if r["entered_as"] != "volunteer"]
    assert volunteers and others
    assert max(volunteers) == 1 and max(others) == 3
