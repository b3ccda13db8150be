"""The prompt set of a study and the answers to it: reading prompts, and answers as conversations.

A prompt is an id, chat messages (one user message, or several turns), an optional category and an
optional reference answer. Every system's answer to one prompt is stored as one conversation
(id ``answer:<system>:<prompt id>``): the prompt's messages, then the system's turns. Where the
system speaks: after every user message that the prompt does not follow with an assistant message
itself. So ``[user]`` asks for one answer; ``[user, assistant, user]`` (a fixed earlier exchange)
asks for the last turn only; ``[user, user]`` (MT-Bench's two turns) asks the system to answer the
first turn, then the second with its own first answer in the history.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ...errors import DialevalError
from ...records import Conversation, Turn
from .options import BUNDLED

USER, CONTEXT, BOT = "user", "context", "bot"  # turn speakers of an answer conversation
SOURCE_GENERATED, SOURCE_IMPORTED = "prompt-answer", "import"


@dataclass(frozen=True)
class Prompt:
    id: str
    messages: tuple[tuple[str, str], ...]  # (role, text), role "user" or "assistant"
    category: str | None = None
    reference: str | None = None

    def slots(self) -> list[int]:
        """Indexes of the user messages the system answers (see the module doc)."""
        return [
            i
            for i, (role, _) in enumerate(self.messages)
            if role == "user" and (i + 1 == len(self.messages) or self.messages[i + 1][0] != "assistant")
        ]

    def as_messages(self) -> list[dict[str, str]]:
        return [{"role": role, "content": text} for role, text in self.messages]

    def shared(self) -> tuple[tuple[str, str], ...]:
        """The part both sides share: the messages up to the first one the system answers."""
        return self.messages[: self.slots()[0] + 1]


def answer_id(system: str, prompt_id: str) -> str:
    return f"answer:{system}:{prompt_id}"


def answer_conversation(
    prompt: Prompt, system: str, answers: list[str], *, source: str, error: str | None = None
) -> Conversation:
    """The stored conversation of `system`'s answers (one per slot, in order) to `prompt`."""
    slots, turns, k = prompt.slots(), [], 0
    for i, (role, text) in enumerate(prompt.messages):
        turns.append(Turn(USER if role == "user" else CONTEXT, text))
        if i in slots:
            if k >= len(answers):
                break
            turns.append(Turn(BOT, answers[k], bot=system))
            k += 1
    meta = {"prompt_id": prompt.id, "category": prompt.category}
    return Conversation(answer_id(system, prompt.id), [system], turns, source=source, meta=meta, error=error)


def answer_turns(conversation: Conversation, prompt: Prompt) -> list[Turn]:
    """What a side shows: the turns after the shared prompt (the answers, and later user turns)."""
    return conversation.turns[len(prompt.shared()) :]


# -- reading prompt sets ---------------------------------------------------------------------------------
def _text(value: Any, where: str, field: str) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "\n\n".join(value)
    if not isinstance(value, str):
        found = {type(None): "null", dict: "an object", list: "a list"}.get(type(value), f"a {type(value).__name__}")
        raise DialevalError(f"{where}: '{field}' must be text, found {found}")
    if not value.strip():
        raise DialevalError(f"{where}: '{field}' must be non-empty text")
    return value


def prompt_from_record(record: dict[str, Any], where: str) -> Prompt:
    """One prompt from a JSON object or CSV row: id (or question_id, prompt_id, or uid as Arena-Hard
    names it), then `messages` (chat messages), `turns` (user turns, as MT-Bench's question.jsonl; a
    turn may be {"content": text}, as in Arena-Hard's of 2024), or `prompt` / `instruction` (one text)."""
    pid = record.get("id", record.get("question_id", record.get("prompt_id", record.get("uid"))))
    if pid is None or str(pid).strip() == "":
        raise DialevalError(f"{where}: no 'id' (or question_id, prompt_id, uid)")
    pid = str(pid).strip()
    messages: list[tuple[str, str]] = []
    if record.get("messages") not in (None, ""):
        raw = record["messages"]
        if isinstance(raw, str):  # a CSV cell holding JSON
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raise DialevalError(f"{where}: 'messages' is not a JSON list of chat messages") from None
        if not isinstance(raw, list) or not raw:
            raise DialevalError(f"{where}: 'messages' must be a non-empty list of {{role, content}}")
        for n, m in enumerate(raw, start=1):
            if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
                raise DialevalError(f"{where}: message {n} needs role user or assistant (and content)")
            if m["role"] == "system":
                raise DialevalError(
                    f"{where}: message {n}: system messages are not supported; fold them into the prompt"
                )
            messages.append((m["role"], _text(m.get("content"), where, f"messages[{n}].content")))
    elif record.get("turns") not in (None, ""):
        turns = record["turns"]
        if not isinstance(turns, list) or not turns:
            raise DialevalError(f"{where}: 'turns' must be a non-empty list of user messages")
        messages = [
            ("user", _text(t["content"] if isinstance(t, dict) and "content" in t else t, where, f"turns[{n}]"))
            for n, t in enumerate(turns, start=1)
        ]
    else:
        text = record.get("prompt", record.get("instruction"))
        if text is None:
            raise DialevalError(f"{where}: no prompt: give 'prompt' (text), 'messages' or 'turns'")
        messages = [("user", _text(text, where, "prompt"))]
    if messages[-1][0] != "user":
        raise DialevalError(f"{where}: the last message must be the user's (the systems answer it)")
    category = record.get("category")
    reference = record.get("reference", record.get("reference_answer"))
    if isinstance(reference, list):
        reference = "\n\n".join(str(r) for r in reference)
    return Prompt(
        pid,
        tuple(messages),
        str(category).strip() or None if category not in (None, "") else None,
        str(reference) if reference not in (None, "") else None,
    )


