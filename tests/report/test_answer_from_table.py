"""The report's answer is derived from the statistics the report shows (issue 21, item 3): an arena
leaderboard separates the models whose intervals lie apart (rank = 1 + models wholly above), and an
imported study's methods paragraph counts its systems and annotators, plural forms right.
Through the command line: `dialeval import arena`, then `dialeval report`, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def run(*args) -> subprocess.CompletedProcess:
    result = subprocess.run([*DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def imported_report(battles: Path, folder: Path) -> dict:
    run("import", "arena", battles, folder)
    run("report", folder)
    return json.loads((folder / "report" / "report.json").read_text(encoding="utf-8"))


def assert_answer_matches_table(report: dict) -> None:
    """Every pair of the answer is decided exactly when the table's intervals lie apart, and each
    system's rank is 1 + the number of pairs it loses that way."""
    systems = {s["name"]: s for s in report["systems"]}
    pairs = report["answer"]["pairs"]
    n = len(systems)
    assert len(pairs) == n * (n - 1) // 2
    for p in pairs:
        winner, loser = systems[p["winner"]], systems[p["loser"]]
        assert p["decided"] == (winner["ci_low"] > loser["ci_high"]), p
    for name, s in systems.items():
        assert s["rank"] == 1 + sum(1 for p in pairs if p["decided"] and p["loser"] == name), name


def test_shared_arena_votes(shared_data, tmp_path):
    battles = shared_data("arena-judges") / "human.jsonl"
    report = imported_report(battles, tmp_path / "arena")
    assert_answer_matches_table(report)
    summary = report["answer"]["summary"]
    top = report["systems"][0]
    assert top["name"] == "gpt-4" and top["rank_interval"] == [1, 1]
    assert summary[0] == "gpt-4 ranks first, above every other system: its interval lies wholly above each of theirs."
    assert not any("no difference" in s for s in summary)
    claude = next(p for p in report["answer"]["pairs"] if {p["winner"], p["loser"]} == {"gpt-4", "claude-v1"})
    assert claude["decided"] and claude["winner"] == "gpt-4"
    methods = report["study"]["methods"]
    assert "An anonymous crowd (the source names no annotator) gave 26,919 judgments of 20 systems (" in methods
    assert "0 conversations" not in methods and "1 annotators" not in methods


def test_small_imported_arena(tmp_path):
    """Three models with one annotator named by the file: x clearly above z, the rest overlapping."""
    votes = [("x", "z", "model_a")] * 40 + [("x", "y", "model_a"), ("x", "y", "model_b")] * 3
    votes += [("y", "z", "tie"), ("y", "z", "model_a")] * 3
    battles = tmp_path / "battles.jsonl"
    battles.write_text(
        "".join(
            json.dumps({"num": k, "model_a": a, "model_b": b, "winner": w, "judge": "ann-1"}) + "\n"
            for k, (a, b, w) in enumerate(votes)
        ),
        encoding="utf-8",
    )
    report = imported_report(battles, tmp_path / "small")
    assert_answer_matches_table(report)
    decided = [(p["winner"], p["loser"]) for p in report["answer"]["pairs"] if p["decided"]]
    assert ("x", "z") in decided
    assert "x is rated above " in " ".join(report["answer"]["summary"])
    assert not any("no difference between it and the others" in s for s in report["answer"]["summary"])
    assert f"1 annotator gave {len(votes)} judgments of 3 systems (x, y, z)." in report["study"]["methods"]


def test_filtered_annotators_sentence_in_singular_and_plural():
    """The quality-control sentence counts its annotators in the right number (it said "1 annotators")."""
    from dialeval.report.answer import answer

    def sentence(filtered: int) -> str:
        report = {
            "method": "no-such-method",
            "systems": [{"name": "a"}, {"name": "b"}],
            "filtered_annotators": [{"id": f"w{k}", "reason": "failed the check"} for k in range(filtered)],
        }
        (found,) = [s for s in answer(report)["summary"] if "filtered out" in s]
        return found

    assert sentence(1).startswith("1 annotator was filtered out by quality control")
    assert sentence(3).startswith("3 annotators were filtered out by quality control")
