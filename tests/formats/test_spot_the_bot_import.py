"""Importer of the Spot The Bot MongoDB export."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dialeval.errors import ImportFormatError
from dialeval.formats.spot_the_bot import PAPER_NAMES, exchanges_for_start_turn, read_spot_the_bot


def test_dailydialog_counts(shared_data):
    ds = read_spot_the_bot(shared_data("spot-the-bot"), "dailydialog", use_paper_names=False)
    assert ds.method == "spot-the-bot"
    assert len(ds.conversations) == 570
    assert len(ds.units) == 54
    assert len(ds.judgments) == 2136
    assert {u.kind for u in ds.units} == {"stb-package"}
    bots = Counter(b for c in ds.conversations for b in c.bots if b != "human")
    assert set(bots) == {"huggingface", "bert_rank", "seq2seq_att", "suckybot"}
    human = [c for c in ds.conversations if c.source == "human"]
    assert len(human) == 300 and all(c.bots == ["human", "human"] for c in human)
    assert all(t.bot is None for c in human for t in c.turns)
    # segments: start_turn 3/5/9 => 2/3/5 exchanges
    ks = Counter(j.value["segment_exchanges"] for j in ds.judgments)
    assert set(ks) == {2, 3, 5}
    for j in ds.judgments[:50]:
        assert j.value["decision_turn0"] == 2 * j.value["segment_exchanges"]
        assert j.value["entity0"] in {"human", "bot", "unsure"}
    assert len(ds.annotators) == len({j.annotator_id for j in ds.judgments})


def test_empathetic_loads_with_paper_names(shared_data):
    ds = read_spot_the_bot(shared_data("spot-the-bot"), "empathetic", rename=PAPER_NAMES)
    assert len(ds.conversations) == 750
    assert len(ds.units) == 72
    assert len(ds.judgments) == 2958
    assert {b for c in ds.conversations for b in c.bots} == {"GPT", "BR", "S2", "DR", "BL", "human"}
    assert Counter(j.value["segment_exchanges"] for j in ds.judgments).keys() == {1, 2, 3}
    seg = ds.units[0].payload["segments"][0]
    assert set(seg) == {"conversation_id", "start_turn", "exchanges"}
    assert seg["exchanges"] == (seg["start_turn"] + 1) // 2
    conv = ds.conversation_map()[ds.judgments[0].conversation_id]
    assert ds.judgments[0].shown_order == conv.bots
    # turns alternate entity0 / entity1 and carry the system
    bot_bot = next(c for c in ds.conversations if c.source == "bot-bot")
    assert [t.speaker for t in bot_bot.turns[:3]] == ["entity0", "entity1", "entity0"]
    assert bot_bot.turns[0].bot == bot_bot.bots[0]


def test_exchanges_for_start_turn():
    assert [exchanges_for_start_turn(s) for s in (3, 5, 9)] == [2, 3, 5]
    assert [exchanges_for_start_turn(s) for s in (1, 3, 5)] == [1, 2, 3]


def _write(folder, domain, convs, packs, anns):
    for kind, docs in (("sampled", convs), ("packed", packs), ("annotated", anns)):
        lines = [d if isinstance(d, str) else json.dumps(d) for d in docs]
        (folder / f"{kind}-dialogues-full-{domain}.json").write_text("\n".join(lines) + "\n")


def _tiny():
    conv = {
        "_id": {"$oid": "c1"},
        "system_name0": "a/x",
        "system_name1": "a/y",
        "system_type0": "x",
        "system_type1": "y",
        "is_human0": False,
        "is_human1": False,
        "convo": [{"exchange_nr": 1, "id": "x", "text": "hi"}, {"exchange_nr": 1, "id": "y", "text": "hello"}],
    }
    pack = {"_id": {"$oid": "p1"}, "package": [{"convo_id": "c1", "start_turn": 1}]}
    ann = {
        "_id": {"$oid": "a1"},
        "convo_id": "c1",
        "package_id": "p1",
        "user_name": "W1",
        "start_time": {"$numberLong": "1000"},
        "end_time": {"$numberLong": "21000"},
        "elapsed_time": 20000,
        "entity0_annotation": {
            "is_human": None,
            "fluencyValue": True,
            "sensitivenessValue": True,
            "specificityValue": False,
            "decision_turn": 2,
        },
        "entity1_annotation": {
            "is_human": False,
            "fluencyValue": False,
            "sensitivenessValue": True,
            "specificityValue": True,
            "decision_turn": 2,
        },
    }
    return conv, pack, ann


def test_tiny_export_values(tmp_path):
    conv, pack, ann = _tiny()
    _write(tmp_path, "d", [conv], [pack], [ann])
    ds = read_spot_the_bot(tmp_path, "d", rename={"x": "X"})
    assert ds.conversations[0].bots == ["X", "y"]
    j = ds.judgments[0]
    assert j.value == {
        "segment_exchanges": 1,
        "entity0": "unsure",
        "entity1": "bot",
        "decision_turn0": 2,
        "decision_turn1": 2,
        "fluency": 0,
        "sensibleness": "tie",
        "specificity": 1,
    }
    assert j.elapsed_s == 20.0 and j.unit_id == "p1" and j.meta["package_id"] == "p1"
    assert j.created_at is not None and j.created_at.year == 1970


def test_malformed_line_reports_line_number(tmp_path):
    conv, pack, ann = _tiny()
    _write(tmp_path, "d", [conv], [pack], [ann, "{not json"])
    with pytest.raises(ImportFormatError) as err:
        read_spot_the_bot(tmp_path, "d")
    assert err.value.line == 2 and "annotated" in str(err.value)


def test_missing_field_and_unknown_conversation(tmp_path):
    conv, pack, ann = _tiny()
    del ann["user_name"]
    _write(tmp_path, "d", [conv], [pack], [ann])
    with pytest.raises(ImportFormatError) as err:
        read_spot_the_bot(tmp_path, "d")
    assert err.value.field == "user_name" and err.value.line == 1
    conv, pack, ann = _tiny()
    pack["package"][0]["convo_id"] = "nope"
    _write(tmp_path, "d", [conv], [pack], [ann])
    with pytest.raises(ImportFormatError, match="unknown conversation"):
        read_spot_the_bot(tmp_path, "d")


def test_missing_file(tmp_path):
    with pytest.raises(ImportFormatError, match="file not found"):
        read_spot_the_bot(tmp_path, "nothing")


def test_one_file_of_the_export_stands_for_its_folder_through_the_cli(shared_data, tmp_path):
    """A user who points `dialeval import spot-the-bot` at one of the dump's three files (any of them)
    gets its folder imported; a file of another domain or name is a one-line error saying what to give."""
    import subprocess
    import sys

    folder = shared_data("spot-the-bot")
    dialeval = [sys.executable, "-m", "dialeval.cli", "import", "spot-the-bot"]
    for kind in ("annotated", "packed"):
        done = subprocess.run(
            [*dialeval, str(folder / f"{kind}-dialogues-full-dailydialog.json"), str(tmp_path / kind)]
            + ["--domain", "dailydialog"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        said = " ".join(done.stdout.split())  # rich folds long lines
        assert "570 conversations" in said and "2136 judgments" in said, said
    wrong = subprocess.run(
        [*dialeval, str(folder / "packed-dialogues-full-dailydialog.json"), str(tmp_path / "wrong")]
        + ["--domain", "empathetic"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "reads a folder" in wrong.stdout + wrong.stderr
    assert not (tmp_path / "wrong" / "dialeval.db").exists()
