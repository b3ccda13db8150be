"""Readers and writers of outside formats, and the one registry of them (`dialeval import` reads it).

The registry names each format and points at its reader as ``"module:function"``; modules are
imported only when a reader is asked for, so a format with heavy or optional dependencies costs
nothing until it is used. To add a format, add one entry to ``IMPORTERS`` (an outside package: an
entry point in the group ``dialeval.formats``, see docs/methods.md) and
name it in its method's ``Method.importers`` (dialeval.methods): that says which method the data
set is for. A conversations-only format (``conversations=True``) is listed by the method a plain
``dialeval import`` gives it; ``--method`` chooses another.

A reader takes a path (plus keyword options) and returns either a ``Dataset`` or a list of
``Conversation``; :func:`load` turns either into a ``Dataset``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from dialeval.errors import DialevalError, ImportFormatError
from dialeval.records import Conversation, Dataset


@dataclass(frozen=True)
class ImportFormat:
    """One input format of `dialeval import`."""

    reader: str  # "module:function": (path, **keywords) -> Dataset, or a list of Conversation
    conversations: bool = False  # the reader yields conversations only (no judgments): wrapped in a Dataset
    # `dialeval import` options the reader takes: option name -> the reader's keyword ("" = positional)
    options: dict[str, str] = field(default_factory=dict)
    required: dict[str, str] = field(default_factory=dict)  # option -> the error when it is missing
    # "module:function": path -> an iterator of (Annotator, Judgment, [Conversation]) in file order,
    # raising ImportFormatError when there is nothing; `dialeval import` then stores records as they
    # are read (importing._stream_import) when no option asks for the whole file ("" = never streamed)
    stream: str = ""
    # "module:function": path -> an iterable of RecordBatch (records of every kind, a batch at a
    # time, texts cleaned as clean_dataset would) with a meta() of the Dataset once iterated;
    # `dialeval import` stores each batch as it is read (Store.save_batches), like `stream`
    batches: str = ""
    help: str = ""  # set: the format's options are its own (what they are for, in the error for other formats)


# Format names are the names of the data sets' projects (the Spot The Bot and Chatbot Arena releases).
IMPORTERS: dict[str, ImportFormat] = {
    "dialogue-eval": ImportFormat(
        "dialeval.formats.dialogue_eval:read_dialogue_eval_csv",
        batches="dialeval.formats.dialogue_eval:DialogueEvalStream",
    ),
    "spot-the-bot": ImportFormat(
        "dialeval.formats.spot_the_bot:read_spot_the_bot",
        options={"domain": "", "renames": "rename", "paper_names": "use_paper_names"},
        required={"domain": "spot-the-bot imports need --domain (dailydialog, empathetic or convai2)"},
    ),
    "parlai": ImportFormat("dialeval.formats.parlai:read_parlai_conversations", conversations=True),
    "acute-pairings": ImportFormat("dialeval.formats.acute_pairings:read_acute_pairings"),
    "openai-messages": ImportFormat("dialeval.formats.openai_messages:read_openai_messages", conversations=True),
    "dialeval": ImportFormat("dialeval.formats.jsonl:read_conversations_jsonl", conversations=True),
    "arena": ImportFormat(
        "dialeval.formats.arena:read_arena_battles",
        options={"judges": "judge_files"},
        stream="dialeval.formats.arena:stream_battles",
        help="judges' verdicts on the same battles",
    ),
}

READERS: dict[str, str] = {name: entry.reader for name, entry in IMPORTERS.items()}

FORMAT_ENTRY_POINT_GROUP = "dialeval.formats"


@cache
def importers() -> dict[str, ImportFormat]:
    """Every import format: dialeval's own (IMPORTERS), then those outside packages register through
    the entry-point group ``dialeval.formats`` (each entry point's value is an ImportFormat)."""
    from importlib.metadata import entry_points

    found = dict(IMPORTERS)
    for entry in entry_points(group=FORMAT_ENTRY_POINT_GROUP):
        value = entry.load()
        if not isinstance(value, ImportFormat):
            group = FORMAT_ENTRY_POINT_GROUP
            raise DialevalError(f"entry point '{entry.name}' of group {group} is not an ImportFormat")
        found.setdefault(entry.name, value)
    return found


WRITERS: dict[str, str] = {
    "parlai": "dialeval.formats.parlai:write_parlai_conversations",
    "acute-pairings": "dialeval.formats.acute_pairings:write_acute_pairings",
    "openai-messages": "dialeval.formats.openai_messages:write_openai_messages",
    "judgments": "dialeval.formats.tidy:export_judgments",
}


def _resolve(kind: str, table: dict[str, str], name: str) -> Callable[..., Any]:
    try:
        spec = table[name]
    except KeyError:
        known = ", ".join(sorted(table))
        raise DialevalError(f"unknown {kind} format '{name}'; known formats: {known}") from None
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def reader(name: str) -> Callable[..., Any]:
    """The reader function of format `name` (imported on demand). Unknown names raise DialevalError."""
    return _resolve("input", {n: entry.reader for n, entry in importers().items()}, name)


def streamer(name: str) -> Callable[..., Any]:
    """The streamed reader of format `name` (ImportFormat.stream)."""
    return _resolve("streamed input", {n: e.stream for n, e in importers().items() if e.stream}, name)


def batch_reader(name: str) -> Callable[..., Any]:
    """The batch reader of format `name` (ImportFormat.batches)."""
    return _resolve("batched input", {n: e.batches for n, e in importers().items() if e.batches}, name)


def writer(name: str) -> Callable[..., Any]:
    """The writer function of format `name` (imported on demand). Unknown names raise DialevalError."""
    return _resolve("output", WRITERS, name)


def format_method(name: str) -> str:
    """The method whose Dataset format `name` yields (the method listing it in Method.importers)."""
    from ..registry import all_methods

    for method in all_methods().values():
        if name in method.importers:
            return method.id
    raise DialevalError(f"no method lists the import format '{name}' in its importers")


def import_dataset(name: str, path: str | Path, method: str | None = None, **options: Any) -> Dataset:
    """Read `path` in import format `name` for `dialeval import`: `options` are the command's
    (domain, renames, paper_names, judges); those the format does not take must be empty, those it
    requires must be given. Conversations-only formats become a Dataset of `method` (default: the
    method listing the format). Systems are renamed (`renames`) unless the reader does it itself."""
    known = importers()
    if name not in known:
        raise DialevalError(f"unknown import format '{name}'; choose one of: {', '.join(known)}")
    entry = known[name]
    for option, value in options.items():
        # an option that only its format understands (a format with `help` for it) is refused elsewhere
        owners = [n for n, e in known.items() if option in e.options and e.help]
        if value and owners and name not in owners:
            raise DialevalError(f"--{option} belongs to {' and '.join(owners)} imports ({known[owners[0]].help})")
    for option, message in entry.required.items():
        if not options.get(option):
            raise DialevalError(message)
    positional = [options.get(o) for o, keyword in entry.options.items() if not keyword]
    keywords = {keyword: options.get(o) for o, keyword in entry.options.items() if keyword}
    result = reader(name)(path, *positional, **keywords)
    if entry.conversations:
        result = Dataset(method=method or format_method(name), conversations=list(result))
    check_records(result, path)
    renames = options.get("renames")
    if renames and "renames" not in entry.options:
        from .rename import rename_systems

        rename_systems(result, renames)
    return result


# column widths of the store (store/schema.py): longer values would fail mid-transaction on PostgreSQL
_ID_CHARS, LABEL_CHARS = 200, 40


def check_records(dataset: Dataset, path: str | Path) -> None:
    """Before anything is written: ids unique per kind (each reader names both lines of a repeat;
    this also guards readers from other packages) and short enough for the store."""
    where = str(path)
    for kind, items in (("conversation", dataset.conversations), ("unit", dataset.units)):
        seen: set[str] = set()
        for item in items:
            check_id(kind, item.id, where)
            if item.id in seen:
                raise ImportFormatError(where, f"{kind} id {item.id!r} appears twice; ids must be unique")
            seen.add(item.id)
    for c in dataset.conversations:
        check_conversation(c, where)
    annotators: set[str] = set()
    for a in dataset.annotators:
        check_annotator(a.id, where, annotators)
        annotators.add(a.id)
    for j in dataset.judgments:
        check_question(j.question, where)


# one check per kind of record, shared with the streamed import (cli: _stream_arena)
def check_id(kind: str, ident: Any, where: str) -> None:
    if not isinstance(ident, str) or not ident or len(ident) > _ID_CHARS:
        shown = str(ident)[:60]
        raise ImportFormatError(where, f"{kind} id {shown!r}... must be 1 to {_ID_CHARS} characters")


def check_conversation(c: Conversation, where: str) -> None:
    if len(c.source) > LABEL_CHARS or any(len(t.speaker) > LABEL_CHARS for t in c.turns):
        too_long = f"a source or speaker longer than {LABEL_CHARS} characters"
        raise ImportFormatError(where, f"conversation {c.id!r}: {too_long}")


def check_annotator(ident: str, where: str, seen: set[str] | dict[str, Any]) -> None:
    if not ident or len(ident) > _ID_CHARS or ident in seen:
        problem = f"is empty, longer than {_ID_CHARS} characters or repeated"
        raise ImportFormatError(where, f"annotator id {ident[:60]!r} {problem}")


def check_question(question: str, where: str) -> None:
    if len(question) > 100:
        raise ImportFormatError(where, f"a question name longer than 100 characters: {question[:60]!r}...")


def load(name: str, path: str | Path, *, method: str = "conversations", **options: Any) -> Dataset:
    """Read `path` in format `name` and always return a Dataset.

    Readers that return only conversations are wrapped in ``Dataset(method=method)``; readers that
    return a Dataset are passed through unchanged (`method` is then ignored).
    """
    result = reader(name)(path, **options)
    if isinstance(result, Dataset):
        return result
    conversations: list[Conversation] = list(result)
    return Dataset(method=method, conversations=conversations, meta={"format": name, "path": str(path)})


# --- helpers shared by the JSONL formats -------------------------------------------------------


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line number, object) for each non-blank line of a JSONL file, read through the
    reading layer (formats/reading.py: decoding, depth and number limits, texts cleaned); a line that
    is not one JSON object raises ImportFormatError naming the file and line."""
    from .reading import json_lines

    for record in json_lines(path):
        yield record.line or 0, dict(record.data)


def dump_json_line(obj: Any) -> str:
    """One JSON line; values JSON cannot hold (datetimes, sets...) are written as strings."""
    return json.dumps(obj, ensure_ascii=False, default=str) + "\n"
