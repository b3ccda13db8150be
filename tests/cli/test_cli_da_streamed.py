"""`dialeval import dialogue-eval` stores the file a batch of rows at a time (Store.save_batches):
the same rows as the whole-file import, all or nothing when a later batch holds a bad row."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.formats import dialogue_eval
from dialeval.formats.dialogue_eval import read_dialogue_eval_csv
from dialeval.import_sources import RecordsDigest
from dialeval.records import Conversation, Turn
from dialeval.store import Store
from tests.formats.test_dialogue_eval import answers, write_csv

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def rows_of(db: Path) -> dict[str, list[tuple]]:
    """Every row of the data tables, without the creation times."""
    out = {}
    with sqlite3.connect(db) as c:
        for table in ("conversations", "turns", "annotators", "units", "judgments"):
            columns = [r[1] for r in c.execute(f"pragma table_info({table})") if r[1] != "created_at"]
            out[table] = c.execute(f"select {', '.join(columns)} from {table} order by id").fetchall()
    return out


def mixed_rows() -> list[dict]:
    """Workers W0/W1 on alternate rows (their assignments span batches), an empty and a partial
    submission, a comment."""
    full = json.dumps([answers()])
    partial = {k: v for k, v in answers().items() if not k.endswith(("3", "4"))}
    return [
        {"Answer.taskAnswers": full},
        {"Answer.taskAnswers": "[{}]"},
        {"Answer.taskAnswers": json.dumps([partial])},
        {"Answer.taskAnswers": json.dumps([{**answers(), "feedback": "fun \u00e9t\u00e9 'quoted'"}])},
        {"Answer.taskAnswers": full},
    ]


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(dialogue_eval, "BATCH_ROWS", 2)


def test_streamed_import_stores_the_whole_file_import_rows(tmp_path, small_batches):
    path = write_csv(tmp_path, mixed_rows())
    folder = tmp_path / "streamed"
    result = invoke("import", "dialogue-eval", path, folder)
    assert result.exit_code == 0, result.output
    assert "1 empty submissions kept" in result.output and "1 partial submissions kept" in result.output
    # the whole-file reader's Dataset through save_dataset: the import before batches
    whole = Store(f"sqlite:///{tmp_path / 'whole.db'}")
    study = whole.ensure_study("whole", "direct-assessment", {})
    whole.save_dataset(study.id, read_dialogue_eval_csv(path))
    whole.close()
    streamed, expected = rows_of(folder / "dialeval.db"), rows_of(tmp_path / "whole.db")
    assert streamed == expected
    annotators = {r[2]: json.loads(r[-1]) for r in streamed["annotators"]}  # meta once every batch is read
    assert annotators["W0"]["assignments"] == ["A0", "A2", "A4"] and annotators["W1"]["empty_submission"] is True
    assert {b.name for b in load_bots(folder)} >= {"kvmemnn+persona", "qc", "seq2seq"}
    again = invoke("import", "dialogue-eval", path, folder)
    assert again.exit_code == 0 and "nothing changed" in again.output


def load_bots(folder: Path):
    from dialeval.config import load_study

    return load_study(folder).bots


def test_bad_row_in_a_later_batch_is_named_and_nothing_is_stored(tmp_path, small_batches):
    rows = mixed_rows()
    rows[3] = {"Answer.taskAnswers": json.dumps([answers(score2="1#2#3#")])}
    path = write_csv(tmp_path, rows)
    folder = tmp_path / "new"
    result = invoke("import", "dialogue-eval", path, folder)
    assert result.exit_code != 0
    message = " ".join(result.output.split())
    assert "line 5" in message and "Answer.taskAnswers.score2" in message and "expected 7 scores" in message
    assert not folder.exists()  # a new study: nothing left behind
    # into a study that holds data (--append): it keeps exactly what it held
    held = tmp_path / "held"
    assert invoke("import", "dialogue-eval", write_csv(tmp_path, mixed_rows()[:1], "first.csv"), held).exit_code == 0
    before = rows_of(held / "dialeval.db")
    result = invoke("import", "dialogue-eval", path, held, "--append")
    assert result.exit_code != 0 and "line 5" in " ".join(result.output.split())
    assert rows_of(held / "dialeval.db") == before


def test_plain_turns_hash_as_their_records():
    conv = Conversation(id="A/0", bots=["kvmemnn"], turns=[], source="live", meta={"topics": [{"turn": 0}]})
    turns = [("human", 'it\'s "quoted"\nnewline \u00e9', None), ("bot", "ok", "kvmemnn"), ("bot", "", "kvmemnn")]
    plain, objects = RecordsDigest(), RecordsDigest()
    plain.conversation_adder()(conv, turns)
    full = Conversation(
        conv.id, conv.bots, [Turn(speaker=s, text=t, bot=b) for s, t, b in turns], conv.source, conv.meta
    )
    objects.add("conversations", full)
    assert plain.hexdigest() == objects.hexdigest()


@pytest.mark.parametrize("richer", [False, True])
def test_records_digest_of_a_dataset_is_that_of_each_record(richer):
    # records_digest hashes plain turns without their Turns (records.plain_turns); a turn with more
    # (a seed, meta) takes the record's own repr: either way the digest of every record added alone
    from datetime import UTC, datetime

    from dialeval.import_sources import records_digest
    from dialeval.records import Annotator, Dataset, Judgment, Unit, plain_turns

    last = Turn("bot", "yo \u00e9", "x", is_seed=True, meta={"k": 1}) if richer else Turn("bot", "yo \u00e9", "x")
    dataset = Dataset(
        method="spot-the-bot",
        conversations=[Conversation("a", ["x"], [Turn("human", 'it\'s "q"'), last]), Conversation("b", ["x"], [])],
        annotators=[Annotator("w1", meta={"file": "/somewhere/judge.jsonl", "n": 2})],
        units=[Unit("u1", "segment", ["a"], {"k": [1]})],
        judgments=[Judgment("w1", "u1", "bot", {"x": 1}, created_at=datetime(2024, 1, 2, tzinfo=UTC), meta={"m": 1})],
    )
    assert (plain_turns(dataset.conversations) is None) == richer
    one_by_one = RecordsDigest()
    for kind in RecordsDigest.KINDS:
        for item in getattr(dataset, kind):
            one_by_one.add(kind, item)
    assert records_digest(dataset) == one_by_one.hexdigest()


def test_streamed_import_on_postgresql_stores_the_whole_file_import_rows(tmp_path, small_batches, monkeypatch):
    from sqlalchemy import text

    from tests.conftest import fresh_schema

    def rows(url: str) -> dict[str, list]:
        store = Store(url)
        try:
            with store.engine.connect() as c:
                return {
                    table: [
                        {k: v for k, v in row._mapping.items() if k != "created_at"}
                        for row in c.execute(text(f"select * from {table} order by id"))
                    ]
                    for table in ("conversations", "turns", "annotators", "units", "judgments")
                }
        finally:
            store.close()

    path = write_csv(tmp_path, mixed_rows())
    with fresh_schema() as streamed_url, fresh_schema() as whole_url:
        monkeypatch.setenv("DIALEVAL_DATABASE_URL", streamed_url)
        result = invoke("import", "dialogue-eval", path, tmp_path / "streamed")
        assert result.exit_code == 0, result.output
        whole = Store(whole_url)
        study = whole.ensure_study("streamed", "direct-assessment", {})
        whole.save_dataset(study.id, read_dialogue_eval_csv(path))
        whole.close()
        assert rows(streamed_url) == rows(whole_url)


def test_a_file_cut_short_names_the_line_and_the_missing_column_and_stores_nothing(tmp_path):
    """A download cut off mid-row: the last row lacks the answers column. The command says which line
    and column, in one line without a traceback, and creates no study (it was a KeyError)."""
    import subprocess
    import sys

    path = write_csv(tmp_path, mixed_rows()[:3])
    text = path.read_text(encoding="utf-8").rstrip("\r\n")
    cut = text[: text.rindex("\n") + 1] + "H9,A9,W1"  # the last row: its first three cells only
    path.write_text(cut + "\n", encoding="utf-8")
    folder = tmp_path / "study"
    done = subprocess.run(
        [sys.executable, "-m", "dialeval.cli", "import", "dialogue-eval", str(path), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    message = " ".join(done.stderr.split()) + " ".join(done.stdout.split())
    assert done.returncode == 2, message
    assert "Traceback" not in message and "KeyError" not in message
    assert "line 4" in message and "Answer.taskAnswers" in message and "cut short" in message
    assert not folder.exists()
