"""Read the Spot The Bot MongoDB export (jderiu/spot-the-bot-code, Deriu et al. (2020)).

A domain is three JSON-lines files in one folder (Mongo extended JSON, ``{"$oid": ...}`` and
``{"$numberLong": ...}`` wrappers):

- ``sampled-dialogues-full-<domain>.json``   conversations: ``_id, system_name0/1, system_type0/1,
  is_human0/1, convo[{exchange_nr, id, text}]``
- ``packed-dialogues-full-<domain>.json``    packages (HITs): ``package[{convo_id, start_turn}]``
- ``annotated-dialogues-full-<domain>.json`` one document per annotated segment

How the records look after import (``Dataset.method == "spot-the-bot"``):

- **Conversation**: ``id`` = the Mongo id, ``bots = [entity0, entity1]`` (entity order of the export).
  A bot is named by its ``system_type`` (``huggingface``, ``bert_rank``, ...); the uninformative type
  ``model`` (Blender) is replaced by its ``system_name`` (``zoo:blender/blender_90M/model``). By
  default these export names become the paper's short names (GPT, BR, S2, DR, BL; HF, LC, KV in
  the PersonaChat domain ``convai2``).
  Human–human conversations have ``source = "human"`` and ``bots = ["human", "human"]``; bot–bot
  conversations have ``source = "bot-bot"``. Turns alternate entity0, entity1, ... and carry
  ``speaker = "entity0" | "entity1"``, ``bot`` = the system (None for a person) and
  ``meta["exchange_nr"]``. The seed exchange of bot–bot conversations is not part of the export.
- **Unit**: one per package, ``kind = "stb-package"``, ``conversation_ids`` in package order and
  ``payload["segments"] = [{conversation_id, start_turn, exchanges}]``.
- **Annotator**: one per ``user_name`` (``platform = "mturk"``).
- **Judgment**: one per annotated segment, ``question = "spot-the-bot"``, ``unit_id`` = package id,
  value as in :mod:`dialeval.records` (labels ``human``/``bot``/``unsure``; a feature names the entity
  that did better, 0 or 1, ``"tie"`` when both were ticked, None when neither),
  ``elapsed_s`` (None when the export's start time is invalid), ``created_at`` = end time (UTC),
  ``shown_order`` = the two systems in entity order, ``meta = {package_id, annotation_id, start_turn}``.

``start_turn`` is the index of the last visible utterance, so a segment holds
``exchanges = (start_turn + 1) // 2`` exchanges (3/5/9 => 2/3/5; 1/3/5 => 1/2/3).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats.reading import MAX_DURATION_S, Record, UniqueIds, json_lines, type_name
from dialeval.formats.rename import rename_systems
from dialeval.records import Annotator, Conversation, Dataset, Judgment, Turn, Unit

METHOD = "spot-the-bot"
QUESTION = "spot-the-bot"
HUMAN = "human"

#: The paper's short names (Deriu et al. 2020, Table 1), keyed by system_type or system_name of the export.
#: The PersonaChat domain (``convai2``) calls the huggingface system HF, not GPT: see
#: :func:`paper_names`.
PAPER_NAMES: dict[str, str] = {
    "huggingface": "GPT",
    "bert_rank": "BR",
    "seq2seq_att": "S2",
    "suckybot": "DR",
    "model": "BL",
    "zoo:blender/blender_90M/model": "BL",
    "blender": "BL",
    "lost_in_conversation": "LC",
    "kvmemnn": "KV",
}

# domains whose huggingface system is the ConvAI2 entry "HF" (Deriu et al. 2020, Dialogue Systems)
_PERSONACHAT_DOMAINS = {"convai2", "personachat", "persona_chat"}


def paper_names(domain: str) -> dict[str, str]:
    """The paper's short names for one domain (GPT in DailyDialog/Empathetic, HF in PersonaChat)."""
    names = dict(PAPER_NAMES)
    if domain.lower() in _PERSONACHAT_DOMAINS:
        names["huggingface"] = "HF"
    return names


