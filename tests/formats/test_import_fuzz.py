"""Bad input to `dialeval import` ends in a clear error or a correct import: never a traceback, a
hang, or silently wrong records (issue 22).

- A bounded Hypothesis fuzz of every import format (mutations of real samples, engine in
  import_fuzz.py; the longer run is benchmarks/fuzz_imports.py).
- The failure classes found before, kept as regression cases run through the command as a user
  runs it (`dialeval import FORMAT FILE STUDY` in a subprocess), several at once to keep CI fast.
- The reading layer's typed getters and decoding, directly.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dialeval.errors import ImportFormatError
from dialeval.formats.reading import Record, UniqueIds, decode, parse_json, session
from tests.conftest import require_shared
from tests.formats import import_fuzz as fuzz

REPO = Path(__file__).resolve().parents[2]
DIALEVAL = [str(REPO / ".venv" / "bin" / "dialeval")]


@pytest.fixture(scope="module")
def seeds_and_views(tmp_path_factory):
    require_shared("spot-the-bot")
    require_shared("dialogue-eval")
    seeds = fuzz.seeds(require_shared("."))
    root = tmp_path_factory.mktemp("seeds")
    return seeds, [fuzz.original_view(s, root / str(i)) for i, s in enumerate(seeds)]


def test_every_format_has_a_seed_that_imports(seeds_and_views):
    """The fuzz starts from real samples that import (else every mutation would be an error)."""
    from dialeval.formats import importers

    seeds, views = seeds_and_views
    assert {s.fmt for s in seeds} == set(importers())
    assert all(fuzz.size(view) > 0 for view in views)


def _fuzz(seeds_and_views, tmp_path_factory, index: int, klass: str, rnd: random.Random, store: bool) -> None:
    seeds, views = seeds_and_views
    seed = seeds[index % len(seeds)]
    case = fuzz.mutate(seed, klass, rnd)
    outcome = fuzz.judge_case(case, tmp_path_factory.mktemp("case"), views[index % len(seeds)], store=store)
    assert outcome.verdict == "ok", f"{seed.fmt}, {klass}: {outcome.verdict}: {outcome.detail}"


FUZZ = settings(
    max_examples=500,
    deadline=None,  # each case has its own time limit (import_fuzz.TIME_LIMIT_S): a hang fails it
    database=None,
    derandomize=True,  # the same cases on every CI run; benchmarks/fuzz_imports.py explores more
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(index=st.integers(0, 20), klass=st.sampled_from(fuzz.CLASSES), rnd=st.randoms(use_true_random=False))
def test_mutated_files_read_correctly_or_fail_clearly(seeds_and_views, tmp_path_factory, index, klass, rnd):
    _fuzz(seeds_and_views, tmp_path_factory, index, klass, rnd, store=False)


@settings(FUZZ, max_examples=50)
@given(index=st.integers(0, 20), klass=st.sampled_from(fuzz.CLASSES), rnd=st.randoms(use_true_random=False))
def test_mutated_files_through_the_whole_import_command(seeds_and_views, tmp_path_factory, index, klass, rnd):
    """The same, through `dialeval import` in-process: the study's database and lock included."""
    _fuzz(seeds_and_views, tmp_path_factory, index, klass, rnd, store=True)


# --- the failure classes of issue 22, through the command ------------------------------------------------


