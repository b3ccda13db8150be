"""Readers and writers of outside formats, and a small registry of them.

The registry names each format and points at its reader as ``"module:function"``; modules are
imported only when a reader is asked for, so a format with heavy or optional dependencies costs
nothing until it is used. To add a format, add one entry to ``READERS`` (and ``WRITERS``).

A reader takes a path (plus keyword options) and returns either a ``Dataset`` or a list of
``Conversation``; :func:`load` turns either into a ``Dataset``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dialeval.errors import DialevalError, ImportFormatError
from dialeval.records import Conversation, Dataset
from dialeval.textclean import clean_imported

READERS: dict[str, str] = {
    "parlai": "dialeval.formats.parlai:read_parlai_conversations",
    "acute-pairings": "dialeval.formats.acute_pairings:read_acute_pairings",
    "openai-messages": "dialeval.formats.openai_messages:read_openai_messages",
    # the lead adds, once those modules exist:
    "dialogue-eval": "dialeval.formats.dialogue_eval:read_dialogue_eval_csv",
    "spot-the-bot": "dialeval.formats.spot_the_bot:read_spot_the_bot",
    "arena": "dialeval.formats.arena:read_arena_battles",
}

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
    return _resolve("input", READERS, name)


def writer(name: str) -> Callable[..., Any]:
    """The writer function of format `name` (imported on demand). Unknown names raise DialevalError."""
    return _resolve("output", WRITERS, name)


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
