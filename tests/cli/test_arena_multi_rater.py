"""Imported pairwise human judgments with several people per item and a judge asked in both side
orders (the shape of FastChat's MT-Bench human judgments), through `dialeval import arena ... --judges`
and `dialeval report` in a subprocess: the report's judge audit gives people's agreement with each
other, the judge's position consistency and the length preference of the judge and of the people.

The same commands on the public release itself (MT_BENCH_HUMAN, MT_BENCH_JUDGE: files CI does not
have) are run by scripts/try_outside_releases.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import strict_json_loads

DIALEVAL = str(Path(sys.executable).with_name("dialeval"))
MODELS = ("alpha", "beta")


def _conv(prompt: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _files(folder: Path) -> tuple[Path, Path]:
    """12 items (question, turn, alpha vs beta), 3 people each, sides drawn per vote; alpha's answer
    is the longer one and people choose it on 9 items unanimously, split 2-1 on 3. The judge answers
    every item in both orders: the same winner on 8 items, the first-shown answer on the other 4."""
    human, judge = [], []
    for q in range(12):
        prompt = f"Question {q}?"
        texts = {"alpha": "A long and careful answer. " * 8, "beta": "Short."}
        votes = ["alpha"] * 3 if q < 9 else ["alpha", "alpha", "beta"]
        for k, choice in enumerate(votes):
            a, b = MODELS if (q + k) % 2 == 0 else MODELS[::-1]
            human.append(
                {
                    "question_id": 100 + q,
                    "turn": 1,
                    "model_a": a,
                    "model_b": b,
                    "winner": "model_a" if choice == a else "model_b",
                    "judge": f"expert_{k}",
                    "conversation_a": _conv(prompt, texts[a]),
                    "conversation_b": _conv(prompt, texts[b]),
                }
            )
        for a, b in (MODELS, MODELS[::-1]):
            winner = "model_a" if q >= 8 else ("model_a" if a == "alpha" else "model_b")
            judge.append({"question_id": 100 + q, "turn": 1, "model_a": a, "model_b": b, "winner": winner})
    return _write(folder / "human.jsonl", human), _write(folder / "gpt4_pair.jsonl", judge)


def _run(*args: object, cwd: Path) -> str:
    done = subprocess.run([DIALEVAL, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def _report(human: Path, judge: Path, folder: Path) -> dict:
    _run("import", "arena", human, "study", "--judges", judge, cwd=folder)
    _run("report", "study", cwd=folder)
    return strict_json_loads((folder / "study" / "report" / "report.json").read_text())


def test_several_people_per_item_and_a_judge_in_both_orders(tmp_path):
    human, judge = _files(tmp_path)
    report = _report(human, judge, tmp_path)
    audit = report["judge_audit"]
    name = "gpt4_pair"
    people = audit["questions"]["battle"]["human_human"]["all"]
    # 12 items, 3 pairs of people on each: 9 unanimous items (27 agreeing pairs) + 3 split (1 of 3).
    assert people["items"] == 12 and people["pairs"] == 36
    assert people["agreement"] == pytest.approx(30 / 36, abs=1e-4)
    assert people["agreement_ci"] is not None and people["kappa"] is not None
    mine = audit["questions"]["battle"]["judges"][name]
    assert mine["all"]["items"] == 12 and mine["as_often_as_people"] is not None
    assert "one person per item" not in audit["verdict"]
    bias = audit["bias"][name]
    position = bias["position_bias"]
    assert position["basis"] == "imported verdicts in both side orders"
    assert position["consistent_pairs"]["n"] == 12
    assert position["consistent_pairs"]["share"] == pytest.approx(8 / 12, abs=1e-4)
    # Every decisive answer chose the longer one (alpha), except the judge's 4 "first shown" beta picks.
    length = bias["length_preference"]
    assert length["people_longer_share"]["n"] == 36 and length["people_longer_share"]["k"] == 33
    assert length["judge_longer_share"]["n"] == 24 and length["judge_longer_share"]["k"] == 20
    assert length["judge_longer_share"]["p_value"] is not None
    # The same people's numbers in the arena report itself, judge or not.
    assert report["people"]["items_judged_more_than_once"] == 12
    assert report["people"]["agreement"]["battle"]["agreement"] == people["agreement"]
    assert report["people"]["longer_answer_share"]["k"] == 33
    html = (tmp_path / "study" / "report" / "index.html").read_text()
    assert "people with each other" in html and "same verdict both orders" in html