_FEATURES = {"fluency": "fluencyValue", "sensibleness": "sensitivenessValue", "specificity": "specificityValue"}
_GENERIC_TYPES = {"model", ""}


def exchanges_for_start_turn(start_turn: int) -> int:
    """Number of exchanges visible when the last visible utterance has index ``start_turn``."""
    return (int(start_turn) + 1) // 2


def label_of(is_human: Any) -> str:
    """The export's ``is_human`` (True / False / None) as a label."""
    if is_human is True:
        return "human"
    if is_human is False:
        return "bot"
    if is_human is None:
        return "unsure"
    raise ValueError(f"is_human must be true, false or null, got {is_human!r}")


def feature_winner(value0: bool | None, value1: bool | None) -> int | str | None:
    """The entity that did better on a feature: 0, 1, 'tie' (both ticked) or None (neither).
    Values are true, false or None (not given); the reader refuses anything else."""
    v0, v1 = value0 is True, value1 is True
    if v0 and v1:
        return "tie"
    if v0:
        return 0
    if v1:
        return 1
    return None


def _unwrap(value: Any) -> Any:
    """Strip Mongo extended-JSON wrappers recursively (ValueError/TypeError for a malformed one)."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == "$oid":
                if not isinstance(inner, str):
                    raise TypeError(f"$oid must be text, found {type_name(inner)}")
                return inner
            if key in ("$numberLong", "$numberInt"):
                if isinstance(inner, bool) or not isinstance(inner, (str, int)):
                    raise TypeError(f"{key} must be a whole number, found {type_name(inner)}")
                return int(inner)
            if key == "$numberDouble":
                if not isinstance(inner, str):
                    raise TypeError(f"$numberDouble must be text, found {type_name(inner)}")
                number = float(inner)
                if not math.isfinite(number):  # legal Mongo JSON, but nothing in this export is infinite
                    raise ValueError(f"$numberDouble {inner!r} is not a finite number")
                return number
            if key == "$date":
                return _unwrap(inner)
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def _lines(path: Path) -> Iterator[Record]:
    for record in json_lines(path):
        try:
            yield Record(_unwrap(record.data), path, record.line)
        except (TypeError, ValueError) as exc:
            raise record.error(f"malformed Mongo extended JSON ({exc})") from None


def _raw_name(system_type: str, system_name: str) -> str:
    if system_type in _GENERIC_TYPES:
        return system_name or system_type
    return system_type


def _renamed(raw: str, system_type: str, system_name: str, rename: dict[str, str] | None) -> str:
    if raw == HUMAN or not rename:
        return raw
    for key in (raw, system_name, system_type):
        if key in rename:
            return rename[key]
    return raw


def _read_conversations(path: Path, rename: dict[str, str] | None) -> list[Conversation]:
    conversations: list[Conversation] = []
    ids = UniqueIds(path, "conversation id", "_id")
    for doc in _lines(path):
        cid = doc.ident("_id")
        is_human = [doc.boolean(f"is_human{e}") for e in (0, 1)]
        types = [doc.text(f"system_type{e}") for e in (0, 1)]
        names = [doc.text(f"system_name{e}", "") for e in (0, 1)]
        bots = []
        for e in (0, 1):
            if is_human[e] or types[e] == HUMAN:
                bots.append(HUMAN)
            else:
                bots.append(_renamed(_raw_name(types[e], names[e]), types[e], names[e], rename))
        turns = []
        for i, utterance in enumerate(doc.records("convo")):
            if "text" not in utterance:
                raise doc.error(f"utterance {i} has no text", "convo")
            entity = i % 2
            turns.append(
                Turn(
                    speaker=f"entity{entity}",
                    text=utterance.text("text"),
                    bot=None if bots[entity] == HUMAN else bots[entity],
                    meta={"exchange_nr": utterance.get("exchange_nr"), "id": utterance.get("id")},
                )
            )
        if not ids.add(cid, doc.line, doc.data):
            continue
        both_human = bots == [HUMAN, HUMAN]
        if HUMAN in bots and not both_human:
            source = "import"  # human-bot conversations do not occur in the published data
        else:
            source = "human" if both_human else "bot-bot"
        conversations.append(
            Conversation(
                id=cid,
                bots=bots,
                turns=turns,
                source=source,
                meta={
                    "domain": doc.text("domain_name", None),
                    "system_type": types,
                    "system_name": names,
                    "is_human": is_human,
                },
            )
        )
    ids.finish()
    return conversations


def _read_packages(path: Path, known: dict[str, Conversation]) -> list[Unit]:
    units = []
    ids = UniqueIds(path, "package id", "_id")
    for doc in _lines(path):
        pid = doc.ident("_id")
        segments = []
        for entry in doc.records("package"):
            if "convo_id" not in entry or "start_turn" not in entry:
                raise doc.error("each package entry needs convo_id and start_turn", "package")
            cid = entry.ident("convo_id")
            if cid not in known:
                raise doc.error(f"package refers to unknown conversation {cid}", "package")
            # the index of the last utterance shown: one of the conversation's utterances
            last = max(len(known[cid].turns) - 1, 0)
            start_turn = entry.integer("start_turn", minimum=0, maximum=last)
            segments.append(
                {"conversation_id": cid, "start_turn": start_turn, "exchanges": exchanges_for_start_turn(start_turn)}
            )
        if not ids.add(pid, doc.line, doc.data):
            continue
        units.append(
            Unit(
                id=pid,
                kind="stb-package",
                conversation_ids=[str(s["conversation_id"]) for s in segments],
                payload={"segments": segments},
            )
        )
    ids.finish()
    return units


_LAST_MS = 253402300799_000  # 9999-12-31 in milliseconds, the last instant a datetime holds


def _ms_to_datetime(ms: float | None) -> datetime | None:
    if ms is None or ms <= 0:
        return None
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC)


def _read_annotations(
    path: Path, conversations: dict[str, Conversation], units: dict[str, Unit]
) -> tuple[list[Judgment], list[Annotator]]:
    judgments: list[Judgment] = []
    annotators: dict[str, Annotator] = {}
    start_turns = {
        uid: {s["conversation_id"]: s["start_turn"] for s in u.payload["segments"]} for uid, u in units.items()
    }
    ids = UniqueIds(path, "annotation id", "_id")
    for doc in _lines(path):
        line = doc.line
        cid = doc.ident("convo_id")
        pid = doc.ident("package_id")
        user = doc.ident("user_name")
        if cid not in conversations:
            raise ImportFormatError(str(path), f"annotation of unknown conversation {cid}", line=line, field="convo_id")
        if pid not in units:
            raise ImportFormatError(str(path), f"annotation of unknown package {pid}", line=line, field="package_id")
        if cid not in start_turns[pid]:
            raise ImportFormatError(
                str(path), f"conversation {cid} is not in package {pid}", line=line, field="convo_id"
            )
        start_turn = start_turns[pid][cid]
        entities = [doc.record(f"entity{e}_annotation") for e in (0, 1)]
        value: dict[str, Any] = {"segment_exchanges": exchanges_for_start_turn(start_turn)}
        for e, ann in enumerate(entities):
            if "is_human" not in ann:
                raise ann.error("missing", "is_human")
            try:
                value[f"entity{e}"] = label_of(ann["is_human"])
            except ValueError as exc:
                raise ann.error(str(exc), "is_human") from None
        turns = len(conversations[cid].turns)
        for e, ann in enumerate(entities):  # the utterance at which the annotator decided
            value[f"decision_turn{e}"] = ann.integer("decision_turn", None, minimum=0, maximum=max(turns, 1))
        for feature, key in _FEATURES.items():
            value[feature] = feature_winner(entities[0].boolean(key, None), entities[1].boolean(key, None))
        # the export marks a start time its clock missed as -1 (no duration then); below that is no time
        start = doc.number("start_time", None, minimum=-1, maximum=_LAST_MS)
        end = doc.number("end_time", None, minimum=0, maximum=_LAST_MS)
        elapsed = doc.number("elapsed_time", None, minimum=0)  # milliseconds
        elapsed_s = None
        if elapsed is not None and start is not None and start > 0:
            # (without a start time the export's elapsed time is meaningless, and ignored)
            elapsed_s = doc.number("elapsed_time", maximum=MAX_DURATION_S * 1000) / 1000.0
        annotation_id = doc.ident("_id", None)
        if annotation_id is not None and not ids.add(annotation_id, line, doc.data):
            continue
        if user not in annotators:
            annotators[user] = Annotator(id=user, platform="mturk")
        conv = conversations[cid]
        judgments.append(
            Judgment(
                annotator_id=user,
                unit_id=pid,
                question=QUESTION,
                value=value,
                conversation_id=cid,
                elapsed_s=elapsed_s,
                created_at=_ms_to_datetime(end),
                shown_order=list(conv.bots),
                meta={"package_id": pid, "annotation_id": str(annotation_id), "start_turn": start_turn},
            )
        )
    ids.finish()
    return judgments, list(annotators.values())


def read_spot_the_bot(
    folder: str | Path, domain: str, rename: dict[str, str] | None = None, *, use_paper_names: bool = True
) -> Dataset:
    """Read one domain of the Spot The Bot export in ``folder`` (``dailydialog``, ``empathetic`` or
    ``convai2``).

    Systems get the paper's short names (:func:`paper_names`: GPT, BR, S2, DR, BL; HF, LC, KV in
    PersonaChat) unless ``use_paper_names=False``, which keeps the export's ``system_type`` (or, for
    Blender's generic type ``model``, its ``system_name``). ``rename`` relabels systems on top of
    that (keys: system_type, system_name or the imported name) and wins over the paper names.
    ``"human"`` is never renamed.
    """
    folder = Path(folder)
    kinds = ("sampled", "packed", "annotated")
    if folder.is_file():
        # one of the export's three files given for its folder (the dump unpacks them side by side)
        if folder.name in {f"{kind}-dialogues-full-{domain}.json" for kind in kinds}:
            folder = folder.parent
        else:
            raise ImportFormatError(
                str(folder),
                f"a Spot The Bot import reads a folder: the one holding sampled-, packed- and "
                f"annotated-dialogues-full-{domain}.json (data_dump/MongoDump.zip unpacked)",
            )
    paths = {kind: folder / f"{kind}-dialogues-full-{domain}.json" for kind in kinds}
    for path in paths.values():
        if not path.exists():
            raise ImportFormatError(
                str(path), f"file not found; expected the Spot The Bot export of domain '{domain}' in {folder}"
            )
    names = {**(paper_names(domain) if use_paper_names else {}), **(rename or {})}
    conversations = _read_conversations(paths["sampled"], names or None)
    by_id = {c.id: c for c in conversations}
    units = _read_packages(paths["packed"], by_id)
    unit_map = {u.id: u for u in units}
    judgments, annotators = _read_annotations(paths["annotated"], by_id, unit_map)
    dataset = Dataset(
        method=METHOD,
        conversations=conversations,
        annotators=annotators,
        units=units,
        judgments=judgments,
        meta={"domain": domain, "format": "spot-the-bot-mongo", "folder": str(folder)},
    )
    if rename:  # a rename may also name a paper name (--rename DR=weak-s2s)
        rename_systems(dataset, {k: v for k, v in rename.items() if k != HUMAN})
    return dataset
