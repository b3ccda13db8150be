"""ParlAI "Conversations" logs: a JSONL file plus a ``.metadata`` sidecar.

Each line of the JSONL file is one episode::

    {"dialog": [[{"id": "<speaker>", "text": "..."}, {"id": "<speaker>", "text": "..."}], ...],
     "context": [{"id": "context", "text": "your persona: ..."}, ...],
     "metadata_path": "<file>.metadata", ...any other episode-level keys}

``dialog`` is a list of act pairs (one parley each); acts may carry more keys (``episode_done``,
``beam_texts``...). The sidecar sits beside the log with the extension replaced by ``.metadata``
(``chats.jsonl`` -> ``chats.metadata``) and holds one JSON object with ``date``, ``opt``,
``self_chat``, ``speakers`` and ``version``.

Speakers: an id of ``human``, ``human_evaluator`` (or ending in ``_as_human``) is the human side;
every other id is a bot, named by the id, by ``speaker_map``, or, in a self-chat, by ``bot`` or the
shared base of the ids (``TransformerGenerator_1``/``_2`` -> ``TransformerGenerator``). The ParlAI
id of every turn is kept in ``turn.meta["parlai_id"]``, other act keys in ``turn.meta`` too.

Variants of ParlAI's public releases that read too:

- fast-ACUTE self-chat logs ``<model>.<task>.jsonl`` (``task_config/self_chats/``): both sides are
  ``TransformerGenerator_1/_2`` whatever the model, so the bot is named by the file's ``<model>``
  when the sidecar's ``opt.task`` matches the file name.
- model_chat results (one pretty-printed JSON object per conversation, acts with ``agent_idx``):
  agent 0 is the crowdworker (``human``), agent 1 the bot; per-turn annotations stay in turn.meta.
- older chat logs whose acts name the speaker ``speaker`` instead of ``id``
  (``projects/wizard_of_wikipedia/chat_example1.jsonl``).
- a folder: every ``*.jsonl``/``*.json`` log in it, ids prefixed by the file's path in the folder.

The writer adds three episode-level keys ParlAI ignores (``conversation_id``, ``bots``, ``source``)
so that a file written here reads back to the same conversations.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats import dump_json_line
from dialeval.formats.reading import Record, UniqueIds, json_document, json_lines, parse_json, read_text
from dialeval.records import Conversation, Turn
from dialeval.textclean import clean_imported

HUMAN_IDS = frozenset({"human", "human_evaluator"})
CONTEXT_ID = "context"
METADATA_VERSION = "0.1"

# act keys the reader turns into Turn fields rather than keeping in turn.meta
_TURN_KEYS = ("id", "text", "bot", "speaker", "is_seed", "candidates", "chosen")
# episode keys the reader turns into Conversation fields
_EPISODE_KEYS = ("dialog", "context", "conversation_id", "bots", "source", "error")


def metadata_path(path: str | Path) -> Path:
    """Where ParlAI keeps the sidecar of log `path`: the extension replaced by ``.metadata``."""
    return Path(path).with_suffix(".metadata")


def read_parlai_metadata(path: str | Path) -> dict[str, Any] | None:
    """The sidecar of log `path` as a dict (``None`` when there is none).

    Looks for ``<stem>.metadata`` (ParlAI's own naming) and then ``<name>.metadata``.
    """
    path = Path(path)
    for candidate in (metadata_path(path), path.with_name(path.name + ".metadata")):
        if candidate.exists() and candidate != path:
            data = json_document(candidate)
            if not isinstance(data, dict):
                raise ImportFormatError(str(candidate), "metadata must be one JSON object")
            if not isinstance(data.get("self_chat", False), bool):
                raise ImportFormatError(str(candidate), "expected true or false", field="self_chat")
            return data
    return None


def _is_human_id(speaker_id: str, human_ids: frozenset[str]) -> bool:
    return speaker_id in human_ids or speaker_id.endswith("_as_human")


def _self_chat_name(ids: list[str]) -> str | None:
    bases = {re.sub(r"_\d+$", "", i) for i in ids}
    return bases.pop() if len(bases) == 1 else None


def read_parlai_conversations(
    path: str | Path,
    *,
    bot: str | None = None,
    speaker_map: dict[str, str] | None = None,
    self_chat: bool | None = None,
    human_ids: frozenset[str] | set[str] = HUMAN_IDS,
) -> list[Conversation]:
    """Read a ParlAI Conversations JSONL file (and its ``.metadata`` sidecar when present).

    - `bot`: the name of the system in a self-chat, or of every non-human speaker otherwise.
    - `speaker_map`: ParlAI id -> bot name, or -> ``"human"`` to mark a human id.
    - `self_chat`: overrides the sidecar's ``self_chat`` flag.

    Conversation ids come from a ``conversation_id`` key when present, else ``<stem>-<line>``.
    Raises ImportFormatError naming the line (and field) of anything malformed.
    """
    path = Path(path)
    if path.is_dir():
        return _read_folder(path, bot=bot, speaker_map=speaker_map, self_chat=self_chat, human_ids=human_ids)
    metadata = read_parlai_metadata(path)
    is_self_chat = bool(metadata.get("self_chat", False)) if metadata else False
    if self_chat is not None:
        is_self_chat = self_chat
    if bot is None and is_self_chat:
        bot = fast_acute_model(path, metadata)
    human_ids = frozenset(human_ids)
    speaker_map = dict(speaker_map or {})
    sidecar = {k: v for k, v in (metadata or {}).items() if k != "opt"}

    conversations: list[Conversation] = []
    ids = UniqueIds(path, "conversation id", "conversation_id")
    for episode in _episodes(path):
        number = episode.line
        if _is_model_chat(episode.data):
            human_ids = human_ids | _model_chat_human_ids(episode.data)
        if "dialog" not in episode:
            raise episode.error("missing the episode's turns", "dialog")
        dialog = episode.get("dialog")
        if not isinstance(dialog, list):
            raise episode.error("must be a list of act pairs [[{id, text}, {id, text}], ...]", "dialog")
        context = list(episode.array("context", []))

        acts: list[tuple[str, Record]] = []
        for i, pair in enumerate(dialog):
            pair_acts = [pair] if isinstance(pair, dict) else pair
            if not isinstance(pair_acts, list):
                raise episode.error("an act pair must be a list of acts", f"dialog[{i}]")
            for j, raw in enumerate(pair_acts):
                where = f"dialog[{i}][{j}]"
                if not isinstance(raw, dict):
                    raise episode.error("an act must be a JSON object", where)
                if "id" not in raw and "speaker" in raw:
                    # older ParlAI chat logs (e.g. projects/wizard_of_wikipedia/chat_example*.jsonl)
                    # name the speaker `speaker`, as the first ACUTE pairings did
                    raw = {"id": raw["speaker"], **{k: v for k, v in raw.items() if k != "speaker"}}
                act = Record(raw, path, number, where)
                for key in ("id", "text"):
                    if key not in act:
                        raise act.error(f"the act has no '{key}'", key)
                act.text("text")
                speaker_id = act.ident("id")
                if speaker_id == CONTEXT_ID:
                    context.append(raw)
                    continue
                acts.append((speaker_id, act))

        bot_ids = [sid for sid, _ in acts if speaker_map.get(sid, sid) != "human" and not _is_human_id(sid, human_ids)]
        shared = _self_chat_name(sorted(set(bot_ids)))
        self_chat_bot = bot or shared
        # a self-chat has no human side and one base name for both sides (X_1, X_2), or a given bot
        episode_self_chat = is_self_chat and len(bot_ids) == len(acts) and self_chat_bot is not None

        turns: list[Turn] = []
        for speaker_id, act in acts:
            mapped = speaker_map.get(speaker_id)
            name: str | None
            if mapped == "human" or (mapped is None and _is_human_id(speaker_id, human_ids)):
                speaker, name = "human", None
            else:
                speaker = "bot"
                if mapped is not None:
                    name = mapped
                elif episode_self_chat:
                    name = self_chat_bot
                else:
                    name = bot or speaker_id
            if "bot" in act:
                name = act.text("bot", None)
            if "speaker" in act:
                speaker = act.text("speaker", empty=False)
            candidates = act.array("candidates", None)
            if candidates is not None and not all(isinstance(c, dict) for c in candidates):
                raise act.error("expected a list of objects {bot, text}", "candidates")
            meta = {"parlai_id": speaker_id}
            meta.update({k: v for k, v in act.items() if k not in _TURN_KEYS})
            turns.append(
                Turn(
                    speaker=speaker,
                    text=act.text("text"),
                    bot=name,
                    is_seed=act.boolean("is_seed", False),
                    candidates=candidates,
                    chosen=act.integer("chosen", None, minimum=0),
                    meta=meta,
                )
            )

        bots = episode.texts("bots", None)
        if bots is None:
            bots = []
            for turn in turns:
                if turn.bot is not None and turn.bot not in bots:
                    bots.append(turn.bot)
        source = episode.text("source", None) or ("self-chat" if episode_self_chat else "import")
        conversation_meta: dict[str, Any] = {"context": context}
        extra = {k: v for k, v in episode.items() if k not in _EPISODE_KEYS}
        if extra:
            conversation_meta["parlai"] = extra
        if sidecar:
            conversation_meta["parlai_metadata"] = sidecar
        conversation_id = episode.ident("conversation_id", None) or f"{path.stem}-{number}"
        if not ids.add(conversation_id, number, episode.data):
            continue
        conversations.append(
            Conversation(
                id=conversation_id,
                bots=bots,
                turns=turns,
                source=source,
                meta=conversation_meta,
                error=episode.text("error", None),
            )
        )
    ids.finish()
    return conversations


def fast_acute_model(path: Path, metadata: dict[str, Any] | None) -> str | None:
    """The model name of a fast-ACUTE self-chat log, which ParlAI writes as ``<model>.<task>.jsonl``
    (``model1.blended_skill_talk.jsonl``): both sides share one ParlAI id base
    (``TransformerGenerator_1/_2``) whatever the model, so the file name is what tells models apart."""
    opt = (metadata or {}).get("opt")
    task = opt.get("task") if isinstance(opt, dict) else None
    task = task.replace(":", "_") if isinstance(task, str) else ""
    suffix = f".{task}.jsonl"
    if task and path.name.endswith(suffix) and len(path.name) > len(suffix):
        return path.name[: -len(suffix)]
    return None


def _episodes(path: Path) -> Iterator[Record]:
    """The episodes of a JSONL log, or the one episode (line 1) of a file holding one JSON object
    (the pretty-printed per-conversation files of ParlAI's crowdsourcing tasks, e.g. model_chat)."""
    if path.suffix == ".json":
        text = read_text(path)
        try:
            data = parse_json(text, path)
        except ImportFormatError:
            data = None  # not one document: JSON lines after all (json_lines names the bad line)
        if isinstance(data, dict):
            yield Record(clean_imported(data, str(path), 1), path, 1)
            return
    yield from json_lines(path)


def _is_model_chat(episode: Mapping[str, Any]) -> bool:
    """A Mephisto model_chat result: worker ids at the top, acts carrying ``agent_idx``."""
    return (
        "workers" in episode
        and isinstance(episode.get("dialog"), list)
        and any(isinstance(a, dict) and "agent_idx" in a for a in episode["dialog"])
    )


def _model_chat_human_ids(episode: Mapping[str, Any]) -> frozenset[str]:
    # in model_chat the crowdworker is agent 0 (it sends the opening "Hi!"), the bot agent 1
    acts = [a for a in episode["dialog"] if isinstance(a, dict) and a.get("agent_idx") == 0]
    return frozenset(str(a["id"]) for a in acts if isinstance(a.get("id"), (str, int)))


def _read_folder(folder: Path, **options: Any) -> list[Conversation]:
    """Every log in a folder tree (``*.jsonl`` and ``*.json``, sidecars skipped); conversation ids
    are prefixed with the file's path inside the folder, so equal file names do not clash."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json"))
    if not files:
        raise ImportFormatError(str(folder), "no ParlAI logs (*.jsonl or *.json) in this folder")
    out: list[Conversation] = []
    for file in files:
        prefix = file.relative_to(folder).with_suffix("").as_posix()
        for conversation in read_parlai_conversations(file, **options):
            if conversation.id.startswith(f"{file.stem}-"):
                conversation.id = prefix + conversation.id[len(file.stem) :]
            out.append(conversation)
    return out


def _parlai_id(turn: Turn, index: int, self_chat: bool) -> str:
    if "parlai_id" in turn.meta:
        return str(turn.meta["parlai_id"])
    if turn.speaker == "human":
        return "human_evaluator"
    name = turn.bot or turn.speaker
    if self_chat:
        return f"{name}_{index % 2 + 1}"
    return name


def _act(turn: Turn, index: int, self_chat: bool) -> dict[str, Any]:
    speaker_id = _parlai_id(turn, index, self_chat)
    act: dict[str, Any] = {"id": speaker_id, "text": turn.text}
    act.update({k: v for k, v in turn.meta.items() if k != "parlai_id" and k not in _TURN_KEYS})
    if (turn.bot is not None and turn.bot != speaker_id) or (turn.bot is None and turn.speaker != "human"):
        act["bot"] = turn.bot
    if turn.speaker not in ("human", "bot"):
        act["speaker"] = turn.speaker
    if turn.is_seed:
        act["is_seed"] = True
    if turn.candidates is not None:
        act["candidates"] = turn.candidates
    if turn.chosen is not None:
        act["chosen"] = turn.chosen
    return act


def write_parlai_conversations(
    conversations: list[Conversation],
    path: str | Path,
    *,
    self_chat: bool = False,
    opt: dict[str, Any] | None = None,
    **metadata: Any,
) -> Path:
    """Write `conversations` as a ParlAI Conversations JSONL file plus its ``.metadata`` sidecar.

    Turns are grouped two by two into act pairs. Turns without a kept ParlAI id get one: the
    human side ``human_evaluator``, a bot its name (``<name>_1``/``<name>_2`` by side when
    `self_chat` and one bot plays both sides). `opt` and any extra keyword arguments go into the
    sidecar. Returns the path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta_path = metadata_path(path)
    speakers: list[str] = []
    with path.open("w", encoding="utf-8") as handle:
        for conversation in conversations:
            # side suffixes only where one bot plays both sides
            names = {t.bot for t in conversation.turns}
            sides = self_chat and len(names) == 1 and None not in names
            acts = [_act(turn, i, sides) for i, turn in enumerate(conversation.turns)]
            for act in acts:
                if act["id"] not in speakers:
                    speakers.append(act["id"])
            episode: dict[str, Any] = {
                "dialog": [acts[i : i + 2] for i in range(0, len(acts), 2)],
                "context": list(conversation.meta.get("context") or []),
                "metadata_path": str(meta_path),
            }
            for key, value in (conversation.meta.get("parlai") or {}).items():
                episode.setdefault(key, value)
            episode["conversation_id"] = conversation.id
            episode["bots"] = list(conversation.bots)
            episode["source"] = conversation.source
            if conversation.error is not None:
                episode["error"] = conversation.error
            handle.write(dump_json_line(episode))
    sidecar = {
        "date": str(_dt.datetime.now()),
        "opt": opt or {},
        "self_chat": self_chat,
        "speakers": speakers,
        "version": METADATA_VERSION,
        **metadata,
    }
    meta_path.write_text(json.dumps(sidecar, ensure_ascii=False, default=str), encoding="utf-8")
    return path
