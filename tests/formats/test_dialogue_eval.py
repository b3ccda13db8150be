"""Reader of the Dialogue-Eval MTurk batch CSV (Ji et al. 2022)."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from dialeval.errors import ImportFormatError
from dialeval.formats.dialogue_eval import parse_marked, read_dialogue_eval_csv

DATA = "dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv"
COLUMNS = [
    "HITId",
    "AssignmentId",
    "WorkerId",
    "AssignmentStatus",
    "WorkTimeInSeconds",
    *[f"Input.u{i}" for i in range(6)],
    "Answer.taskAnswers",
]
TASKS = ["kvmemnn", "qc", "lan_model", "biencoder", "polyencoder", "seq2seq"]


def answers(**override) -> dict:
    a = {}
    for i, task in enumerate(TASKS):
        a[f"task{i}"] = task
        a[f"seed{i}"] = str(100 + 200 * i)  # slots 0, 1, 2 (seed <= 500) use a persona
        a[f"score{i}"] = f"{10 * i}#50#60#70#80#{90 - i}#40#"
        a[f"dialogue{i}"] = "u: Hi there!###b: hello , how are you ?###u: Fine.###b: good .###"
        a[f"topic{i}"] = "#0@dogs#2@cats"
        a[f"topic_opinion{i}"] = "#0@like#2@dislike"
    a.update(override)
    return a


def write_csv(tmp_path: Path, rows: list[dict], name: str = "batch.csv") -> Path:
    path = tmp_path / name
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for k, row in enumerate(rows):
            base = {
                "HITId": f"H{k}",
                "AssignmentId": f"A{k}",
                "WorkerId": f"W{k % 2}",
                "AssignmentStatus": "Submitted",
                "WorkTimeInSeconds": "600",
                **{f"Input.u{i}": t for i, t in enumerate(TASKS)},
            }
            base.update(row)
            w.writerow(base)
    return path


def test_small_file_maps_systems_turns_and_judgments(tmp_path):
    path = write_csv(tmp_path, [{"Answer.taskAnswers": json.dumps([answers()])}])
    ds = read_dialogue_eval_csv(path, study_label="tiny")
    assert ds.method == "direct-assessment" and ds.meta["study_label"] == "tiny"
    assert [c.bots[0] for c in ds.conversations] == [
        "kvmemnn+persona",
        "qc",
        "lan_model+persona",
        "biencoder",
        "polyencoder",
        "seq2seq",
    ]
    unit = ds.units[0]
    assert unit.kind == "da-hit" and unit.conversation_ids == [f"A0/{i}" for i in range(6)]
    conv = ds.conversations[0]
    assert [t.speaker for t in conv.turns] == ["human", "bot", "human", "bot"]
    assert conv.turns[0].text == "Hi there!" and conv.turns[1].bot == "kvmemnn+persona"
    assert conv.turns[0].bot is None
    assert conv.meta["topic"] == "dogs" and conv.meta["topic_opinion"] == "like"
    assert conv.meta["seed"] == 100 and conv.meta["persona"] is True and conv.meta["qc"] is False
    assert ds.conversations[1].meta["qc"] is True
    j = ds.judgments[5]
    assert j.question == "ratings" and j.conversation_id == "A0/5" and j.annotator_id == "W0"
    assert j.value == {
        "robotic": 50.0,
        "interesting": 50.0,
        "fun": 60.0,
        "consistent": 70.0,
        "fluent": 80.0,
        "repetitive": 85.0,
        "topic": 40.0,
    }  # negatives not reversed
    assert j.elapsed_s == pytest.approx(100.0)
    assert j.meta == {"hit": "H0", "assignment": "A0", "slot": 5, "elapsed_estimated": True}


def test_empty_submission_keeps_annotator_without_judgments(tmp_path):
    path = write_csv(
        tmp_path,
        [{"Answer.taskAnswers": json.dumps([answers()])}, {"Answer.taskAnswers": "[{}]", "WorkerId": "Wempty"}],
    )
    ds = read_dialogue_eval_csv(path)
    assert len(ds.judgments) == 6 and len(ds.units) == 2
    empty = next(a for a in ds.annotators if a.id == "Wempty")
    assert empty.meta["empty_submission"] is True
    assert ds.meta["empty_submissions"] == ["A1"]
    assert ds.units[1].payload["empty_submission"] is True
    assigned = [c for c in ds.conversations if c.meta.get("empty_submission")]
    assert len(assigned) == 6 and all(not c.turns for c in assigned)


@pytest.mark.parametrize(
    "override, field",
    [
        ({"score3": "1#2#3#"}, "Answer.taskAnswers.score3"),
        ({"score0": "1#2#3#4#5#6#x#"}, "Answer.taskAnswers.score0"),
        ({"score2": "1#2#3#4#5#6#170#"}, "Answer.taskAnswers.score2"),
        ({"seed4": "many"}, "Answer.taskAnswers.seed4"),
        ({"task1": ""}, "Answer.taskAnswers.task1"),
        ({"dialogue2": "u: hi###x: what###"}, "Answer.taskAnswers.dialogue2"),
    ],
)
def test_malformed_answers_name_line_and_field(tmp_path, override, field):
    good = {"Answer.taskAnswers": json.dumps([answers()])}
    bad = {"Answer.taskAnswers": json.dumps([answers(**override)])}
    path = write_csv(tmp_path, [good, bad])
    with pytest.raises(ImportFormatError) as info:
        read_dialogue_eval_csv(path)
    err = info.value
    assert err.line == 3 and err.field == field
    assert "line 3" in str(err) and field in str(err) and str(path) in str(err)


def test_broken_json_and_missing_column(tmp_path):
    path = write_csv(tmp_path, [{"Answer.taskAnswers": '[{"task0": '}])
    with pytest.raises(ImportFormatError, match=r"line 2, field 'Answer.taskAnswers': not valid JSON"):
        read_dialogue_eval_csv(path)
    other = tmp_path / "other.csv"
    other.write_text("HITId,WorkerId\nH1,W1\n")
    with pytest.raises(ImportFormatError, match="missing column 'AssignmentId'") as info:
        read_dialogue_eval_csv(other)
    assert info.value.line == 1


def test_line_numbers_count_multiline_cells(tmp_path):
    multiline = answers(feedback="first line\nsecond line")
    path = write_csv(
        tmp_path,
        [
            {"Answer.taskAnswers": json.dumps([multiline], indent=1)},
            {"Answer.taskAnswers": json.dumps([answers(score5="bad")])},
        ],
    )
    raw_lines = path.read_text().count("\n")
    with pytest.raises(ImportFormatError) as info:
        read_dialogue_eval_csv(path)
    assert info.value.line == raw_lines  # the bad row is the file's last physical line


def test_duplicate_assignment_is_rejected(tmp_path):
    """An assignment id reused for another row is an error naming both lines; the same row twice
    (a concatenated batch file) is read once."""
    row = {"Answer.taskAnswers": json.dumps([answers()]), "AssignmentId": "SAME", "HITId": "H", "WorkerId": "W"}
    other = {**row, "WorkerId": "W-OTHER"}
    path = write_csv(tmp_path, [row, other])
    with pytest.raises(
        ImportFormatError, match="line 3, field 'AssignmentId': assignment 'SAME' was used for other content on line 2"
    ):
        read_dialogue_eval_csv(path)
    twice = read_dialogue_eval_csv(write_csv(tmp_path, [row, row]))
    assert len(twice.units) == 1 and len(twice.judgments) == len(
        read_dialogue_eval_csv(write_csv(tmp_path, [row])).judgments
    )


def test_parse_marked():
    assert parse_marked("#0@rap music#2@hobbies") == [
        {"turn": 0, "value": "rap music"},
        {"turn": 2, "value": "hobbies"},
    ]
    assert parse_marked("") == []


def test_published_free_run_1(shared_data):
    ds = read_dialogue_eval_csv(shared_data(DATA))
    assert ds.meta["rows"] == 305 and len(ds.units) == 305
    assert len(ds.annotators) == 249
    assert len(ds.judgments) == 304 * 6
    assert len(ds.meta["empty_submissions"]) == 1
    names = Counter(c.bots[0] for c in ds.conversations if not c.meta.get("empty_submission"))
    assert set(names) == {
        "biencoder",
        "biencoder+persona",
        "polyencoder",
        "polyencoder+persona",
        "kvmemnn",
        "kvmemnn+persona",
        "seq2seq",
        "seq2seq+persona",
        "lan_model",
        "lan_model+persona",
        "qc",
    }
    assert names["qc"] == 304
    assert all(len(j.value) == 7 for j in ds.judgments)
    first = ds.conversations[0]
    assert first.turns[0].speaker == "human" and first.turns[1].speaker == "bot"


def test_comment_only_submission_is_empty(tmp_path):
    # free run 2 and ice-breaker: a rejected assignment holds only the worker's comment
    path = write_csv(
        tmp_path,
        [
            {"Answer.taskAnswers": json.dumps([answers()])},
            {"Answer.taskAnswers": json.dumps([{"feedback": "nice survey"}]), "AssignmentStatus": "Rejected"},
        ],
    )
    ds = read_dialogue_eval_csv(path)
    assert ds.meta["empty_submissions"] == ["A1"] and len(ds.judgments) == 6
    assert ds.units[1].payload["feedback"] == "nice survey"
    assert ds.units[1].payload["assignment_status"] == "Rejected"


def test_partial_submission_keeps_what_was_answered(tmp_path):
    partial = {k: v for k, v in answers().items() if not k.endswith(("4", "5"))}
    partial.pop("score3")  # slot 3 chatted but not rated
    path = write_csv(tmp_path, [{"Answer.taskAnswers": json.dumps([partial])}])
    ds = read_dialogue_eval_csv(path)
    assert sorted(j.meta["slot"] for j in ds.judgments) == [0, 1, 2]
    assert ds.meta["partial_submissions"] == ["A0"] and ds.meta["empty_submissions"] == []
    unit = ds.units[0].payload
    assert unit["unanswered_slots"] == [4, 5] and unit["unrated_slots"] == [3]
    by_slot = {c.meta["slot"]: c for c in ds.conversations}
    assert by_slot[3].meta["unrated"] and by_slot[3].turns
    assert by_slot[4].meta["unanswered"] and by_slot[4].bots == [TASKS[4]] and not by_slot[4].turns
