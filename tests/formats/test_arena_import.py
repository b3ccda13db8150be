"""Importer of Chatbot Arena battles (formats/arena.py)."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest

from dialeval.errors import ImportFormatError
from dialeval.formats.arena import JUDGE_PLATFORM, normalise_winner, read_arena_battles

BATTLES = [
    {
        "model_a": "gpt-4",
        "model_b": "vicuna-13b",
        "winner": "model_a",
        "judge": "u1",
        "turn": 1,
        "tstamp": 1682351591.5,
        "question_id": "q1",
        "conversation_a": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
        "conversation_b": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hey."}],
    },
    {
        "model_a": "vicuna-13b",
        "model_b": "gpt-4",
        "winner": "tie (bothbad)",
        "judge": "u2",
        "turn": 2,
        "question_id": "q2",
    },
    {"model_a": "vicuna-13b", "model_b": "gpt-4", "winner": "both_bad", "question_id": "q3"},
]


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_battles_with_text_judges_and_turns(tmp_path):
    ds = read_arena_battles(_jsonl(tmp_path / "b.jsonl", BATTLES))
    assert ds.method == "arena" and ds.meta["battles"] == 3
    assert [j.value["winner"] for j in ds.judgments] == ["model_a", "tie (bothbad)", "tie (bothbad)"]
    assert [j.annotator_id for j in ds.judgments] == ["u1", "u2", "crowd"]  # no judge: the crowd
    first = ds.judgments[0]
    assert first.value["turn"] == 1 and first.meta["battle"] == "q1"
    assert first.created_at is not None and first.created_at.year == 2023
    # the text becomes one conversation per side, named in the judgment
    conv = ds.conversation_map()[first.value["conversation_a"]]
    assert conv.bots == ["gpt-4"] and [t.speaker for t in conv.turns] == ["human", "bot"]
    assert conv.turns[1].bot == "gpt-4" and conv.turns[1].text == "Hello!"
    assert len(ds.conversations) == 2  # battles without text have none


def test_json_list_csv_and_parquet_read_alike(tmp_path):
    plain = [{k: v for k, v in b.items() if not k.startswith("conversation")} for b in BATTLES]
    (tmp_path / "b.json").write_text(json.dumps(plain), encoding="utf-8")
    pd.DataFrame(plain).to_csv(tmp_path / "b.csv", index=False)
    pd.DataFrame(plain).to_parquet(tmp_path / "b.parquet")
    values = [
        [j.value for j in read_arena_battles(tmp_path / f"b.{ext}").judgments] for ext in ("json", "csv", "parquet")
    ]
    assert values[0] == values[1] == values[2]
    assert values[0][0] == {"model_a": "gpt-4", "model_b": "vicuna-13b", "winner": "model_a", "turn": 1}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"model_a": "x", "model_b": "y", "winner": "left"}, "line 1, field 'winner': unknown outcome 'left'"),
        ({"model_a": "x", "winner": "tie"}, "line 1, field 'model_b': missing"),
        (
            {"model_a": "x", "model_b": "y", "winner": "tie", "turn": "two"},
            "field 'turn': expected a whole number, found the text 'two'",
        ),
    ],
)
def test_bad_battles_name_line_and_field(tmp_path, record, message):
    with pytest.raises(ImportFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_arena_battles(_jsonl(tmp_path / "b.jsonl", [record]))


def test_outcome_spellings():
    assert normalise_winner(" Tie (BothBad) ") == "tie (bothbad)"
    assert normalise_winner("bothbad") == "tie (bothbad)"
    assert normalise_winner("model_b") == "model_b"
    assert normalise_winner("a") is None and normalise_winner(None) is None


def test_published_battles_and_a_judge_file(shared_data):
    folder = shared_data("arena-judges")
    ds = read_arena_battles(folder / "human.jsonl", judge_files=[folder / "gpt-4-0125-preview.jsonl"])
    crowd = [j for j in ds.judgments if j.annotator_id == "crowd"]
    assert len(crowd) == 26919
    # the README of the data: model_a 9,516; model_b 9,391; tie 2,880; tie (bothbad) 5,132
    assert Counter(j.value["winner"] for j in crowd) == {
        "model_a": 9516,
        "model_b": 9391,
        "tie": 2880,
        "tie (bothbad)": 5132,
    }
    assert len({j.value["model_a"] for j in crowd} | {j.value["model_b"] for j in crowd}) == 20
    judge = next(a for a in ds.annotators if a.id == "gpt-4-0125-preview")
    assert judge.platform == JUDGE_PLATFORM
    verdicts = [j for j in ds.judgments if j.annotator_id == judge.id]
    assert len(verdicts) == 26919 and {j.meta["battle"] for j in verdicts} == {j.meta["battle"] for j in crowd}


def test_judge_file_of_other_battles_is_refused(tmp_path):
    battles = _jsonl(tmp_path / "b.jsonl", [{"num": 0, "model_a": "x", "model_b": "y", "winner": "tie"}])
    other = _jsonl(tmp_path / "judge.jsonl", [{"num": 0, "model_a": "x", "model_b": "z", "winner": "tie"}])
    with pytest.raises(ImportFormatError, match="battle 0 is x vs y in the battle file, x vs z here"):
        read_arena_battles(battles, judge_files=[other])


def test_cli_import_with_judges_and_report(tmp_path):
    from typer.testing import CliRunner

    from dialeval.cli import app

    runner = CliRunner()
    votes = [("x", "y", "model_a"), ("y", "x", "model_b"), ("x", "y", "tie"), ("y", "x", "model_a")]
    crowd = _jsonl(
        tmp_path / "crowd.jsonl",
        [{"num": k, "model_a": a, "model_b": b, "winner": w} for k, (a, b, w) in enumerate(votes)],
    )
    judge = _jsonl(
        tmp_path / "judge-1.jsonl",
        [{"num": k, "model_a": a, "model_b": b, "winner": "model_a"} for k, (a, b, _) in enumerate(votes)],
    )
    study = tmp_path / "arena"
    result = runner.invoke(app, ["import", "arena", str(crowd), str(study), "--judges", str(judge)])
    assert result.exit_code == 0, result.output
    assert "8 judgments" in " ".join(result.output.split())
    result = runner.invoke(app, ["report", str(study)])
    assert result.exit_code == 0, result.output
    report = json.loads((study / "report" / "report.json").read_text())
    assert report["battles"] == 4  # the judge is not ranked
    # crowd: x won battles 0, 1 and 2 was a tie, y won 3; the judge always says model_a
    audit = report["judge_audit"]
    assert audit["judges"] == ["judge-1"] and audit["headline"] == "decisive"
    decisive = audit["questions"]["battle"]["judges"]["judge-1"]["decisive"]
    assert (decisive["items"], decisive["agreement"]) == (3, 0.6667)
    position = audit["bias"]["judge-1"]["position_bias"]
    assert position["first_share"]["share"] == 1.0 and position["first_share"]["n"] == 4
    bad = runner.invoke(app, ["import", "dialeval", str(crowd), str(tmp_path / "x"), "--judges", str(judge)])
    assert bad.exit_code == 2 and "--judges belongs to arena imports" in bad.output


def _plain(k: int, **changes) -> dict:
    """A battle in the releases' usual shape (what the importer reads without its getters)."""
    record = {
        "question_id": f"q{k}",
        "model_a": "gpt-4",
        "model_b": "claude-v1",
        "winner": "model_b",
        "judge": f"arena_user_{k % 3}",
        "turn": 1,
        "anony": True,
        "language": "English",
        "tstamp": 1682351591.25 + k,
    }
    record.update(changes)
    return {key: value for key, value in record.items() if value is not ...}  # `...`: leave the key out


