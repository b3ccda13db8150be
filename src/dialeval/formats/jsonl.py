"""dialeval's own conversation JSONL: one Conversation per line, nothing lost (bots, seed turns, errors)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..records import Conversation, Turn
from .reading import Record, UniqueIds, json_lines


def conversation_to_dict(c: Conversation) -> dict:
    return asdict(c)


def _turn(t: Record) -> Turn:
    candidates = t.array("candidates", None)
    if candidates is not None and not all(isinstance(c, dict) for c in candidates):
        raise t.error("expected a list of objects {bot, text}", "candidates")
    return Turn(
        speaker=t.text("speaker", empty=False),
        text=t.text("text"),
        bot=t.text("bot", None),
        is_seed=t.boolean("is_seed", False),
        candidates=candidates,
        chosen=t.integer("chosen", None, minimum=0),
        meta=dict(t.record("meta", {})),
    )


def conversation_from_record(d: Record) -> Conversation:
    """One line of dialeval JSONL, every field read by its type (formats/reading.py)."""
    return Conversation(
        id=d.ident("id"),
        bots=d.texts("bots", []),
        turns=[_turn(t) for t in d.records("turns")],
        source=d.text("source", "import", empty=False),
        meta=dict(d.record("meta", {})),
        error=d.text("error", None),
    )


def conversation_from_dict(d: dict, path: str = "<data>", line: int | None = None) -> Conversation:
    return conversation_from_record(Record(d, path, line))


def read_conversations_jsonl(path: str | Path) -> list[Conversation]:
    """Conversations of a dialeval JSONL file; a conversation id used twice for other content is an
    error naming both lines (an exact repeat is read once)."""
    out = []
    ids = UniqueIds(path, "conversation id", "id")
    for record in json_lines(path):
        conversation = conversation_from_record(record)
        if ids.add(conversation.id, record.line, record.data):
            out.append(conversation)
    ids.finish()
    return out


def append_conversation_jsonl(path: str | Path, conversation: Conversation) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(conversation_to_dict(conversation), ensure_ascii=False) + "\n")
