"""The paths that make a million arena battles fit (issue 25): the import streams battles from the
file to the store, the report reads only the judgment fields the analysis needs, as columns. Both
must give exactly what the whole-file read and whole-judgment analysis give, through the installed
command as the README prints it. Speed itself is measured in benchmarks/cli_scale.py."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dialeval.errors import ImportFormatError
from dialeval.formats import reading
from dialeval.formats.arena import read_arena_battles
from dialeval.methods.arena.analysis import battle_frame
from dialeval.records import JudgmentColumns
from dialeval.report.build import build_report
from dialeval.textclean import clean_dataset

DIALEVAL = str(Path(sys.executable).with_name("dialeval"))
SECTIONS = (
    "systems",
    "win_rates",
    "battle_counts",
    "outcomes",
    "battles",
    "turns",
    "turn_curve",
    "by_category",
    "style_control",  # from the texts of the battles that have them
    "people",  # several people on one item (question_ids shared), their length preference
)


def _battles(n: int = 90, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    models = ["alpha", "beta", "gamma", "delta"]
    out = []
    for k in range(n):
        a, b = rng.sample(models, 2)
        record = {
            "num": k,
            "question_id": f"q{k}",
            "model_a": a,
            "model_b": b,
            "winner": rng.choice(["model_a", "model_a", "model_b", "tie", "tie (bothbad)"]),
            "judge": f"user{k % 7}",
            "turn": 1 + k % 2,
            "tstamp": 1682351591.5 + k,
            "category": ["code", "chat"][k % 2],
        }
        if k % 3 == 0:  # a third of the battles carry their text
            record["conversation_a"] = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": f"A{k}"}]
            record["conversation_b"] = [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": f"B{k}" + "!" * (k % 4)},
            ]
        out.append(record)
    return out


def _write(path: Path, records: list[dict], newline: str = "\n") -> Path:
    path.write_bytes("".join(json.dumps(r) + newline for r in records).encode("utf-8"))
    return path


def _run(*args) -> subprocess.CompletedProcess:
    # wide enough that Rich never wraps a message inside a long temporary path
    env = {**os.environ, "COLUMNS": "250"}
    return subprocess.run([DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


def test_streamed_import_and_column_report_give_the_whole_read_values(tmp_path):
    records = [{**r, "question_id": f"q{r['num'] % 30}"} for r in _battles()]  # items of several votes
    data = _write(tmp_path / "battles.jsonl", [*records, records[5]])  # a repeated line: read once
    study = tmp_path / "s"
    done = _run("import", "arena", data, study)
    assert done.returncode == 0, done.stderr
    assert "imported into" in done.stdout and "90 judgments" in done.stdout and "60 conversations" in done.stdout
    assert "read once" in done.stdout
    # the indexes dropped for the load into the new study's empty table are all back
    from dialeval.store.schema import JudgmentRow

    assert {name for name, _ in _indexes(study)} >= {index.name for index in JudgmentRow.__table__.indexes}
    done = _run("report", study)
    assert done.returncode == 0, done.stderr
    got = json.loads((study / "report" / "report.json").read_text(encoding="utf-8"))

    whole = clean_dataset(read_arena_battles(data), str(data))
    expected = json.loads(json.dumps(build_report(whole, {"method": "arena"})))
    for key in SECTIONS:
        assert got.get(key) == expected.get(key), key
    assert got["people"]["items_judged_more_than_once"] and got["people"]["longer_answer_share"]["n"]
    assert got["study"]["collected"]["judgments"] == 90 and got["study"]["collected"]["conversations"] == 60

    # the store gives the same judgments as columns (what the report read) and as objects
    from dialeval.registry import get
    from dialeval.study import open_study

    opened = open_study(study)
    try:
        columns = opened.store.load_dataset(opened.id, columns=get("arena").report_columns)
        objects = opened.store.load_dataset(opened.id)
    finally:
        opened.close()
    assert isinstance(columns.judgments, JudgmentColumns) and len(columns.judgments) == 90
    # the analysis' table of votes (with the answers' texts) is the same from columns as from objects
    pd.testing.assert_frame_equal(battle_frame(columns), battle_frame(objects))
    assert battle_frame(columns)["text_a"].notna().sum() == 30
    for lean, full in zip(columns.judgments, objects.judgments, strict=True):
        assert lean.annotator_id == full.annotator_id
        assert lean.value == full.value  # every key of an imported battle's value is a column
        assert lean.meta["battle"] == full.meta["battle"] and lean.meta["category"] == full.meta["category"]
    # the digest of the streamed records is that of the whole read: a CRLF copy is the same records
    again = _run("import", "arena", _write(tmp_path / "crlf.jsonl", [*records, records[5]], "\r\n"), study)
    assert again.returncode == 0 and "same records in another encoding" in again.stdout, again.stdout


def test_a_bad_battle_leaves_no_study_and_no_partial_import(tmp_path):
    records = _battles(40)
    records[33] = {**records[33], "winner": "model_c"}
    data = _write(tmp_path / "bad.jsonl", records)
    study = tmp_path / "new"
    done = _run("import", "arena", data, study)
    assert done.returncode == 2  # a data error
    assert "bad.jsonl, line 34, field 'winner': unknown outcome 'model_c'" in done.stderr
    assert "Traceback" not in done.stderr and not study.exists()

    kept = tmp_path / "kept"
    assert _run("import", "arena", _write(tmp_path / "good.jsonl", _battles(20)), kept).returncode == 0
    before = (kept / "study.yaml").read_text()
    done = _run("import", "arena", data, kept, "--append")
    assert done.returncode == 2 and "line 34" in done.stderr
    assert (kept / "study.yaml").read_text() == before
    assert _run("report", kept).returncode == 0
    assert json.loads((kept / "report" / "report.json").read_text())["battles"] == 20  # nothing of bad.jsonl


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_lines_read_in_blocks_are_the_lines_of_the_whole_text(tmp_path, monkeypatch, newline):
    text = newline.join(["{}", "", "é€ 𝄞 line", "x" * 40, "last"]) + newline + "tail"
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))  # with a byte-order mark
    whole = list(reading.lines(path))
    monkeypatch.setattr(reading, "_BLOCK", 7)  # blocks far smaller than a line
    assert list(reading.lines(path)) == whole
    assert [line for _, line in whole] == text.replace("\r\n", "\n").split("\n")


def test_a_decoding_error_in_a_later_block_names_the_file_offset_and_line(tmp_path, monkeypatch):
    data = b'{"a": 1}\n' * 20 + b'{"a": "\xff"}\n'
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    with pytest.raises(ImportFormatError) as whole:
        reading.decode(data, path)
    monkeypatch.setattr(reading, "_BLOCK", 16)
    with pytest.raises(ImportFormatError) as blocks:
        list(reading.lines(path))
    assert str(blocks.value) == str(whole.value)
    assert "byte offset 187" in str(blocks.value) and "line 21" in str(blocks.value)


def test_the_win_rate_grid_of_many_models_stays_page_sized():
    from dialeval.report import plots

    names = [f"m{k:03d}" for k in range(100)]
    rows = [{"a": a, "b": b, "win_rate_a": 0.5} for i, a in enumerate(names) for b in names[i + 1 :]]
    fig = plots.winrate_heatmap(rows)
    width, height = fig.get_size_inches()
    assert width <= 18 and height <= 18
    assert not fig.axes[0].texts  # colours only: 10,000 printed numbers would be unreadable
    few = plots.winrate_heatmap([r for r in rows if r["a"] in names[:5] and r["b"] in names[:5]])
    assert len(few.axes[0].texts) == 20  # a small grid keeps its numbers


def _indexes(study: Path) -> set[tuple[str, str]]:
    import sqlite3

    with sqlite3.connect(study / "dialeval.db") as db:
        rows = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'judgments'")
        return {(name, sql or "") for name, sql in rows}


def test_a_failed_first_import_keeps_the_indexes_it_dropped_for_the_load(tmp_path):
    # the load into an empty judgments table drops its indexes and builds them after the rows, in
    # the same transaction: a failed import rolls the drop back, a good one ends with every index
    from dialeval.store.schema import JudgmentRow

    study = tmp_path / "s"
    assert _run("init", "arena", study).returncode == 0  # a study, its database made by the import
    records = _battles(40)
    records[33] = {**records[33], "winner": "model_c"}
    done = _run("import", "arena", _write(tmp_path / "bad.jsonl", records), study)
    assert done.returncode == 2 and "line 34" in done.stderr
    declared = _indexes(study)
    assert {name for name, _ in declared} >= {index.name for index in JudgmentRow.__table__.indexes}
    # (a good first import ends with every index: test_streamed_import_and_column_report_...)


def test_streamed_import_into_postgresql_goes_by_copy_and_reads_back_the_same(tmp_path, pg_url, monkeypatch):
    # PostgreSQL takes the streamed rows by COPY (store._BulkInsert); they read back as SQLite's do
    records = _battles(60)
    data = _write(tmp_path / "battles.jsonl", records)
    env = {**os.environ, "DIALEVAL_DATABASE_URL": pg_url, "COLUMNS": "250"}
    done = subprocess.run(
        [DIALEVAL, "import", "arena", str(data), str(tmp_path / "pg")], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and "60 judgments" in done.stdout, done.stdout + done.stderr
    assert _run("import", "arena", data, tmp_path / "lite").returncode == 0

    from dialeval.study import open_study

    def judgments(study: Path) -> list[tuple]:
        opened = open_study(study)
        try:
            got = opened.store.load_dataset(opened.id).judgments
        finally:
            opened.close()
        # (the same instant: each database's driver gives its own UTC tzinfo)
        return [(j.annotator_id, j.value, j.meta, j.shown_order, j.created_at.timestamp()) for j in got]

    lite = judgments(tmp_path / "lite")
    monkeypatch.setenv("DIALEVAL_DATABASE_URL", pg_url)
    assert judgments(tmp_path / "pg") == lite and len(lite) == 60


def _as_columns(dataset, value_keys: dict[str, str], meta_keys: list[str]):
    """The dataset with its judgments as records.JudgmentColumns, the frame store._judgment_columns
    builds (an integer column with a missing value is float, as pyarrow gives it to pandas)."""
    from dataclasses import replace

    rows = []
    for k, j in enumerate(dataset.judgments):
        row = {
            "judgment_id": k + 1,
            "annotator": j.annotator_id,
            "unit": j.unit_id,
            "conversation": j.conversation_id,
            "elapsed_s": j.elapsed_s,
            "assignment_id": None,
            "question": j.question,
            "excluded": None,
        }
        row.update({f"value.{key}": j.value.get(key) for key in value_keys})
        row.update({f"meta.{key}": j.meta.get(key) for key in meta_keys})
        rows.append(row)
    frame = pd.DataFrame(rows)
    for key, kind in value_keys.items():
        if kind == "integer" and frame[f"value.{key}"].notna().all():
            frame[f"value.{key}"] = frame[f"value.{key}"].astype("int64")
    return replace(dataset, judgments=JudgmentColumns(frame, list(value_keys), meta_keys))


def _people_battles(live_turns_complete: bool):
    """Battles that reach every branch of arena_labels: items judged by several people in either side
    order, texts on both conversations, an item's lengths known from another battle of it, live
    per-turn battles with their candidates, ties, both bad, a self-battle, a vote of no item."""
    from dialeval.records import Conversation, Dataset, Judgment, Turn

    rng = random.Random(11)
    models = ["alpha", "beta", "gamma"]
    convs = [
        Conversation(f"c{k}", [m], [Turn("human", "Hi"), Turn("bot", "x" * rng.randrange(1, 30), bot=m)])
        for k, m in enumerate(models * 4)
    ]
    live = Conversation(
        "live",
        ["alpha", "beta"],
        [
            Turn("human", "Hello"),
            Turn(
                "bot",
                "a1",
                bot="alpha",
                candidates=[{"bot": "alpha", "text": "a1"}, {"bot": "beta", "text": "bb1"}],
                meta={"turn": 1},
            ),
            Turn("human", "More"),
            Turn(
                "bot",
                "b2",
                bot="beta",
                candidates=[{"bot": "alpha", "text": "aaa2"}, {"bot": "beta", "text": "b2"}],
                meta={"turn": 2},
            ),
        ],
        source="live",
    )
    judgments = []
    for k in range(160):
        a, b = rng.sample(models, 2) if k % 17 else ("gamma", "gamma")
        winner = rng.choice(["model_a", "model_b", "model_b", "tie", "tie (bothbad)"])
        value = {"model_a": a, "model_b": b, "winner": winner, "turn": 1 + k % 2}
        meta = {"battle": f"b{k}"}
        if k % 9:
            meta["item"] = f"i{k % 23}"
        if k % 4 == 0:  # both texts
            ca = rng.choice([c for c in convs if c.bots == [a]])
            cb = rng.choice([c for c in convs if c.bots == [b] and c is not ca])
            value.update(conversation_a=ca.id, conversation_b=cb.id)
        elif k % 4 == 1:  # only one side's text: the item's lengths may come from another battle
            value["conversation_a"] = rng.choice([c for c in convs if c.bots == [a]]).id
        conversation = None
        if k % 10 == 3:
            conversation, value["model_a"], value["model_b"] = "live", "alpha", "beta"
            value.pop("conversation_a", None), value.pop("conversation_b", None)
            if not live_turns_complete and k == 13:
                value.pop("turn")
        judgments.append(Judgment(f"p{k % 6}", None, "battle", value, conversation_id=conversation, meta=meta))
    return Dataset("arena", conversations=[*convs, live], judgments=judgments)


@pytest.mark.parametrize("live_turns_complete", [True, False])
def test_the_people_section_from_columns_is_the_one_from_label_objects(live_turns_complete):
    # a million battles' people section counts on columns (JudgeAdapter.label_frame), not on a
    # million Label objects: the same labels, the same section
    from dataclasses import replace

    from dialeval.judges.audit import people_section
    from dialeval.methods.arena.judge import arena, arena_label_frame, arena_labels
    from dialeval.registry import get

    columns = get("arena").report_columns
    dataset = _as_columns(_people_battles(live_turns_complete), columns["value"], list(columns["meta"]))
    frame = arena_label_frame(dataset)
    fields = ["item", "question", "annotator", "label", "decisive", "score", "chose_longer"]
    objects = arena_labels(dataset)  # iterating the columns gives Judgment objects
    assert frame[fields].to_dict(orient="records") == [{f: getattr(lab, f) for f in fields} for lab in objects]
    assert {True, False, None} <= set(frame["chose_longer"])  # every branch reached
    people = {f"p{k}" for k in range(5)}
    fast = people_section(dataset, people, n_boot=200)
    assert fast == people_section(dataset, people, adapter=replace(arena, label_frame=None), n_boot=200)
    assert fast["items_judged_more_than_once"] > 10 and fast["longer_answer_share"]["n"] > 20


def test_columns_read_in_batches_where_a_field_starts_late_are_the_one_batch_read(tmp_path, monkeypatch):
    # a million battles are read 100,000 rows at a time: a field none of one batch's rows has (the
    # category, the texts of later battles) is a column of nulls there and of strings in the next
    from dialeval.registry import get
    from dialeval.store import store
    from dialeval.study import open_study

    records = _battles(30)
    for k, record in enumerate(records):
        if k < 20:
            record.pop("category")
        if k < 25:
            record.pop("conversation_a", None), record.pop("conversation_b", None)
    data = _write(tmp_path / "late.jsonl", records)
    assert _run("import", "arena", data, tmp_path / "s").returncode == 0
    opened = open_study(tmp_path / "s")
    try:
        whole = opened.store.load_dataset(opened.id, columns=get("arena").report_columns)
        monkeypatch.setattr(store, "_COLUMN_BATCH", 7)
        batched = opened.store.load_dataset(opened.id, columns=get("arena").report_columns)
        objects = opened.store.load_dataset(opened.id)
    finally:
        opened.close()
    pd.testing.assert_frame_equal(batched.judgments.frame, whole.judgments.frame)
    pd.testing.assert_frame_equal(battle_frame(batched), battle_frame(objects))
    assert battle_frame(batched)["category"].notna().sum() == 10


def test_columns_parsed_from_json_text_are_the_database_extracted_ones(tmp_path, monkeypatch):
    # on SQLite the judgments' value and meta are read as JSON text and parsed column-wise by
    # pyarrow; a batch with a value that reader would not give as JSON_EXTRACT does (an object in a
    # string field, 1 for true, a key twice, a document that is not an object) is extracted by the
    # database: every batch is the one JSON_EXTRACT reads
    import sqlite3

    pytest.importorskip("pyarrow")
    from dialeval.registry import get
    from dialeval.store import store
    from dialeval.study import open_study

    data = _write(tmp_path / "b.jsonl", _battles(60))
    assert _run("import", "arena", data, tmp_path / "s").returncode == 0
    db = sqlite3.connect(tmp_path / "s" / "dialeval.db")
    ids = [i for (i,) in db.execute("SELECT id FROM judgments ORDER BY id")]
    edits = {  # judgment (by position) -> (column, key, JSON text of its new value)
        1: ("meta", "category", '"caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/ \\n\\t\\b\\f\\r"'),
        2: ("meta", "category", "null"),
        3: ("value", "winner", '"tie (bothbad)"'),
        12: ("meta", "category", '{"b": [1, 2.5, "x"], "a": null}'),  # a nested value: its JSON text
        22: ("value", "anonymous", "1"),
        36: ("value", "anonymous", "false"),
    }
    for position, (column, key, text) in edits.items():
        db.execute(
            f"UPDATE judgments SET {column} = json_set({column}, '$.\"{key}\"', json(?)) WHERE id = ?",
            (text, ids[position]),
        )
    twice = '{"winner": "model_b", "model_a": "x", "model_b": "y", "turn": 1, "winner": "model_a"}'
    db.execute("UPDATE judgments SET value = ? WHERE id = ?", (twice, ids[42]))  # JSON_EXTRACT takes the first
    db.execute("UPDATE judgments SET value = 'null' WHERE id = ?", (ids[47],))  # not an object
    db.execute("UPDATE judgments SET meta = '{}' WHERE id = ?", (ids[52],))
    db.commit()
    db.close()
    opened = open_study(tmp_path / "s")
    columns = get("arena").report_columns
    parsed = []
    real = store._json_field_arrays

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        parsed.append(out is not None)
        return out

    try:
        monkeypatch.setattr(store, "_COLUMN_BATCH", 5)
        monkeypatch.setattr(store, "_json_field_arrays", counted)
        read = opened.store.load_dataset(opened.id, columns=columns).judgments.frame
        monkeypatch.setattr(store, "_json_reader", lambda: None)  # the database extracts every field
        extracted = opened.store.load_dataset(opened.id, columns=columns).judgments.frame
    finally:
        opened.close()
    pd.testing.assert_frame_equal(read, extracted)
    assert read["meta.category"][1] == 'café 😀 "q" \\ / \n\t\b\f\r'
    assert read["meta.category"][12] == '{"b":[1,2.5,"x"],"a":null}'
    assert parsed.count(True) >= 10 and parsed.count(False) == 4  # both ways were taken


def test_battles_past_several_batches_are_all_kept_and_a_late_bad_line_is_named(tmp_path):
    # 45,000 battles in the releases' usual shape: past two batches of the store (20,000) and many
    # of the records digest (4,096); every battle kept in file order, the digest of the whole read
    from dialeval.import_sources import records_digest
    from dialeval.study import open_study

    n = 45_000
    records = [
        {
            "question_id": f"q{k % 40_000}",  # some questions asked twice
            "model_a": f"m{k % 13}",
            "model_b": f"m{(k * 7 + 1) % 13}",
            "winner": ["model_a", "model_b", "tie", "tie (bothbad)"][k % 4],
            "judge": f"user{k % 997}",
            "turn": 1 + k % 3,
            "anony": True,
            "language": "English",
            "tstamp": 1682000000.0 + k * 11.3,
        }
        for k in range(n)
    ]
    data = _write(tmp_path / "many.jsonl", records)
    study = tmp_path / "s"
    done = _run("import", "arena", data, study)
    assert done.returncode == 0, done.stderr
    assert f"{n} judgments" in done.stdout
    whole = read_arena_battles(data)
    opened = open_study(study)
    try:
        sources = opened.store.imported_sources(opened.id)
        stored = opened.store.load_dataset(opened.id)
    finally:
        opened.close()
    assert sources[0]["records_sha256"] == records_digest(whole)
    got = [(j.meta["battle"], j.meta["item"], j.value) for j in stored.judgments]
    assert len(got) == n and got == [(j.meta["battle"], j.meta["item"], j.value) for j in whole.judgments]

    bad = list(records)
    bad[22_221] = {**bad[22_221], "winner": "model_c"}  # in the second batch
    done = _run("import", "arena", _write(tmp_path / "bad.jsonl", bad), tmp_path / "new")
    assert done.returncode == 2
    assert "bad.jsonl, line 22222, field 'winner': unknown outcome 'model_c'" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "new").exists()
    broken = tmp_path / "broken.jsonl"
    broken.write_text(data.read_text(encoding="utf-8").replace('"q30000"', '"q30000', 1), encoding="utf-8")
    done = _run("import", "arena", broken, tmp_path / "new")
    assert done.returncode == 2 and "broken.jsonl, line 30001" in done.stderr and "not valid JSON" in done.stderr
    assert not (tmp_path / "new").exists()
