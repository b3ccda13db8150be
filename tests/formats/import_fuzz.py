"""Mutation fuzzing of every import format: shared by tests/formats/test_import_fuzz.py (a bounded
Hypothesis run in CI) and benchmarks/fuzz_imports.py (a longer run that counts outcomes per class).

A case is a real sample of one format (the published files the tests use, cut small, or the
samples of the format's tests), mutated one way. Each mutation class says what a correct outcome
is (:class:`Expect`); :func:`judge_case` runs the reader in-process (or the whole `dialeval import`
command with `store=True`) under a time limit and classifies the outcome:

- ``ok``: a correct import, or a clear error (one line, naming the file);
- ``traceback``: any exception that is not a user error (DialevalError, OSError);
- ``bug``: the import command reported a bug in one line (still a failure to fix);
- ``hang``: over the time limit;
- ``silently-wrong``: exit 0 with records other than the expectation allows;
- ``refused``: a clear error where the mutation kept the same records (a CRLF copy, a UTF-16 copy).
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import signal
import string
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

SHARED_DEFAULT = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TIME_LIMIT_S = 10.0


class Expect(Enum):
    ANY = "a clear error or an import whose records are well-typed"
    SAME = "an import of the same records"
    SAME_OR_ERROR = "the same records, or a clear error"
    SAME_OR_MORE = "the same records, or more (a repeated line without an id is a new record), never an error"
    MORE_OR_ERROR = "a clear error, or every line read (no record silently dropped)"
    ERROR = "a clear error"


@dataclass
class Case:
    fmt: str
    klass: str
    expect: Expect
    files: dict[str, bytes]  # name in the case folder -> bytes
    path: str  # what `dialeval import` is given: a file name, or "." for the folder
    options: dict[str, Any] = field(default_factory=dict)  # domain, encoding
    detail: str = ""


# --- seeds: small real samples of every format --------------------------------------------------------

ACUTE_LINES = [
    {
        "is_onboarding": True,
        "speakers_to_eval": ["model_1", "model_2"],
        "correct_answer": "model_2",
        "dialogue_dicts": [
            {"speakers": ["model_1", "human_evaluator"], "dialogue": [{"id": "human_evaluator", "text": "hello"}]},
            {"speakers": ["model_2", "human_evaluator"], "dialogue": [{"id": "model_2", "text": "good opener"}]},
        ],
    },
    {
        "is_onboarding": False,
        "speakers_to_eval": ["blender", "dialogpt"],
        "dialogue_ids": [3, 8],
        "dialogue_dicts": [
            {
                "speakers": ["blender", "other_speaker"],
                "dialogue": [{"id": "blender", "text": "I love hiking."}, {"id": "other_speaker", "text": "Me too!"}],
            },
            {
                "speakers": ["human_evaluator", "dialogpt"],
                "dialogue": [{"id": "human_evaluator", "text": "Hi!"}, {"id": "dialogpt", "text": "Hey. Café?"}],
            },
        ],
    },
    {
        "is_onboarding": False,
        "speakers_to_eval": ["dialogpt", "blender"],
        "dialogue_ids": [8, 3],
        "dialogue_dicts": [],  # filled below: the same two dialogues, swapped
    },
]
ACUTE_LINES[2]["dialogue_dicts"] = list(reversed(ACUTE_LINES[1]["dialogue_dicts"]))

PARLAI_LINES = [
    {
        "dialog": [
            [
                {"id": "TransformerGenerator_1", "episode_done": False, "text": "what do you do for fun ?"},
                {"id": "TransformerGenerator_2", "episode_done": False, "text": "i play guitar ."},
            ],
            [{"id": "TransformerGenerator_1", "text": "nice , me too ."}],
        ],
        "context": [{"id": "context", "text": "your persona: i like music."}],
        "conversation_id": "sc-1",
    },
    {
        "dialog": [
            [
                {"id": "human_evaluator", "text": "Hi there"},
                {"id": "blender", "text": "Hello! Ça va?", "is_seed": False},
            ]
        ],
        "conversation_id": "hb-2",
    },
    {"dialog": [[{"id": "human", "text": "anyone?"}, {"id": "kvmemnn", "text": "yes"}]]},
]

OPENAI_LINES = [
    {
        "id": "c1",
        "model": "gpt-x",
        "messages": [
            {"role": "system", "content": "You are friendly."},
            {"role": "user", "content": "Hi!"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "!"}]},
        ],
    },
    {"bot": "retrieval", "messages": [{"role": "user", "content": "Hey"}, {"role": "assistant", "content": "Yö"}]},
]

DIALEVAL_LINES = [
    {
        "id": "d1",
        "bots": ["alpha", "beta"],
        "turns": [
            {"speaker": "entity0", "text": "hi", "bot": "alpha"},
            {"speaker": "entity1", "text": "hello there", "bot": "beta", "meta": {"k": 1}},
        ],
        "source": "bot-bot",
    },
    {"id": "d2", "bots": ["alpha"], "turns": [{"speaker": "human", "text": "seed", "is_seed": True}]},
]

ARENA_LINES = [
    {
        "num": 900001,
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
    {"model_a": "vicuna-13b", "model_b": "gpt-4", "winner": "tie (bothbad)", "judge": "u2", "turn": 2},
]


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def _head(path: Path, n: int) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            out.append(json.loads(line))
            if len(out) == n:
                break
    return out


def _stb_seed(shared: Path) -> dict[str, bytes]:
    """Three packages of the published DailyDialog export, their conversations and annotations."""
    folder = shared / "spot-the-bot"
    packs = _head(folder / "packed-dialogues-full-dailydialog.json", 2)
    wanted = {e["convo_id"] for p in packs for e in p["package"]}
    convs = []
    with (folder / "sampled-dialogues-full-dailydialog.json").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if doc["_id"]["$oid"] in wanted:
                convs.append(doc)
    package_ids = {p["_id"]["$oid"] for p in packs}
    anns = []
    with (folder / "annotated-dialogues-full-dailydialog.json").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if doc["package_id"] in package_ids and doc["convo_id"] in wanted:
                anns.append(doc)
            if len(anns) == 6:
                break
    return {
        "sampled-dialogues-full-dailydialog.json": _jsonl(convs),
        "packed-dialogues-full-dailydialog.json": _jsonl(packs),
        "annotated-dialogues-full-dailydialog.json": _jsonl(anns),
    }


def _dialogue_eval_seed(shared: Path) -> bytes:
    """The header and three rows of the published free-topic batch."""
    text = (shared / "dialogue-eval" / "FreeTopicRound1" / "Combined_Batches_305hits.csv").read_text(
        encoding="utf-8-sig"
    )
    rows = list(csv.reader(io.StringIO(text, newline="")))[:4]
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


@dataclass
class Seed:
    fmt: str
    files: dict[str, bytes]
    path: str
    options: dict[str, Any] = field(default_factory=dict)
    csv_json_column: str | None = None  # a CSV whose cells of this column hold JSON


def seeds(shared: Path = SHARED_DEFAULT) -> list[Seed]:
    """One seed per format (arena twice: JSON lines with battle ids, and the published file)."""
    found = [
        Seed("acute-pairings", {"pairings.jsonl": _jsonl(ACUTE_LINES)}, "pairings.jsonl"),
        Seed("parlai", {"chats.jsonl": _jsonl(PARLAI_LINES)}, "chats.jsonl"),
        Seed("openai-messages", {"chats.jsonl": _jsonl(OPENAI_LINES)}, "chats.jsonl"),
        Seed("dialeval", {"convs.jsonl": _jsonl(DIALEVAL_LINES)}, "convs.jsonl"),
        Seed("arena", {"battles.jsonl": _jsonl(ARENA_LINES)}, "battles.jsonl"),
    ]
    if (shared / "arena-judges" / "human.jsonl").exists():
        found.append(
            Seed("arena", {"human.jsonl": _jsonl(_head(shared / "arena-judges" / "human.jsonl", 6))}, "human.jsonl")
        )
    if (shared / "spot-the-bot").exists():
        found.append(Seed("spot-the-bot", _stb_seed(shared), ".", {"domain": "dailydialog"}))
    if (shared / "dialogue-eval").exists():
        found.append(
            Seed(
                "dialogue-eval",
                {"batch.csv": _dialogue_eval_seed(shared)},
                "batch.csv",
                csv_json_column="Answer.taskAnswers",
            )
        )
    return found


# --- structured views: records of a JSON-lines file or a CSV ---------------------------------------------


def _is_csv(name: str) -> bool:
    return name.endswith(".csv")


def _load(seed: Seed, name: str) -> list[Any]:
    text = seed.files[name].decode("utf-8")
    if _is_csv(name):
        return [dict(r) for r in csv.DictReader(io.StringIO(text, newline=""))]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _dump(seed: Seed, name: str, records: list[Any], raw_values: dict[str, str] | None = None) -> bytes:
    """Records back to bytes; `raw_values` replaces placeholder strings by raw JSON text (NaN...)."""
    if _is_csv(name):
        header = list(records[0]) if records else []
        for r in records:
            header += [k for k in r if k not in header]
        out = io.StringIO(newline="")
        writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
        text = out.getvalue()
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    for marker, raw in (raw_values or {}).items():
        text = text.replace(json.dumps(marker), raw)
    return text.encode("utf-8")


def _leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of every leaf and every non-empty container below the top."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*path, k), v
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*path, i), v
            yield from _leaves(v, (*path, i))


def _set(root: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        root = root[key]
    root[path[-1]] = value


def _delete(root: Any, path: tuple) -> None:
    for key in path[:-1]:
        root = root[key]
    del root[path[-1]]


class _Target:
    """A record-level view of one file of a seed (for CSV seeds: the JSON column's cells too)."""

    def __init__(self, seed: Seed, rnd: random.Random):
        self.seed = seed
        names = [n for n in seed.files if not n.endswith(".metadata")]
        self.name = rnd.choice(sorted(names))
        self.records = _load(seed, self.name)
        self.rnd = rnd

    def pick(self) -> tuple[int, Any, tuple, Any]:
        """(record index, container, path, value): a random place in a random record; in a CSV seed
        a cell of its JSON column is decoded so the place may sit inside it."""
        k = self.rnd.randrange(len(self.records))
        record = self.records[k]
        column = self.seed.csv_json_column
        if column and column in record and self.rnd.random() < 0.7:
            try:
                inner = json.loads(record[column])
            except json.JSONDecodeError:
                inner = None
            if isinstance(inner, (list, dict)) and list(_leaves(inner)):
                record["__inner__"] = inner
                path, value = self.rnd.choice(list(_leaves(inner)))
                return k, inner, path, value
        places = list(_leaves(record)) if not _is_csv(self.name) else [((c,), v) for c, v in record.items()]
        path, value = self.rnd.choice(places)
        return k, record, path, value

    def bytes(self, raw_values: dict[str, str] | None = None) -> dict[str, bytes]:
        """The files with this file's records written back; `raw_values` replaces placeholder strings
        by raw JSON text (NaN, deep nesting), in JSON lines and in a CSV's JSON cells alike."""
        column = self.seed.csv_json_column
        for r in self.records:
            if "__inner__" in r:
                cell = json.dumps(r.pop("__inner__"), ensure_ascii=False)
                for marker, raw in (raw_values or {}).items():
                    cell = cell.replace(json.dumps(marker), raw)
                r[column] = cell
        files = dict(self.seed.files)
        files[self.name] = _dump(self.seed, self.name, self.records, None if _is_csv(self.name) else raw_values)
        return files

    def flat(self, k: int) -> bool:
        """Whether the last pick was a plain CSV cell (no JSON around it)."""
        return _is_csv(self.name) and "__inner__" not in self.records[k]


# --- mutation classes ----------------------------------------------------------------------------------

HOSTILE = [
    "../../../etc/passwd",
    "<script>alert(1)</script>",
    "\u202egnp.exe",
    "a" * 500,
    "",
    " ",
    "名前 🤖",
    "zoo:blender/blender_90M/model",
    "NUL\x00byte",
    "line\r\nbreak",
    "'; DROP TABLE judgments; --",
    "%s%n{0}",
]


def _same_meaning(value: Any, rnd: random.Random) -> Any:
    """Another type spelling the same value: "false" for false, "5" for 5, ["x"] for "x"..."""
    if isinstance(value, bool):
        return rnd.choice([str(value).lower(), str(value), int(value), [value]])
    if isinstance(value, int):
        return rnd.choice([str(value), float(value), [value]])
    if isinstance(value, float):
        return rnd.choice([str(value), [value]])
    if isinstance(value, str):
        return rnd.choice([[value], {"text": value}, list(value) or [""]])
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float, bool)) for v in value):
        return rnd.choice(
            [",".join(map(str, value)), "".join(map(str, value))] + ([value[0]] if len(value) == 1 else [])
        )
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):  # a list of objects as an object keyed by position
        return {str(i): v for i, v in enumerate(value)}
    return value  # null: nothing else spells it


