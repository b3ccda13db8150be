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
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats import dump_json_line, iter_jsonl
from dialeval.records import Conversation, Turn

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
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ImportFormatError(
                    str(candidate), f"metadata is not valid JSON ({exc.msg})", line=exc.lineno
                ) from None
            if not isinstance(data, dict):
                raise ImportFormatError(str(candidate), "metadata must be one JSON object")
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
    for number, episode in _episodes(path):
        if _is_model_chat(episode):
            human_ids = human_ids | _model_chat_human_ids(episode)
        if "dialog" not in episode:
            raise ImportFormatError(str(path), "missing the episode's turns", line=number, field="dialog")
        dialog = episode["dialog"]
        if not isinstance(dialog, list):
            raise ImportFormatError(
                str(path),
                "must be a list of act pairs [[{id, text}, {id, text}], ...]",
                line=number,
                field="dialog",
            )
        context = episode.get("context") or []
        if not isinstance(context, list):
            raise ImportFormatError(str(path), "must be a list of acts", line=number, field="context")
        context = list(context)

        acts: list[tuple[str, dict[str, Any]]] = []
        for i, pair in enumerate(dialog):
            pair_acts = [pair] if isinstance(pair, dict) else pair
            if not isinstance(pair_acts, list):
                raise ImportFormatError(
                    str(path), "an act pair must be a list of acts", line=number, field=f"dialog[{i}]"
                )
            for j, act in enumerate(pair_acts):
                where = f"dialog[{i}][{j}]"
                if not isinstance(act, dict):
                    raise ImportFormatError(str(path), "an act must be a JSON object", line=number, field=where)
                if "id" not in act and "speaker" in act:
                    # older ParlAI chat logs (e.g. projects/wizard_of_wikipedia/chat_example*.jsonl)
                    # name the speaker `speaker`, as the first ACUTE pairings did
                    act = {"id": act["speaker"], **{k: v for k, v in act.items() if k != "speaker"}}
                for key in ("id", "text"):
                    if key not in act:
                        raise ImportFormatError(
                            str(path), f"the act has no '{key}'", line=number, field=f"{where}.{key}"
                        )
                if not isinstance(act["text"], str):
                    raise ImportFormatError(str(path), "must be a string", line=number, field=f"{where}.text")
                if act["id"] == CONTEXT_ID:
                    context.append(act)
                    continue
                acts.append((str(act["id"]), act))

        bot_ids = [sid for sid, _ in acts if speaker_map.get(sid, sid) != "human" and not _is_human_id(sid, human_ids)]
        shared = _self_chat_name(sorted(set(bot_ids)))
        self_chat_bot = bot or shared
        # a self-chat has no human side and one base name for both sides (X_1, X_2), or a given bot
        episode_self_chat = is_self_chat and len(bot_ids) == len(acts) and self_chat_bot is not None

        turns: list[Turn] = []
        for _index, (speaker_id, act) in enumerate(acts):
            mapped = speaker_map.get(speaker_id)
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
                name = act["bot"]
            if "speaker" in act:
                speaker = act["speaker"]
            meta = {"parlai_id": speaker_id}
            meta.update({k: v for k, v in act.items() if k not in _TURN_KEYS})
            turns.append(
                Turn(
                    speaker=speaker,
                    text=act["text"],
                    bot=name,
                    is_seed=bool(act.get("is_seed", False)),
                    candidates=act.get("candidates"),
                    chosen=act.get("chosen"),
                    meta=meta,
                )
            )

        bots = episode.get("bots")
        if not isinstance(bots, list):
            bots = []
            for turn in turns:
                if turn.bot is not None and turn.bot not in bots:
                    bots.append(turn.bot)
        source = episode.get("source") or ("self-chat" if episode_self_chat else "import")
        conversation_meta: dict[str, Any] = {"context": context}
        extra = {k: v for k, v in episode.items() if k not in _EPISODE_KEYS}
        if extra:
            conversation_meta["parlai"] = extra
        if sidecar:
            conversation_meta["parlai_metadata"] = sidecar
        conversations.append(
            Conversation(
                id=str(episode.get("conversation_id", f"{path.stem}-{number}")),
                bots=[str(b) for b in bots],
                turns=turns,
                source=str(source),
                meta=conversation_meta,
                error=episode.get("error"),
            )
        )
    return conversations


def fast_acute_model(path: Path, metadata: dict[str, Any] | None) -> str | None:
    """The model name of a fast-ACUTE self-chat log, which ParlAI writes as ``<model>.<task>.jsonl``
    (``model1.blended_skill_talk.jsonl``): both sides share one ParlAI id base
    (``TransformerGenerator_1/_2``) whatever the model, so the file name is what tells models apart."""
    task = str(((metadata or {}).get("opt") or {}).get("task") or "").replace(":", "_")
    suffix = f".{task}.jsonl"
    if task and path.name.endswith(suffix) and len(path.name) > len(suffix):
        return path.name[: -len(suffix)]
    return None


def _episodes(path: Path):
    """(line, episode) of a JSONL log, or (1, episode) of a file holding one JSON object (the
    pretty-printed per-conversation files of ParlAI's crowdsourcing tasks, e.g. model_chat)."""
    if path.exists() and path.suffix == ".json":
        text = path.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            yield 1, data
            return
    yield from iter_jsonl(path)


def _is_model_chat(episode: dict[str, Any]) -> bool:
    """A Mephisto model_chat result: worker ids at the top, acts carrying ``agent_idx``."""
    return (
        "workers" in episode
        and isinstance(episode.get("dialog"), list)
        and any(isinstance(a, dict) and "agent_idx" in a for a in episode["dialog"])
    )


def _model_chat_human_ids(episode: dict[str, Any]) -> frozenset[str]:
    # in model_chat the crowdworker is agent 0 (it sends the opening "Hi!"), the bot agent 1
    return frozenset(str(a["id"]) for a in episode["dialog"] if isinstance(a, dict) and a.get("agent_idx") == 0)


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