def parse_prompts(text: str, name: str) -> list[Prompt]:
    """Prompts from the text of a JSONL or CSV file (`name` says which and names it in errors)."""
    prompts: list[Prompt] = []
    if name.lower().endswith(".csv"):
        for n, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            prompts.append(prompt_from_record({k.strip(): v for k, v in row.items() if k}, f"{name} line {n}"))
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DialevalError(f"{name} line {n}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise DialevalError(f"{name} line {n}: a prompt is a JSON object")
            prompts.append(prompt_from_record(record, f"{name} line {n}"))
    return _checked(prompts, name)


def _checked(prompts: list[Prompt], name: str) -> list[Prompt]:
    """Ids unique, at least one prompt."""
    seen: set[str] = set()
    for p in prompts:
        if p.id in seen:
            raise DialevalError(f"{name}: prompt id '{p.id}' appears twice")
        seen.add(p.id)
    if not prompts:
        raise DialevalError(f"{name}: no prompts")
    return prompts


def load_prompts(options: Any, folder: str | Path) -> list[Prompt]:
    """The study's prompt set (`protocol.prompts`: a file relative to the study folder, or `bundled`)."""
    if options.prompts == BUNDLED:
        text = resources.files(__package__).joinpath("prompts.jsonl").read_text(encoding="utf-8")
        return parse_prompts(text, "bundled prompts.jsonl")
    path = Path(options.prompts)
    path = path if path.is_absolute() else Path(folder) / path
    if not path.is_file():
        raise DialevalError(f"protocol.prompts: no file {path}")
    # the importers' reading layer (formats/reading.py): decoding, JSON limits, CSV field limit
    from dialeval.errors import ImportFormatError, TextTooLongError
    from dialeval.formats.reading import csv_rows, json_document, json_lines, read_text, records_of
    from dialeval.textclean import IMPORT_LIMIT_ENV

    try:
        if path.suffix.lower() == ".csv":
            records = [(f"line {r.line}", {k.strip(): v for k, v in r.items() if k}) for r in csv_rows(path)]
        elif read_text(path).lstrip().startswith("["):  # one JSON list of prompts (AlpacaEval's shape)
            items = records_of(json_document(path), path, "a prompt (a JSON object)")
            records = [(f"item {r.line}", dict(r.data)) for r in items]
        else:
            records = [(f"line {r.line}", dict(r.data)) for r in json_lines(path, "a prompt (a JSON object)")]
    except TextTooLongError as exc:  # every command reads the prompts: name the setting they all honour
        raise ImportFormatError(
            exc.path,
            f"a prompt's text of {exc.length:,} characters is longer than the limit of {exc.limit:,}; set "
            f"{IMPORT_LIMIT_ENV}={exc.length} (or more) for every dialeval command on this study, or shorten it",
            line=exc.line,
            field=exc.field,
        ) from None
    return _checked([prompt_from_record(rec, f"{path} {where}") for where, rec in records], str(path))


def compared_systems(config: Any) -> list[str]:
    """The systems that answer: the study's bots but the quality-control ones."""
    return [b.name for b in config.bots if b.type != "degraded"]


def system_pairs(config: Any) -> list[tuple[str, str]]:
    """The compared pairs: protocol.pairs, else every system vs the baseline, else every pair."""
    from ...scheduling.assign import bot_pairs, pair_key

    options, names = config.options, compared_systems(config)
    if options.baseline is not None and options.baseline not in names:
        raise DialevalError(f"protocol.baseline names '{options.baseline}', which is not a bot ({', '.join(names)})")
    if options.pairs:
        return bot_pairs(names, options.pairs)
    if options.baseline is not None:
        return [pair_key(options.baseline, s) for s in names if s != options.baseline]
    return bot_pairs(names, None)
