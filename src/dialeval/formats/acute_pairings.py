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

from dialeval.errors import DialevalError
from dialeval.formats import dump_json_line
from dialeval.formats.reading import Record, UniqueIds, json_lines
from dialeval.records import Conversation, Dataset, Turn, Unit

UNIT_KIND = "acute-pair"
SELF_CHAT_PARTNER = "other_speaker"
HUMAN_IDS = frozenset({"human", "human_evaluator"})
_LINE_KEYS = ("is_onboarding", "speakers_to_eval", "dialogue_ids", "dialogue_dicts", "unit_id")
_DIALOGUE_KEYS = ("speakers", "dialogue", "conversation_id", "bots", "source")


def _is_human(speaker_id: str) -> bool:
    return speaker_id in HUMAN_IDS or speaker_id.endswith("_as_human")


def _conversation(conv_id: str, evaluated: str, data: Record) -> Conversation:
    if "dialogue" not in data:
        raise data.error("missing the dialogue's turns", "dialogue")
    turns: list[Turn] = []
    bots: list[str] = [evaluated]
    all_bot_ids = True
    for entry in data.records("dialogue"):
        # ParlAI's first pairings (2019) named the speaker of a turn `speaker`; later ones `id`
        key = "id" if "id" in entry else "speaker" if "speaker" in entry else None
        if key is None:
            raise entry.error("the turn has no 'id' (nor the older 'speaker')", "id")
        if "text" not in entry:
            raise entry.error("the turn has no 'text'", "text")
        speaker_id = entry.ident(key)
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
        turns.append(Turn(speaker=speaker, text=entry.text("text"), bot=bot, meta=meta))
    speakers = data.texts("speakers", None)
    meta = {"speakers": speakers}
    meta.update({k: v for k, v in data.items() if k not in _DIALOGUE_KEYS})
    listed = data.texts("bots", None)
    if listed is not None:
        bots = listed
    source = data.text("source", None)
    if not source:
        source = "self-chat" if all_bot_ids and len(bots) == 1 and turns else "import"
    return Conversation(id=conv_id, bots=bots, turns=turns, source=source, meta=meta)


def read_acute_pairings(path: str | Path) -> Dataset:
    """Read an ACUTE-Eval pairings JSONL file into a Dataset (method ``acute``, no judgments).

    Dialogue ids are kept as strings; a dialogue id seen on several lines becomes one Conversation,
    and must show the same dialogue each time (another dialogue under a used id is an error naming
    both lines). Lines without ``dialogue_ids`` (onboarding) get ``<stem>-<line>-a/b``.
    Unit ids are a ``unit_id`` key when present, else ``<stem>-<line>``; an exactly repeated line is
    read once.
    """
    path = Path(path)
    conversations: dict[str, Conversation] = {}
    units: list[Unit] = []
    dialogue_ids = UniqueIds(path, "dialogue id", "dialogue_ids", repeats_expected=True)
    unit_ids = UniqueIds(path, "unit id", "unit_id")
    for line in json_lines(path):
        number = line.line
        for key in ("speakers_to_eval", "dialogue_dicts"):
            if key not in line:
                raise line.error("missing", key)
        speakers = line.texts("speakers_to_eval")
        dialogues = line.records("dialogue_dicts")
        if len(speakers) != 2:
            raise line.error("must list exactly two speakers", "speakers_to_eval")
        if len(dialogues) != 2:
            raise line.error("must hold exactly two dialogues", "dialogue_dicts")
        ids = line.texts("dialogue_ids", None)
        if ids is None:
            ids = [f"{path.stem}-{number}-a", f"{path.stem}-{number}-b"]
        if len(ids) != 2:
            raise line.error("must hold exactly two ids", "dialogue_ids")
        is_onboarding = line.boolean("is_onboarding", False)
        unit_id = line.ident("unit_id", None) or f"{path.stem}-{number}"
        if not unit_ids.add(unit_id, number, line.data):
            continue
        for i in range(2):
            conversation = _conversation(ids[i], speakers[i], dialogues[i])
            if dialogue_ids.add(ids[i], number, dialogues[i].data):
                conversations[ids[i]] = conversation
        payload: dict[str, Any] = {"speakers_to_eval": speakers, "is_onboarding": is_onboarding}
        payload.update({k: v for k, v in line.items() if k not in _LINE_KEYS})
        units.append(Unit(id=unit_id, kind=UNIT_KIND, conversation_ids=ids, payload=payload))
    unit_ids.finish()
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