def _jsonl(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")


ARENA = [
    {"num": 1, "model_a": "gpt-4", "model_b": "vicuna", "winner": "model_a", "judge": "u1", "turn": 1},
    {"num": 2, "model_a": "vicuna", "model_b": "gpt-4", "winner": "tie", "judge": "u2", "turn": 1},
]


def _stb(change) -> dict[str, bytes]:
    """The small Spot The Bot export of the fuzz seed, one record changed by `change(files)`."""
    files = fuzz._stb_seed(require_shared("."))
    decoded = {name: [json.loads(line) for line in data.decode().splitlines()] for name, data in files.items()}
    change(decoded)
    return {name: _jsonl(records) for name, records in decoded.items()}


def _set_first(kind: str, key: str, value, entity: int | None = None):
    def change(files):
        record = files[f"{kind}-dialogues-full-dailydialog.json"][0]
        if entity is not None:
            record[f"entity{entity}_annotation"][key] = value
        elif kind == "packed":
            record["package"][0][key] = value
        else:
            record[key] = value

    return change


def _csv_batch(**cells) -> bytes:
    """The published batch's header and first row, with `cells` changed."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(fuzz._dialogue_eval_seed(require_shared(".")).decode(), newline="")))
    header, row = rows[0], rows[1]
    for name, value in cells.items():
        row[header.index(name)] = value
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows([header, row])
    return out.getvalue().encode()


ACUTE_REUSE = [
    fuzz.ACUTE_LINES[1],
    {
        **fuzz.ACUTE_LINES[1],
        "dialogue_dicts": [fuzz.ACUTE_LINES[1]["dialogue_dicts"][0], fuzz.ACUTE_LINES[0]["dialogue_dicts"][1]],
    },
]
DEEP = '{"id": "d1", "turns": [], "meta": ' + "[" * 900 + "]" * 900 + "}\n"

# name: (format, {file: bytes}, path given, extra args, exit code, words the output must hold)
CORPUS = {
    "invalid UTF-8 (Latin-1 bytes)": (
        "arena",
        {"b.jsonl": json.dumps({**ARENA[0], "judge": "José"}, ensure_ascii=False).encode("latin-1")},
        "b.jsonl",
        [],
        2,
        ["b.jsonl, line 1", "byte offset", "--encoding"],
    ),
    "the same file with --encoding latin-1": (
        "arena",
        {"b.jsonl": json.dumps({**ARENA[0], "judge": "José"}, ensure_ascii=False).encode("latin-1")},
        "b.jsonl",
        ["--encoding", "latin-1"],
        0,
        ["1 judgments"],
    ),
    "UTF-16 with a byte-order mark": (
        "openai-messages",
        {"c.jsonl": '{"id": "c1", "messages": [{"role": "user", "content": "Grüße"}]}\n'.encode("utf-16")},
        "c.jsonl",
        [],
        0,
        ["1 conversations"],
    ),
    "binary garbage": ("parlai", {"p.jsonl": bytes(range(256)) * 4}, "p.jsonl", [], 2, ["p.jsonl", "byte offset"]),
    "JSON nested 900 deep": (
        "dialeval",
        {"d.jsonl": DEEP.encode()},
        "d.jsonl",
        [],
        2,
        ["d.jsonl, line 1", "nested deeper"],
    ),
    "a conversation id twice, other content": (
        "parlai",
        {"p.jsonl": _jsonl([{"conversation_id": "x", "dialog": [[{"id": "human", "text": t}]]} for t in ("a", "b")])},
        "p.jsonl",
        [],
        2,
        ["p.jsonl, line 2", "line 1"],
    ),
    "a number where a list is expected (bots: 5)": (
        "dialeval",
        {"d.jsonl": _jsonl([{"id": "d", "bots": 5, "turns": []}])},
        "d.jsonl",
        [],
        2,
        ["field 'bots'", "expected a list"],
    ),
    'a string where a list is expected (bots: "GPT")': (
        "dialeval",
        {"d.jsonl": _jsonl([{"id": "d", "bots": "GPT", "turns": []}])},
        "d.jsonl",
        [],
        2,
        ["field 'bots'", "expected a list"],
    ),
    "a null text": (
        "acute-pairings",
        {
            "a.jsonl": _jsonl(
                [{**fuzz.ACUTE_LINES[1], "dialogue_dicts": [{"dialogue": [{"id": "blender", "text": None}]}] * 2}]
            )
        },
        "a.jsonl",
        [],
        2,
        ["field 'dialogue_dicts[0].dialogue[0].text'", "null"],
    ),
    "an object as text": (
        "arena",
        {"b.jsonl": _jsonl([{**ARENA[0], "conversation_a": [{"role": "user", "content": {"a": 1}}]}])},
        "b.jsonl",
        [],
        2,
        ["field 'conversation_a[0].content'", "expected text"],
    ),
    "an ACUTE dialogue id reused for another dialogue": (
        "acute-pairings",
        {"a.jsonl": _jsonl(ACUTE_REUSE)},
        "a.jsonl",
        [],
        2,
        ["a.jsonl, line 2", "line 1", "dialogue id '8'"],
    ),
    "a repeated line with the same battle id": (
        "arena",
        {"b.jsonl": _jsonl([ARENA[0], ARENA[1], ARENA[0]])},
        "b.jsonl",
        [],
        0,
        ["2 judgments", "line 3 repeats line 1"],
    ),
    "NaN as an integer (arena turn)": (
        "arena",
        {"b.jsonl": json.dumps(ARENA[0]).replace('"turn": 1', '"turn": NaN').encode()},
        "b.jsonl",
        [],
        2,
        ["b.jsonl, line 1", "NaN"],
    ),
    "an integer above 2^63": (
        "arena",
        {"b.jsonl": _jsonl([{**ARENA[0], "turn": 10**30}])},
        "b.jsonl",
        [],
        2,
        ["field 'turn'", "out of range"],
    ),
    '"false" as a boolean (Spot The Bot is_human0)': (
        "spot-the-bot",
        lambda: _stb(_set_first("sampled", "is_human0", "false")),
        ".",
        ["--domain", "dailydialog"],
        2,
        ["field 'is_human0'", "expected true or false"],
    ),
    "NaN as a boolean (fluencyValue)": (
        "spot-the-bot",
        lambda: _stb(_set_first("annotated", "fluencyValue", 0.5, entity=0)),
        ".",
        ["--domain", "dailydialog"],
        2,
        ["field 'entity0_annotation.fluencyValue'"],
    ),
    "a negative start_turn": (
        "spot-the-bot",
        lambda: _stb(_set_first("packed", "start_turn", -3)),
        ".",
        ["--domain", "dailydialog"],
        2,
        ["field 'package[0].start_turn'", "out of range"],
    ),
    "an infinite duration": (
        "dialogue-eval",
        lambda: {"b.csv": _csv_batch(WorkTimeInSeconds="inf")},
        "b.csv",
        [],
        2,
        ["field 'WorkTimeInSeconds'", "'inf'"],
    ),
    "a CSV field of 5 MB": (
        "dialogue-eval",
        lambda: {"b.csv": _csv_batch(**{"Answer.taskAnswers": "x" * 5_000_000})},
        "b.csv",
        [],
        2,
        ["b.csv, line 2", "CSV field limit"],
    ),
}


def _import(fmt: str, path: Path, study: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*DIALEVAL, "import", fmt, str(path), str(study), *extra], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def corpus_runs(tmp_path_factory):
    """Every corpus case run through the command, four at a time."""
    root = tmp_path_factory.mktemp("corpus")

    def run(item):
        k, (name, (fmt, files, given, extra, _, _)) = item
        folder = root / f"case{k}"
        folder.mkdir()
        for file, data in (files() if callable(files) else files).items():
            (folder / file).write_bytes(data)
        return name, _import(fmt, folder / given if given != "." else folder, root / f"study{k}", *extra)

    with ThreadPoolExecutor(4) as pool:
        return dict(pool.map(run, enumerate(CORPUS.items())))


@pytest.mark.parametrize("name", list(CORPUS))
def test_failure_class_through_the_command(corpus_runs, name):
    *_, code, words = CORPUS[name]
    result = corpus_runs[name]
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    assert result.returncode == code, output
    if code:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # one line
    for word in words:
        assert word in " ".join(output.split()), output  # rich may wrap the line on a narrow terminal


def _judgments(study: Path) -> int:
    from dialeval.study import open_study

    opened = open_study(study)
    try:
        return opened.store.counts(opened.id)["judgments"]
    finally:
        opened.close()


def test_simultaneous_imports_of_one_file_store_it_once(tmp_path):
    """Four imports of one file into one study at once: one stores it, the others find it there."""
    battles = tmp_path / "b.jsonl"
    battles.write_bytes(_jsonl([{**ARENA[0], "num": k} for k in range(200)]))
    study = tmp_path / "study"
    command = [*DIALEVAL, "import", "arena", str(battles), str(study)]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert all(p.returncode == 0 for p in processes), outputs
    assert sum(out.startswith("imported into") for out, _ in outputs) == 1, outputs
    assert _judgments(study) == 200


def test_a_crlf_or_utf16_copy_with_append_is_the_same_records(tmp_path):
    original = tmp_path / "b.jsonl"
    original.write_bytes(_jsonl(ARENA))
    crlf = tmp_path / "copy" / "b.jsonl"
    crlf.parent.mkdir()
    crlf.write_bytes(original.read_bytes().replace(b"\n", b"\r\n"))
    utf16 = tmp_path / "b16.jsonl"
    utf16.write_bytes(original.read_text().encode("utf-16"))
    study = tmp_path / "study"
    assert _import("arena", original, study).returncode == 0
    for copy in (crlf, utf16):
        result = _import("arena", copy, study, "--append")
        said = " ".join(result.stdout.split())  # the console wraps long lines at the terminal's width
        assert result.returncode == 0 and "same records in another encoding or line ending" in said
    assert _judgments(study) == 2


def test_a_bug_in_an_importer_is_one_line_and_a_log_file(tmp_path):
    """An exception no importer expects: one line naming the file and line, the traceback in a log."""
    battles = tmp_path / "b.jsonl"
    battles.write_bytes(_jsonl(ARENA))
    patch = (
        "import sys, dialeval.formats.arena as a; from dialeval.cli import app\n"
        "a.normalise_winner = lambda raw: 1 / 0\n"
        "sys.argv[0] = 'dialeval'; app()"
    )
    env = {**os.environ, "DIALEVAL_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-c", patch, "import", "arena", str(battles), str(tmp_path / "study")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    message = result.stderr.strip()
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert len(message.splitlines()) == 1, message
    assert "b.jsonl, line 1" in message and "bug in dialeval" in message and "ZeroDivisionError" in message
    logs = list((tmp_path / "cache" / "crash-reports").glob("dialeval-import-*.log"))
    assert len(logs) == 1 and str(logs[0]) in message
    assert "Traceback" in logs[0].read_text() and "ZeroDivisionError" in logs[0].read_text()
    assert not (tmp_path / "study" / "study.yaml").exists()  # nothing written


# --- the reading layer, directly ---------------------------------------------------------------------------


def test_typed_getters_read_strictly_by_type():
    record = Record(
        {"t": True, "f": "false", "n": 3, "w": 3.0, "x": 2.5, "s": "GPT", "l": ["a", 1], "z": None, "o": {"a": 1}},
        "f.jsonl",
        7,
    )
    assert record.boolean("t") is True and record.integer("w") == 3 and record.number("x") == 2.5
    assert record.texts("l") == ["a", "1"] and record.text("z", "default") == "default"
    for call, message in [
        (lambda: record.boolean("f"), "field 'f': expected true or false, found the text 'false'"),
        (lambda: record.integer("x"), "expected a whole number"),
        (lambda: record.integer("n", minimum=4), "3 is out of range (4.."),
        (lambda: record.array("s"), "field 's': expected a list, found the text 'GPT'"),
        (lambda: record.text("o"), "expected text, found an object"),
        (lambda: record.text("z"), "field 'z': must not be null"),
        (lambda: record.ident("t"), "expected an id"),
        (lambda: record.record("o").text("a"), "field 'o.a': expected text, found the number 1"),
    ]:
        with pytest.raises(
            ImportFormatError, match="^f.jsonl, line 7, " if "field 'o.a'" not in message else "line 7"
        ) as info:
            call()
        assert message in str(info.value)


def test_decoding_and_json_limits():
    assert decode(b"\xef\xbb\xbfhi", "f") == "hi" and decode("hi".encode("utf-16"), "f") == "hi"
    with pytest.raises(ImportFormatError, match=r"f, line 2: not utf-8 text: bytes e9 .* at byte offset 3"):
        decode(b"ok\n\xe9t\xe9", "f")
    with session("latin-1"):
        assert decode(b"\xe9", "f") == "é"
    for text, message in [
        ("[" * 70 + "]" * 70, "nested deeper than 64"),
        ("[" * 5000 + "]" * 5000, "nested deeper than 64"),
        ('{"a": NaN}', "NaN is not a JSON value"),
        ("[1e400]", "out of range"),
        ("9" * 5000, "out of range"),
    ]:
        with pytest.raises(ImportFormatError, match=message):
            parse_json(text, "f", 1)


def test_ids_repeated_exactly_are_read_once_and_reused_ids_name_both_lines():
    ids = UniqueIds("f", "battle id", "num")
    assert ids.add("1", 1, {"a": 1}) and not ids.add("1", 4, {"a": 1})
    with pytest.raises(
        ImportFormatError, match="f, line 9, field 'num': battle id '1' was used for other content on line 1"
    ):
        ids.add("1", 9, {"a": 2})
