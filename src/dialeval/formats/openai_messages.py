"""OpenAI-style chat logs, JSONL, one conversation a line::

    {"messages": [{"role": "system", "content": "You are ..."},
                  {"role": "user", "content": "Hi!"},
                  {"role": "assistant", "content": "Hello, how are you?"}],
     "model": "my-bot", "id": "conv-1", ...any other metadata}

``user`` messages are the human (speaker ``human``), ``assistant`` messages the bot (speaker ``bot``),
named by the line's ``model`` or ``bot`` key or by the reader's `default_bot`; an assistant message's
own ``name`` wins over both. ``system``/``developer`` messages are not turns: their text is kept in
``conversation.meta["system"]`` (a string; several are joined by a blank line). ``content`` may be a
string or a list of parts ``[{"type": "text", "text": ...}]`` (text parts are joined; parts of other
types, such as images, are left out; a part that is neither text nor a typed object is an error).
Other keys of the line go into ``conversation.meta``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dialeval.formats import dump_json_line
from dialeval.formats.reading import Record, UniqueIds, json_lines, type_name
from dialeval.records import Conversation, Turn

SYSTEM_ROLES = ("system", "developer")
_LINE_KEYS = ("messages", "id", "conversation_id", "model", "bot", "bots", "source")


def _content(message: Record) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for k, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
            elif not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise message.error(
                    f"a part must be text or an object with a type, found {type_name(part)}", f"content[{k}]"
                )
            elif part["type"] in ("text", "input_text", "output_text"):
                text = part.get("text", "")
                if not isinstance(text, str):
                    raise message.error(f"expected text, found {type_name(text)}", f"content[{k}].text")
                texts.append(text)
            # other parts (images, audio) have no text to show annotators: left out
        return "".join(texts)
    raise message.error(f"must be a string or a list of text parts, found {type_name(content)}", "content")


def read_openai_messages(path: str | Path, *, default_bot: str = "bot") -> list[Conversation]:
    """Read OpenAI-messages JSONL into conversations (one per line).

    Conversation ids: the line's ``id`` or ``conversation_id``, else ``<stem>-<line>``; an id used
    twice for other content is an error naming both lines (an exact repeat is read once). Unknown
    roles (``tool``...), messages without content and fields of the wrong type raise
    ImportFormatError naming line and field.
    """
    path = Path(path)
    conversations: list[Conversation] = []
    ids = UniqueIds(path, "conversation id", "id")
    for line in json_lines(path):
        if "messages" not in line:
            raise line.error("missing the conversation's messages", "messages")
        messages = line.records("messages")
        default = line.text("model", None) or line.text("bot", None) or default_bot
        system: list[str] = []
        turns: list[Turn] = []
        for message in messages:
            for key in ("role", "content"):
                if key not in message:
                    raise message.error(f"the message has no '{key}'", key)
            role = message.text("role")
            text = _content(message)
            name = message.text("name", None)
            extra = {k: v for k, v in message.items() if k not in ("role", "content", "name")}
            if role in SYSTEM_ROLES:
                system.append(text)
            elif role == "user":
                turn_meta = dict(extra)
                if name:
                    turn_meta["name"] = name
                turns.append(Turn(speaker="human", text=text, meta=turn_meta))
            elif role == "assistant":
                turns.append(Turn(speaker="bot", text=text, bot=name or default, meta=extra))
            else:
                raise message.error(f"unsupported role '{role}'; expected system, developer, user or assistant", "role")
        bots = line.texts("bots", None)
        if bots is None:
            bots = []
            for turn in turns:
                if turn.bot is not None and turn.bot not in bots:
                    bots.append(turn.bot)
            if not bots:
                bots = [default]
        meta: dict[str, Any] = {k: v for k, v in line.items() if k not in _LINE_KEYS}
        if system:
            meta["system"] = "\n\n".join(system)
        conv_id = line.ident("id", None) or line.ident("conversation_id", None) or f"{path.stem}-{line.line}"
        if not ids.add(conv_id, line.line, line.data):
            continue
        conversations.append(
            Conversation(
                id=conv_id,
                bots=bots,
                turns=turns,
                source=line.text("source", None) or "import",
                meta=meta,
            )
        )
    ids.finish()
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
