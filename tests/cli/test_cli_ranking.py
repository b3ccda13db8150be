"""Rankings that say how fragile they are and what a tie is (issue: tie models, tiers, provisional
marks, robustness audit), through the CLI in a subprocess as a user runs it: `dialeval import arena`,
an edit of the study file's `ranking:` block, `dialeval report`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def run(*args: object) -> subprocess.CompletedProcess:
    done = subprocess.run([*DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done


def battles_file(path: Path, strengths: dict[str, float], n: int, tie_rate: float, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    names = list(strengths)
    with path.open("w") as out:
        for k in range(n):
            a, b = rng.choice(len(names), 2, replace=False)
            d = strengths[names[a]] - strengths[names[b]]
            if rng.random() < tie_rate:
                winner = "tie"
            else:
                winner = "model_a" if rng.random() < 1 / (1 + np.exp(-d)) else "model_b"
            out.write(json.dumps({"num": k, "model_a": names[a], "model_b": names[b], "winner": winner}) + "\n")
    return path


def set_ranking(study: Path, **ranking: object) -> None:
    path = study / "study.yaml"
    config = yaml.safe_load(path.read_text())
    config["ranking"] = ranking
    path.write_text(yaml.safe_dump(config))


def test_report_gives_tiers_ties_and_robustness_and_uses_the_chosen_tie_model(tmp_path):
    strengths = {"alpha": 1.2, "beta": 1.1, "gamma": 0.0, "delta": -0.1, "rare": -1.0}
    data = battles_file(tmp_path / "battles.jsonl", strengths, 4000, tie_rate=0.3, seed=1)
    study = tmp_path / "study"
    run("import", "arena", data, study)
    run("report", study)
    report = json.loads((study / "report" / "report.json").read_text())
    systems = {s["name"]: s for s in report["systems"]}
    # alpha and beta are close: one tier; gamma and delta are far below them
    assert systems["alpha"]["tier"] == systems["beta"]["tier"] == 1
    assert systems["gamma"]["tier"] > 1 and systems["rare"]["tier"] >= systems["delta"]["tier"]
    assert report["tie_model"]["used"] == "half"
    assert abs(report["tie_model"]["observed_tie_rate"] - 0.3) < 0.03
    assert set(report["tie_model"]["models"]) == {"davidson", "rao-kupper"}
    audit = report["robustness"]
    assert audit["votes"] == 4000 and len(audit["adjacent"]) == 4
    assert audit["top"]["first"] == report["systems"][0]["name"] and audit["top"]["dropped"] >= 1
    assert any(s.startswith(("Fragile", "Robustness")) for s in report["answer"]["summary"])
    html = (study / "report" / "index.html").read_text()
    assert "robustness" in html and "tie_model" in html

    set_ranking(study, ties="davidson", provisional_votes=2000)
    run("report", study)
    again = json.loads((study / "report" / "report.json").read_text())
    assert again["tie_model"]["used"] == "davidson" and "Davidson" in again["ties"]
    assert {s["name"] for s in again["systems"]} == set(strengths)
    # every system has < 2000 votes (4000 battles x 2 sides / 5 systems): all provisional now
    assert all(s["provisional"] for s in again["systems"])
    assert again["ranking"]["ties"] == "davidson"


def test_a_top_rank_a_few_votes_decide_is_called_fragile_in_the_answer(tmp_path):
    # first beat second 501 to 499; both beat third alike: a few of first's wins decide the top
    counts = {("first", "second"): 501, ("second", "first"): 499}
    counts |= {("first", "third"): 2000, ("third", "first"): 600, ("second", "third"): 2000, ("third", "second"): 600}
    data = tmp_path / "close.jsonl"
    with data.open("w") as out:
        k = 0
        for (winner, loser), n in counts.items():
            for _ in range(n):
                out.write(json.dumps({"num": k, "model_a": winner, "model_b": loser, "winner": "model_a"}) + "\n")
                k += 1
    study = tmp_path / "close"
    run("import", "arena", data, study)
    run("report", study)
    report = json.loads((study / "report" / "report.json").read_text())
    top = report["robustness"]["top"]
    assert top["first"] == "first" and top["overtaken_by"] == "second" and top["dropped"] <= 3, top
    assert any(s.startswith("Fragile: dropping just") for s in report["answer"]["summary"]), report["answer"]


def test_a_bad_tie_model_in_the_study_file_is_one_line(tmp_path):
    data = battles_file(tmp_path / "b.jsonl", {"x": 0.5, "y": 0.0}, 200, tie_rate=0.1, seed=2)
    study = tmp_path / "s"
    run("import", "arena", data, study)
    set_ranking(study, ties="coin-flip")
    done = subprocess.run([*DIALEVAL, "report", str(study)], capture_output=True, text=True)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "ranking.ties" in done.stdout + done.stderr


def test_style_control_recovers_the_planted_length_effect_and_the_style_free_order(tmp_path):
    """Answers whose winner is decided partly by length: verbose weak models win the raw board; the
    style-controlled board restores the planted order and the length coefficient is recovered."""
    rng = np.random.default_rng(11)
    strength = {"sharp": 0.5, "solid": 0.25, "middle": 0.0, "wordy": -0.25, "rambling": -0.5}
    words = {"sharp": 60, "solid": 90, "middle": 150, "wordy": 420, "rambling": 700}
    planted_length = 1.0  # log-odds per SD of the normalised length difference
    names = list(strength)
    rows, diffs = [], []
    for k in range(4500):
        a, b = rng.choice(len(names), 2, replace=False)
        la, lb = (int(rng.poisson(words[names[x]])) + 1 for x in (a, b))
        diffs.append((la - lb) / (la + lb))
        rows.append((names[a], names[b], la, lb, k % 3))
    sd = float(np.std(diffs))
    mean = float(np.mean(diffs))
    with (tmp_path / "styled.jsonl").open("w") as out:
        for (ma, mb, la, lb, cat), diff in zip(rows, diffs):
            eta = strength[ma] - strength[mb] + planted_length * (diff - mean) / sd
            winner = "model_a" if rng.random() < 1 / (1 + np.exp(-eta)) else "model_b"
            record = {
                "model_a": ma,
                "model_b": mb,
                "winner": winner,
                "category": ["coding", "writing", "math"][cat],
                "conversation_a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "w " * la}],
                "conversation_b": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "w " * lb}],
            }
            out.write(json.dumps(record) + "\n")
    study = tmp_path / "styled"
    run("import", "arena", tmp_path / "styled.jsonl", study)
    run("report", study)
    report = json.loads((study / "report" / "report.json").read_text())
    raw = [s["name"] for s in report["systems"]]
    assert raw[0] in {"wordy", "rambling"}, raw  # length wins the raw board
    style = report["style_control"]
    assert [row["name"] for row in style["leaderboard"]] == names
    length = next(c for c in style["coefficients"] if c["feature"] == "length")
    assert length["ci_low"] < planted_length < length["ci_high"], length
    assert all(not c["varies"] for c in style["coefficients"] if c["feature"] != "length")
    assert {row["name"]: row["position_change"] for row in style["leaderboard"]}["sharp"] > 0
    assert set(report["by_category"]) == {"coding", "writing", "math"}
    assert all(part["n"] == 1500 for part in report["by_category"].values())
    assert "style_control" in (study / "report" / "index.html").read_text()


def test_a_prompt_set_report_has_every_ranking_part(tmp_path):
    """A prompt-set study (bundled prompts and bots, a simulated crowd): tiers and provisional marks,
    the robustness audit, style control on the answers' text, the length-controlled win rate
    against the baseline and the per-category boards."""
    study = tmp_path / "prompts"
    run("init", "prompts", study)
    run("generate", study)
    run("simulate", study, "--annotators", "10", "--seed", "3")
    report = json.loads((study / "report" / "report.json").read_text())
    assert all({"tier", "provisional"} <= set(s) for s in report["systems"])
    assert report["robustness"]["top"]["first"] == report["systems"][0]["name"]
    assert [c["feature"] for c in report["style_control"]["coefficients"]][0] == "length"
    baseline_rows = [w for w in report["win_rates"] if w["against"] == report["baseline"]]
    assert baseline_rows and all(0 <= w["lc_win_rate"] <= 1 for w in baseline_rows)
    assert len(report["by_category"]) >= 2
    assert all(isinstance(part["differs"], list) for part in report["by_category"].values())


@pytest.mark.parametrize(("method", "annotators", "generate"), [("acute", 14, True), ("pairwise-turn", 16, False)])
def test_style_control_on_acute_and_pairwise_turn(tmp_path, method, annotators, generate):
    """ACUTE compares the evaluated speaker's lines of two conversations, PW-Turn two replies: both
    reports fit style control on those texts, side a being the one shown first."""
    study = tmp_path / method
    run("init", method, study)
    if generate:
        run("generate", study)
    run("simulate", study, "--annotators", annotators, "--seed", "4")
    report = json.loads((study / "report" / "report.json").read_text())
    style = report["style_control"]
    assert style["votes"] >= 50 and style["coefficients"][0]["feature"] == "length"
    assert style["coefficients"][0]["varies"]
    assert {row["name"] for row in style["leaderboard"]} == {row["name"] for row in report["leaderboard"]}