RANGED = {  # fields with a range, where a number outside it must be refused or ignored, never stored
    "turn",
    "tstamp",
    "start_turn",
    "decision_turn",
    "elapsed_time",
    "start_time",
    "end_time",
    "WorkTimeInSeconds",
    "chosen",
}


ID_KEYS = {  # the keys that name a record of each format (without them a record is named by its line)
    "arena": ("num", "battle_id"),
    "spot-the-bot": ("_id",),
    "dialogue-eval": ("AssignmentId",),
    "parlai": ("conversation_id",),
    "openai-messages": ("id", "conversation_id"),
    "dialeval": ("id",),
    "acute-pairings": ("unit_id",),
}
MARK = "\u0001raw\u0001"  # a placeholder string replaced by raw JSON text after dumping


def _dotted(path: tuple) -> str:
    return ".".join(map(str, path))


def mutate(seed: Seed, klass: str, rnd: random.Random) -> Case:
    """One mutated case of `seed` in mutation class `klass` (see CLASSES)."""
    files = dict(seed.files)
    options = dict(seed.options)
    target = _Target(seed, rnd)
    name = target.name
    data = files[name]
    expect = Expect.ANY
    detail = name

    def case(**overrides: Any) -> Case:
        return Case(
            seed.fmt,
            klass,
            overrides.get("expect", expect),
            overrides.get("files", files),
            seed.path,
            options,
            overrides.get("detail", detail),
        )

    if klass == "truncation":
        cut = rnd.randrange(len(data))
        files[name] = data[:cut]
        return case(detail=f"{name} cut at byte {cut} of {len(data)}")
    if klass == "byte-flip":
        buf = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randrange(len(buf))
            buf[at] = rnd.choice([rnd.randrange(256), 0xFF, 0xC3, 0x80, 0x00, ord('"'), ord("{")])
        files[name] = bytes(buf)
        return case(detail=f"{name} bytes changed")
    if klass == "encoding":
        text = data.decode("utf-8")
        kind = rnd.choice(["crlf", "utf-8-bom", "utf-16", "utf-16-be", "latin-1", "latin-1 --encoding"])
        if kind == "crlf":
            files[name] = text.replace("\n", "\r\n").encode("utf-8")
            return case(expect=Expect.SAME, detail=f"{name} with CRLF line ends")
        if kind == "utf-8-bom":
            files[name] = b"\xef\xbb\xbf" + data
            return case(expect=Expect.SAME, detail=f"{name} with a UTF-8 byte-order mark")
        if kind.startswith("utf-16"):
            files[name] = text.encode(kind) if kind == "utf-16" else b"\xfe\xff" + text.encode("utf-16-be")
            return case(expect=Expect.SAME, detail=f"{name} in {kind} with a byte-order mark")
        try:
            files[name] = text.encode("latin-1")
        except UnicodeEncodeError:
            files[name] = text.encode("latin-1", "replace")
            return case(expect=Expect.ANY, detail=f"{name} in Latin-1 (characters lost)")
        if kind == "latin-1 --encoding":
            options["encoding"] = "latin-1"
            return case(expect=Expect.SAME, detail=f"{name} in Latin-1, imported with --encoding latin-1")
        ascii_only = all(b < 128 for b in data)
        return case(expect=Expect.SAME if ascii_only else Expect.ERROR, detail=f"{name} in Latin-1")
    if klass == "garbage":
        blob = bytes(rnd.randrange(256) for _ in range(rnd.choice([1, 16, 300, 5000])))
        where = rnd.choice(["whole", "insert", "append"])
        if where == "whole":
            files[name] = blob
        elif where == "insert":
            at = rnd.randrange(len(data))
            files[name] = data[:at] + blob + data[at:]
        else:
            files[name] = data + blob
        return case(detail=f"{name}: {len(blob)} random bytes ({where})")
    if klass == "deep-nesting":
        depth = rnd.choice([70, 900, 1200, 100_000])
        raw = "[" * depth + "]" * depth if rnd.random() < 0.5 else '{"a":' * depth + "1" + "}" * depth
        column = seed.csv_json_column
        if column:  # a CSV: the JSON column's cell is the nested text
            k = rnd.randrange(len(target.records))
            target.records[k][column] = raw
            return case(
                files=target.bytes(), expect=Expect.ERROR, detail=f"{name} row {k} {column} nested {depth} deep"
            )
        k, container, path, _ = target.pick()
        _set(container, path, MARK)
        return case(
            files=target.bytes({MARK: raw}),
            expect=Expect.ERROR,
            detail=f"{name} record {k} {_dotted(path)} nested {depth} deep",
        )
    if klass == "nan-infinity":
        k, container, path, value = target.pick()
        raw = rnd.choice(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
        if target.flat(k):
            _set(container, path, raw.lower().replace("infinity", "inf"))
            expect_here = Expect.SAME_OR_ERROR if path[-1] in RANGED else Expect.ANY
            return case(files=target.bytes(), expect=expect_here, detail=f"{name} row {k} {path[-1]} = {raw}")
        _set(container, path, MARK)
        return case(
            files=target.bytes({MARK: raw}), expect=Expect.ERROR, detail=f"{name} record {k} {_dotted(path)} = {raw}"
        )
    if klass == "out-of-range":
        ranged = [
            (k, p)
            for k, r in enumerate(target.records)
            for p, v in (_leaves(r) if not _is_csv(name) else (((c,), x) for c, x in r.items()))
            if p and p[-1] in RANGED and v not in (None, "")
        ]
        if not ranged:
            return mutate(seed, "nan-infinity", rnd)
        k, path = rnd.choice(ranged)
        # (-1 is Spot The Bot's own mark of a start time its clock missed: a value, not out of range)
        bad = rnd.choice(
            ["-2" if path[-1] == "start_time" else "-1", "-1" + "0" * 30, "1" + "0" * 30, "1" + "0" * 5000]
        )  # 10**5000: past int()'s limit
        shown = bad if len(bad) < 40 else f"{bad[:10]}... ({len(bad)} digits)"
        if _is_csv(name):
            _set(target.records[k], path, bad)
            return case(
                files=target.bytes(), expect=Expect.SAME_OR_ERROR, detail=f"{name} row {k} {path[-1]} = {shown}"
            )
        _set(target.records[k], path, MARK)
        return case(
            files=target.bytes({MARK: bad}),
            expect=Expect.SAME_OR_ERROR,
            detail=f"{name} record {k} {_dotted(path)} = {shown}",
        )
    if klass == "type-swap":
        k, container, path, value = target.pick()
        if target.flat(k):
            return mutate(seed, "hostile-names", rnd)
        other = _same_meaning(value, rnd)
        _set(container, path, other)
        change = f"{json.dumps(value)[:30]} -> {json.dumps(other)[:30]}"
        return case(
            files=target.bytes(), expect=Expect.SAME_OR_ERROR, detail=f"{name} record {k} {_dotted(path)}: {change}"
        )
    if klass == "missing-field":
        k, container, path, _ = target.pick()
        if target.flat(k):
            _set(container, path, "")
        elif rnd.random() < 0.5:
            _delete(container, path)
        else:
            _set(container, path, None)
        return case(files=target.bytes(), detail=f"{name} record {k} without {_dotted(path)}")
    if klass == "unknown-field":
        if _is_csv(name):
            return mutate(seed, "missing-field", rnd)
        k = rnd.randrange(len(target.records))
        key = "x_unknown_" + "".join(rnd.choice(string.ascii_lowercase) for _ in range(5))
        target.records[k][key] = rnd.choice([1, "text", None, [1, 2], {"a": True}, False])
        return case(files=target.bytes(), expect=Expect.SAME, detail=f"{name} record {k} with {key}")
    if klass == "duplicate-line":
        k = rnd.randrange(len(target.records))
        # at the end: records whose id is their line number keep it
        record = target.records[k]
        target.records.append(json.loads(json.dumps(record)))
        # a record with an id is the same record again (read once); without one, a new record
        has_id = any(record.get(key) not in (None, "") for key in ID_KEYS[seed.fmt])
        expect_here = Expect.SAME if has_id else Expect.SAME_OR_MORE
        return case(files=target.bytes(), expect=expect_here, detail=f"{name} record {k} twice")
    if klass == "id-reuse":
        k = rnd.randrange(len(target.records))
        copy = json.loads(json.dumps(target.records[k]))
        texts = [
            (p, v)
            for p, v in (_leaves(copy) if not _is_csv(name) else (((c,), x) for c, x in copy.items()))
            if isinstance(v, str)
            and len(v) > 2
            and p[-1] not in ("_id", "$oid", "AssignmentId", "convo_id", "package_id", "conversation_id", "id")
        ]
        if not texts:
            return mutate(seed, "duplicate-line", rnd)
        path, value = rnd.choice(texts)
        _set(copy, path, value + " (other)")
        target.records.append(copy)
        return case(
            files=target.bytes(),
            expect=Expect.MORE_OR_ERROR,
            detail=f"{name} record {k} again with other {_dotted(path)}",
        )
    if klass == "huge":
        k, container, path, value = target.pick()
        size = rnd.choice([25_000, 200_000, 5_000_000])
        _set(container, path, "x" * size)
        return case(files=target.bytes(), detail=f"{name} record {k} {_dotted(path)} of {size:,} characters")
    if klass == "hostile-names":
        k, container, path, value = target.pick()
        _set(container, path, rnd.choice(HOSTILE))
        return case(files=target.bytes(), detail=f"{name} record {k} {_dotted(path)} hostile")
    raise ValueError(klass)


CLASSES = (
    "truncation",
    "byte-flip",
    "encoding",
    "garbage",
    "deep-nesting",
    "nan-infinity",
    "out-of-range",
    "type-swap",
    "missing-field",
    "unknown-field",
    "duplicate-line",
    "id-reuse",
    "huge",
    "hostile-names",
)


# --- running and judging ---------------------------------------------------------------------------------

UNIT_PAYLOAD_KEYS = ("speakers_to_eval", "is_onboarding", "correct_answer", "segments", "systems")


def semantic(dataset: Any) -> tuple:
    """What an import means, leaving out what a reader keeps as it found it (meta, extra keys)."""

    def j(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    conversations = sorted(
        (
            c.id,
            tuple(c.bots),
            tuple((t.speaker, t.text, t.bot, t.is_seed, j(t.candidates), t.chosen) for t in c.turns),
            c.source,
            c.error,
        )
        for c in dataset.conversations
    )
    units = sorted(
        (u.id, u.kind, tuple(u.conversation_ids), j({k: v for k, v in u.payload.items() if k in UNIT_PAYLOAD_KEYS}))
        for u in dataset.units
    )
    judgments = sorted(
        j([x.annotator_id, x.unit_id, x.question, x.value, x.conversation_id, x.elapsed_s, x.created_at, x.shown_order])
        for x in dataset.judgments
    )
    return tuple(conversations), tuple(units), tuple(sorted(a.id for a in dataset.annotators)), tuple(judgments)


def size(view: tuple) -> int:
    return len(view[0]) + len(view[1]) + len(view[3])


def well_typed(dataset: Any) -> str | None:
    """What is wrong with the records of a successful import (None: nothing)."""
    conversations = {c.id: c for c in dataset.conversations}
    for c in dataset.conversations:
        if not (
            isinstance(c.id, str) and c.id and isinstance(c.bots, list) and all(isinstance(b, str) for b in c.bots)
        ):
            return f"conversation {c.id!r}: id or bots of the wrong type"
        for t in c.turns:
            if not (isinstance(t.text, str) and isinstance(t.speaker, str) and isinstance(t.is_seed, bool)):
                return f"conversation {c.id!r}: a turn of the wrong type {t!r:.80}"
            if t.bot is not None and not isinstance(t.bot, str):
                return f"conversation {c.id!r}: bot {t.bot!r}"
    for u in dataset.units:
        for s in u.payload.get("segments", []):
            turns = len(conversations[s["conversation_id"]].turns)
            if not (isinstance(s["start_turn"], int) and 0 <= s["start_turn"] <= max(turns - 1, 0)):
                return f"unit {u.id}: start_turn {s['start_turn']!r} outside its conversation"
        if not isinstance(u.payload.get("is_onboarding", False), bool):
            return f"unit {u.id}: is_onboarding {u.payload['is_onboarding']!r}"
    for x in dataset.judgments:
        if x.elapsed_s is not None and not (
            isinstance(x.elapsed_s, float) and math.isfinite(x.elapsed_s) and x.elapsed_s >= 0
        ):
            return f"a duration of {x.elapsed_s!r}"
        v = x.value
        if dataset.method == "spot-the-bot":
            if v["entity0"] not in ("human", "bot", "unsure") or v["entity1"] not in ("human", "bot", "unsure"):
                return f"labels {v['entity0']!r}/{v['entity1']!r}"
            for feature in ("fluency", "sensibleness", "specificity"):
                if v[feature] not in (0, 1, "tie", None) or isinstance(v[feature], bool):
                    return f"{feature} {v[feature]!r}"
            for e in (0, 1):
                d = v[f"decision_turn{e}"]
                if d is not None and not (isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 10_000):
                    return f"decision_turn {d!r}"
        if dataset.method == "arena":
            if v["winner"] not in ("model_a", "model_b", "tie", "tie (bothbad)"):
                return f"winner {v['winner']!r}"
            if "turn" in v and not (isinstance(v["turn"], int) and not isinstance(v["turn"], bool) and v["turn"] >= 1):
                return f"turn {v['turn']!r}"
            if x.created_at is not None and x.created_at.year > 9999:
                return "a timestamp out of range"
        if dataset.method == "direct-assessment":
            if not all(isinstance(s, float) and math.isfinite(s) and 0 <= s <= 100 for s in v.values()):
                return f"ratings {v!r:.80}"
    return None


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """TimeoutError after `seconds` (SIGALRM; main thread only, elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def write_case(case: Case, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (folder / name).write_bytes(data)
    return folder / case.path if case.path != "." else folder


def read(fmt: str, path: Path, options: dict[str, Any]) -> Any:
    """The Dataset `dialeval import` would store (reader, renames, text limits, checks)."""
    from dialeval.formats.names import make_names_safe
    from dialeval.importing import read_import
    from dialeval.textclean import import_text_limit_of

    try:
        from dialeval.formats.reading import session
    except ImportError:  # dialeval before the reading layer (to measure what it missed)
        from contextlib import nullcontext as session  # type: ignore[assignment]

    with session(options.get("encoding")), import_text_limit_of(None):
        dataset = read_import(fmt, path, options.get("domain"), {}, None)
    make_names_safe(dataset)
    return dataset


@dataclass
class Outcome:
    verdict: str  # ok | traceback | bug | hang | silently-wrong | refused
    detail: str = ""


def judge_case(case: Case, folder: Path, original: tuple | None, store: bool = False) -> Outcome:
    """Run one case (in-process; `store`: the whole import command, SQLite included) and judge it."""
    from dialeval.errors import DialevalError

    path = write_case(case, folder / "in")
    error = None
    try:
        with time_limit(TIME_LIMIT_S):
            if store:
                error = _run_command(case, path, folder / "study")
                if error is not None and error.startswith("BUG"):
                    return Outcome("bug", error)
                if error is not None and error.startswith("TRACEBACK"):
                    return Outcome("traceback", error)
            dataset = read(case.fmt, path, case.options)
    except TimeoutError:
        return Outcome("hang", case.detail)
    except (DialevalError, OSError) as exc:
        message = str(exc)
        if "\n" in message.strip() or not any(part in message for part in (path.name, str(path), "--encoding")):
            return Outcome("traceback", f"unclear message: {message[:200]}")
        if case.expect in (Expect.SAME, Expect.SAME_OR_MORE):
            return Outcome("refused", f"{case.detail}: {message[:200]}")
        return Outcome("ok", message[:200])
    except Exception as exc:  # the failure this harness exists to find
        return Outcome("traceback", f"{type(exc).__name__}: {str(exc)[:200]}")
    if error is not None:  # the reader took it, the command (storing it) did not
        return Outcome("refused", f"{case.detail}: the command said {error[:200]}")
    problem = well_typed(dataset)
    if problem:
        return Outcome("silently-wrong", f"{case.detail}: {problem}")
    view = semantic(dataset)
    if original is not None:
        if case.expect is Expect.ERROR:
            return Outcome("silently-wrong", f"{case.detail}: imported, expected an error")
        if case.expect in (Expect.SAME, Expect.SAME_OR_ERROR) and view != original:
            return Outcome("silently-wrong", f"{case.detail}: imported other records")
        if case.expect is Expect.SAME_OR_MORE and view != original and size(view) <= size(original):
            return Outcome("silently-wrong", f"{case.detail}: {size(view)} records from {size(original)} and a repeat")
        if case.expect is Expect.MORE_OR_ERROR and size(view) <= size(original):
            return Outcome("silently-wrong", f"{case.detail}: a record with a reused id dropped")
    return Outcome("ok")


def _run_command(case: Case, path: Path, study: Path) -> str | None:
    """`dialeval import` in-process (typer's runner): None on exit 0, the error line on exit 2,
    'BUG ...' on exit 1, 'TRACEBACK ...' on an exception that escaped."""
    from typer.testing import CliRunner

    from dialeval.cli import app

    args = ["import", case.fmt, str(path), str(study)]
    if case.options.get("domain"):
        args += ["--domain", case.options["domain"]]
    if case.options.get("encoding"):
        args += ["--encoding", case.options["encoding"]]
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"TRACEBACK {type(result.exception).__name__}: {str(result.exception)[:200]}"
    if result.exit_code == 1:
        return f"BUG {result.output.strip()[:300]}"
    if "Traceback" in result.output:
        return f"TRACEBACK {result.output[-300:]}"
    return None if result.exit_code == 0 else result.output.strip()


def original_view(seed: Seed, folder: Path) -> tuple:
    path = write_case(Case(seed.fmt, "seed", Expect.SAME, seed.files, seed.path, seed.options), folder)
    return semantic(read(seed.fmt, path, seed.options))


Runner = Callable[[Case, Path], Outcome]
