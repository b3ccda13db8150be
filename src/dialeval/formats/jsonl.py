"""dialeval's own conversation JSONL: one Conversation per line, nothing lost (bots, seed turns, errors)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..errors import ImportFormatError
from ..records import Conversation, Turn


def conversation_to_dict(c: Conversation) -> dict:
    return asdict(c)


def conversation_from_dict(d: dict, path: str = "<data>", line: int | None = None) -> Conversation:
    for key in ("id", "turns"):
        if key not in d:
            raise ImportFormatError(path, "missing field", line=line, field=key)
    turns = []
    for i, t in enumerate(d["turns"]):
        if not isinstance(t, dict) or "speaker" not in t or "text" not in t:
            raise ImportFormatError(path, "each turn needs 'speaker' and 'text'", line=line, field=f"turns[{i}]")
        turns.append(Turn(**{k: v for k, v in t.items() if k in Turn.__dataclass_fields__}))
    return Conversation(
        id=str(d["id"]),
        bots=list(d.get("bots", [])),
        turns=turns,
        source=d.get("source", "import"),
        meta=d.get("meta", {}),
        error=d.get("error"),
    )


def read_conversations_jsonl(path: str | Path) -> list[Conversation]:
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(str(path), f"not JSON: {exc.msg}", line=n) from None
            out.append(conversation_from_dict(d, str(path), n))
    return out


def append_conversation_jsonl(path: str | Path, conversation: Conversation) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(conversation_to_dict(conversation), ensure_ascii=False) + "\n")
