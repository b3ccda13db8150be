"""ACUTE-Eval pairings files (ParlAI's ``acute_eval`` task input), JSONL, one comparison a line::

    {"is_onboarding": false,
     "speakers_to_eval": ["model_a", "model_b"],
     "dialogue_ids": [12, 47],
     "dialogue_dicts": [
        {"speakers": ["model_a", "human_evaluator"],
         "dialogue": [{"id": "human_evaluator", "text": "..."}, {"id": "model_a", "text": "..."}]},
        {"speakers": ["other_speaker", "model_b"], "dialogue": [...]}]}

The first published pairings (ParlAI 2019) name a turn's speaker ``speaker`` instead of ``id``
and may lack ``dialogue_ids``; both shapes read.

Onboarding lines may add ``correct_answer`` (the speaker that must be chosen) and ``tags``, and may
lack ``dialogue_ids``. Dialogue i shows speaker ``speakers_to_eval[i]``.

Reading gives a Dataset of method ``acute``: one Conversation per distinct dialogue id and one Unit of
kind ``acute-pair`` per line (``conversation_ids`` = the two dialogue ids; payload
``speakers_to_eval``, ``is_onboarding`` and any other keys of the line such as ``correct_answer``).

Turn speakers: the evaluated speaker is ``bot`` (bot = its name); ``human``/``human_evaluator``/
``*_as_human`` are ``human``; ParlAI's self-chat partner ``other_speaker`` is the evaluated bot
talking to itself; any other id is a ``bot`` named by the id. ``turn.meta`` keeps the original id
(``parlai_id``) and whether the turn is the one under evaluation (``evaluated``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dialeval.errors import DialevalError, ImportFormatError
from dialeval.formats import dump_json_line, iter_jsonl
from dialeval.records import Conversation, Dataset, Turn, Unit

UNIT_KIND = "acute-pair"
SELF_CHAT_PARTNER = "other_speaker"
HUMAN_IDS = frozenset({"human", "human_evaluator"})
_LINE_KEYS = ("is_onboarding", "speakers_to_eval", "dialogue_ids", "dialogue_dicts", "unit_id")
_DIALOGUE_KEYS = ("speakers", "dialogue", "conversation_id", "bots", "source")


def _is_human(speaker_id: str) -> bool:
    return speaker_id in HUMAN_IDS or speaker_id.endswith("_as_human")


def _conversation(path: Path, number: int, index: int, conv_id: str, evaluated: str, data: Any) -> Conversation:
    where = f"dialogue_dicts[{index}]"
    if not isinstance(data, dict):
        raise ImportFormatError(str(path), "a dialogue must be a JSON object", line=number, field=where)
    if "dialogue" not in data:
        raise ImportFormatError(str(path), "missing the dialogue's turns", line=number, field=f"{where}.dialogue")
    if not isinstance(data["dialogue"], list):
        raise ImportFormatError(str(path), "must be a list of {id, text}", line=number, field=f"{where}.dialogue")
    turns: list[Turn] = []
    bots: list[str] = [evaluated]
    all_bot_ids = True
    for t, entry in enumerate(data["dialogue"]):
        at = f"{where}.dialogue[{t}]"
        if not isinstance(entry, dict):
            raise ImportFormatError(str(path), "a turn must be a JSON object", line=number, field=at)
        # ParlAI's first pairings (2019) named the speaker of a turn `speaker`; later ones `id`
        key = "id" if "id" in entry else "speaker" if "speaker" in entry else None
        if key is None:
            raise ImportFormatError(
                str(path), "the turn has no 'id' (nor the older 'speaker')", line=number, field=f"{at}.id"
            )
        if "text" not in entry:
            raise ImportFormatError(str(path), "the turn has no 'text'", line=number, field=f"{at}.text")
        speaker_id = str(entry[key])
        meta: dict[str, Any] = {"parlai_id": speaker_id, "evaluated": speaker_id == evaluated}
        meta.update({k: v for k, v in entry.items() if k not in ("id", "speaker", "text")})
        if speaker_id == evaluated:
            speaker, bot = "bot", evaluated
        elif _is_human(speaker_id):
            speaker, bot = "human", None
            all_bot_ids = False
        elif speaker_id == SELF_CHAT_PARTNER:
            speaker, bot = "bot", evaluated
        else:
            speaker, bot = "bot", speaker_id
            if bot not in bots:
                bots.append(bot)
        turns.append(Turn(speaker=speaker, text=str(entry["text"]), bot=bot, meta=meta))
    speakers = data.get("speakers")
    meta = {"speakers": list(speakers) if isinstance(speakers, list) else None}
    meta.update({k: v for k, v in data.items() if k not in _DIALOGUE_KEYS})
    if isinstance(data.get("bots"), list):
        bots = [str(b) for b in data["bots"]]
    source = data.get("source")
    if not source:
        source = "self-chat" if all_bot_ids and len(bots) == 1 and turns else "import"
    return Conversation(id=conv_id, bots=bots, turns=turns, source=str(source), meta=meta)


def read_acute_pairings(path: str | Path) -> Dataset:
    """Read an ACUTE-Eval pairings JSONL file into a Dataset (method ``acute``, no judgments).

    Dialogue ids are kept as strings; a dialogue id seen on several lines becomes one Conversation
    (its first occurrence). Lines without ``dialogue_ids`` (onboarding) get ``<stem>-<line>-a/b``.
    Unit ids are a ``unit_id`` key when present, else ``<stem>-<line>``.
    """
    path = Path(path)
    conversations: dict[str, Conversation] = {}
    units: list[Unit] = []
    for number, line in iter_jsonl(path):
        for key in ("speakers_to_eval", "dialogue_dicts"):
            if key not in line:
                raise ImportFormatError(str(path), "missing", line=number, field=key)
        speakers = line["speakers_to_eval"]
        dialogues = line["dialogue_dicts"]
        if not isinstance(speakers, list) or len(speakers) != 2:
            raise ImportFormatError(str(path), "must list exactly two speakers", line=number, field="speakers_to_eval")
        if not isinstance(dialogues, list) or len(dialogues) != 2:
            raise ImportFormatError(str(path), "must hold exactly two dialogues", line=number, field="dialogue_dicts")
        ids = line.get("dialogue_ids")
        if ids is None:
            ids = [f"{path.stem}-{number}-a", f"{path.stem}-{number}-b"]
        if not isinstance(ids, list) or len(ids) != 2:
            raise ImportFormatError(str(path), "must hold exactly two ids", line=number, field="dialogue_ids")
        ids = [str(i) for i in ids]
        for i in range(2):
            conversation = _conversation(path, number, i, ids[i], str(speakers[i]), dialogues[i])
            conversations.setdefault(ids[i], conversation)
        payload: dict[str, Any] = {
            "speakers_to_eval": [str(s) for s in speakers],
            "is_onboarding": bool(line.get("is_onboarding", False)),
        }
        payload.update({k: v for k, v in line.items() if k not in _LINE_KEYS})
        units.append(
            Unit(
                id=str(line.get("unit_id", f"{path.stem}-{number}")),
                kind=UNIT_KIND,
                conversation_ids=ids,
                payload=payload,
            )
        )
    return Dataset(
        method="acute",
        conversations=list(conversations.values()),
        units=units,
        meta={"format": "acute-pairings", "path": str(path)},
    )


def _speaker_id(turn: Turn, index: int, evaluated: str, self_chat: bool) -> str:
    if "parlai_id" in turn.meta:
        return str(turn.meta["parlai_id"])
    if turn.speaker == "human":
        return "human_evaluator"
    if self_chat:
        # ParlAI shows the side that spoke first as the model, the other as its partner
        return evaluated if index % 2 == 0 else SELF_CHAT_PARTNER
    return turn.bot or turn.speaker


def _dialogue_dict(conversation: Conversation, evaluated: str) -> dict[str, Any]:
    bot_names = {t.bot for t in conversation.turns if t.speaker != "human"}
    self_chat = (
        bool(conversation.turns) and bot_names == {evaluated} and all(t.speaker != "human" for t in conversation.turns)
    )
    dialogue = []
    speakers: list[str] = []
    for i, turn in enumerate(conversation.turns):
        speaker_id = _speaker_id(turn, i, evaluated, self_chat)
        if speaker_id not in speakers:
            speakers.append(speaker_id)
        entry: dict[str, Any] = {"id": speaker_id, "text": turn.text}
        entry.update({k: v for k, v in turn.meta.items() if k not in ("parlai_id", "evaluated", "id", "text")})
        dialogue.append(entry)
    kept = conversation.meta.get("speakers")
    result: dict[str, Any] = {
        "speakers": list(kept) if isinstance(kept, list) else speakers,
        "dialogue": dialogue,
    }
    result.update({k: v for k, v in conversation.meta.items() if k not in _DIALOGUE_KEYS})
    result["conversation_id"] = conversation.id
    result["bots"] = list(conversation.bots)
    result["source"] = conversation.source
    return result


def write_acute_pairings(
    units: Iterable[Unit],
    conversations: Mapping[str, Conversation] | Iterable[Conversation],
    path: str | Path,
) -> Path:
    """Write one pairings line per unit (units of another kind are skipped).

    ``speakers_to_eval`` comes from the unit payload, else from each conversation's first bot.
    A unit naming an unknown conversation raises DialevalError. Returns the path.
    """
    path = Path(path)
    by_id = dict(conversations) if isinstance(conversations, Mapping) else {c.id: c for c in conversations}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for unit in units:
            if unit.kind != UNIT_KIND:
                continue
            if len(unit.conversation_ids) != 2:
                raise DialevalError(f"unit '{unit.id}' must name exactly two conversations to be written as a pairing")
            pair = []
            for cid in unit.conversation_ids:
                if cid not in by_id:
                    raise DialevalError(f"unit '{unit.id}' names conversation '{cid}', which was not given")
                pair.append(by_id[cid])
            speakers = unit.payload.get("speakers_to_eval")
            if not speakers:
                speakers = [c.bots[0] if c.bots else "" for c in pair]
            line: dict[str, Any] = {
                "is_onboarding": bool(unit.payload.get("is_onboarding", False)),
                "speakers_to_eval": list(speakers),
                "dialogue_ids": list(unit.conversation_ids),
                "dialogue_dicts": [_dialogue_dict(c, s) for c, s in zip(pair, speakers)],
            }
            line.update({k: v for k, v in unit.payload.items() if k not in _LINE_KEYS})
            line["unit_id"] = unit.id
            handle.write(dump_json_line(line))
    return path