SHAPES = [
    _plain(0),
    _plain(1, model_a="alpaca-13b", model_b="alpaca-13b", turn=3),  # the same model on both sides
    _plain(2, model_a="zeta", model_b="Alpha", winner="tie"),  # the pair sorted for the item key
    _plain(3, question_id="q0"),  # a question asked again: the battle id gets the line
    _plain(4, question_id="q0"),
    _plain(5, winner="Model_A"),  # spellings the general path normalises
    _plain(6, winner="tie (inconsistent)"),
    _plain(7, winner="both_bad"),
    _plain(8, turn=2.0),  # a whole float: its item key keeps "2.0"
    _plain(9, tstamp=1682351600),  # an integer time
    _plain(10, tstamp=0.0),  # no time
    _plain(11, judge=...),  # the crowd
    _plain(12, judge=17),  # an id as a number
    _plain(13, language=None, anony=False, category="coding"),
    _plain(14, num=14),  # a battle id of its own
    _plain(15, item_id="it-1"),
    _plain(16, model_a="  padded  ", judge=" j "),
    _plain(17, model_a="gpt-4\u00e9\u6f22", question_id="q\u00e917"),  # not ASCII
    _plain(18, turn=...),
    _plain(19, question_id=42),
    _plain(20, question_id=...),  # none: the battle is named after its line
    _plain(21, tstamp=1682351591.123456789),  # rounded to microseconds
    _plain(22, conversation_a=None, conversation_b=None),
]


def test_plain_battles_read_as_the_general_way_reads_them(tmp_path, monkeypatch):
    # every record read twice: with the plain path, and with it refusing everything (the getters)
    from dialeval.formats import arena
    from dialeval.import_sources import records_digest

    path = _jsonl(tmp_path / "shapes.jsonl", SHAPES)
    fast = read_arena_battles(path)
    monkeypatch.setattr(arena, "_plain_battle", lambda data, line, ids: None)
    general = read_arena_battles(path)
    assert len(fast.judgments) == len(SHAPES)
    assert fast.judgments == general.judgments and fast.annotators == general.annotators
    for a, b in zip(fast.judgments, general.judgments, strict=True):
        assert repr(a) == repr(b) and list(a.meta) == list(b.meta) and list(a.value) == list(b.value)
    assert records_digest(fast) == records_digest(general)
    assert fast.judgments[2].meta["item"] == "q2/t1/Alpha|zeta"
    assert [j.meta["battle"] for j in fast.judgments[3:5]] == ["q0-4", "q0-5"]
