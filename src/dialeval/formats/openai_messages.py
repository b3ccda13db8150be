"""OpenAI-style chat logs, JSONL, one conversation a line::

    {"messages": [{"role": "system", "content": "You are ..."},
                  {"role": "user", "content": "Hi!"},
                  {"role": "assistant", "content": "Hello, how are you?"}],
     "model": "my-bot", "id": "conv-1", ...any other metadata}

``user`` messages are the human (speaker ``human``), ``assistant`` messages the bot (speaker ``bot``),
named by the line's ``model`` or ``bot`` key or by the reader's `default_bot`; an assistant message's
own ``name`` wins over both. ``system``/``developer`` messages are not turns: their text is kept in
``conversation.meta["system"]`` (a string; several are joined by a blank line). ``content`` may be a
string or a list of parts ``[{"type": "text", "text": ...}]`` (text parts are joined). Other keys of
the line go into ``conversation.meta``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats import dump_json_line, iter_jsonl
from dialeval.records import Conversation, Turn

SYSTEM_ROLES = ("system", "developer")
_LINE_KEYS = ("messages", "id", "conversation_id", "model", "bot", "bots", "source")


def _content(path: Path, number: int, where: str, content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                texts.append(str(part.get("text", "")))
        return "".join(texts)
    raise ImportFormatError(
        str(path), "must be a string or a list of text parts", line=number, field=f"{where}.content"
    )


def read_openai_messages(path: str | Path, *, default_bot: str = "bot") -> list[Conversation]:
    """Read OpenAI-messages JSONL into conversations (one per line).

    Conversation ids: the line's ``id`` or ``conversation_id``, else ``<stem>-<line>``. Unknown roles
    (``tool``...) and messages without content raise ImportFormatError naming line and field.
    """
    path = Path(path)
    conversations: list[Conversation] = []
    for number, line in iter_jsonl(path):
        if "messages" not in line:
            raise ImportFormatError(str(path), "missing the conversation's messages", line=number, field="messages")
        messages = line["messages"]
        if not isinstance(messages, list):
            raise ImportFormatError(str(path), "must be a list of {role, content}", line=number, field="messages")
        default = str(line.get("model") or line.get("bot") or default_bot)
        system: list[str] = []
        turns: list[Turn] = []
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(message, dict):
                raise ImportFormatError(str(path), "a message must be a JSON object", line=number, field=where)
            for key in ("role", "content"):
                if key not in message:
                    raise ImportFormatError(
                        str(path), f"the message has no '{key}'", line=number, field=f"{where}.{key}"
                    )
            role = message["role"]
            text = _content(path, number, where, message["content"])
            extra = {k: v for k, v in message.items() if k not in ("role", "content", "name")}
            if role in SYSTEM_ROLES:
                system.append(text)
            elif role == "user":
                turn_meta = dict(extra)
                if message.get("name"):
                    turn_meta["name"] = message["name"]
                turns.append(Turn(speaker="human", text=text, meta=turn_meta))
            elif role == "assistant":
                turns.append(Turn(speaker="bot", text=text, bot=str(message.get("name") or default), meta=extra))
            else:
                raise ImportFormatError(
                    str(path),
                    f"unsupported role '{role}'; expected system, developer, user or assistant",
                    line=number,
                    field=f"{where}.role",
                )
        bots = line.get("bots")
        if not isinstance(bots, list):
            bots = []
            for turn in turns:
                if turn.bot is not None and turn.bot not in bots:
                    bots.append(turn.bot)
            if not bots:
                bots = [default]
        meta: dict[str, Any] = {k: v for k, v in line.items() if k not in _LINE_KEYS}
        if system:
            meta["system"] = "\n\n".join(system)
        conv_id = line.get("id", line.get("conversation_id", f"{path.stem}-{number}"))
        conversations.append(
            Conversation(
                id=str(conv_id),
                bots=[str(b) for b in bots],
                turns=turns,
                source=str(line.get("source") or "import"),
                meta=meta,
            )
        )
    return conversations


def write_openai_messages(conversations: Iterable[Conversation], path: str | Path) -> Path:
    """Write conversations as OpenAI-messages JSONL (one per line); returns the path.

    The human side becomes ``user``, every other speaker ``assistant``. A conversation with more than
    one bot (bot-bot) names each assistant message with ``name``. ``meta["system"]`` becomes the
    leading system message; the other meta keys are written beside ``messages``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for conversation in conversations:
            messages: list[dict[str, Any]] = []
            if conversation.meta.get("system"):
                messages.append({"role": "system", "content": str(conversation.meta["system"])})
            single = conversation.bots[0] if len(conversation.bots) == 1 else None
            for turn in conversation.turns:
                message: dict[str, Any]
                if turn.speaker == "human":
                    message = {"role": "user", "content": turn.text}
                    if turn.meta.get("name"):
                        message["name"] = turn.meta["name"]
                    message.update({k: v for k, v in turn.meta.items() if k not in ("role", "content", "name")})
                else:
                    message = {"role": "assistant", "content": turn.text}
                    name = turn.bot or turn.speaker
                    if name != single:
                        message["name"] = name
                    message.update({k: v for k, v in turn.meta.items() if k not in ("role", "content", "name")})
                messages.append(message)
            line: dict[str, Any] = {"id": conversation.id, "messages": messages}
            if single is not None:
                line["model"] = single
            line["bots"] = list(conversation.bots)
            line["source"] = conversation.source
            line.update({k: v for k, v in conversation.meta.items() if k != "system" and k not in _LINE_KEYS})
            handle.write(dump_json_line(line))
    return path
