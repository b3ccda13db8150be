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
from dialeval.textclean import clean_imported


@dataclass(frozen=True)
class ImportFormat:
    """One input format of `dialeval import`."""

    reader: str  # "module:function": (path, **keywords) -> Dataset, or a list of Conversation
    conversations: bool = False  # the reader yields conversations only (no judgments): wrapped in a Dataset
    # `dialeval import` options the reader takes: option name -> the reader's keyword ("" = positional)
    options: dict[str, str] = field(default_factory=dict)
    required: dict[str, str] = field(default_factory=dict)  # option -> the error when it is missing
    help: str = ""  # set: the format's options are its own (what they are for, in the error for other formats)


# Format names are the names of the data sets' projects (the Spot The Bot and Chatbot Arena releases).
IMPORTERS: dict[str, ImportFormat] = {
    "dialogue-eval": ImportFormat("dialeval.formats.dialogue_eval:read_dialogue_eval_csv"),
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


def writer(name: str) -> Callable[..., Any]:
    """The writer function of format `name` (imported on demand). Unknown names raise DialevalError."""
    return _resolve("output", WRITERS, name)


def format_method(name: str) -> str:
    """The method whose Dataset format `name` yields (the method listing it in Method.importers)."""
    from ..methods import all_methods

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
    renames = options.get("renames")
    if renames and "renames" not in entry.options:
        from .rename import rename_systems

        rename_systems(result, renames)
    return result


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
    """Yield (1-based line number, object) for each non-blank line of a JSONL file.

    A missing file, a line that is not JSON, or a line that is not a JSON object raises
    ImportFormatError naming the file and line.
    """
    path = Path(path)
    if not path.exists():
        raise ImportFormatError(str(path), "file not found; check the path")
    with path.open("r", encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(
                    str(path),
                    f"not valid JSON ({exc.msg} at column {exc.colno}); each line must be one JSON object",
                    line=number,
                ) from None
            if not isinstance(obj, dict):
                raise ImportFormatError(str(path), f"expected a JSON object, found {type(obj).__name__}", line=number)
            # control characters out, oversized texts refused naming this line (textclean.py)
            yield number, clean_imported(obj, str(path), number)


def dump_json_line(obj: Any) -> str:
    """One JSON line; values JSON cannot hold (datetimes, sets...) are written as strings."""
    return json.dumps(obj, ensure_ascii=False, default=str) + "\n"
