"""Read the Spot The Bot MongoDB export (jderiu/spot-the-bot-code, paper 001).

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

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats.rename import rename_systems
from dialeval.records import Annotator, Conversation, Dataset, Judgment, Turn, Unit

METHOD = "spot-the-bot"
QUESTION = "spot-the-bot"
HUMAN = "human"

#: The paper's short names (001, Table 1), keyed by system_type or system_name of the export.
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

# domains whose huggingface system is the ConvAI2 entry "HF" (paper 001, Dialogue Systems)
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


def feature_winner(value0: Any, value1: Any) -> int | str | None:
    """The entity that did better on a feature: 0, 1, 'tie' (both ticked) or None (neither)."""
    v0, v1 = bool(value0), bool(value1)
    if v0 and v1:
        return "tie"
    if v0:
        return 0
    if v1:
        return 1
    return None


def _unwrap(value: Any) -> Any:
    """Strip Mongo extended-JSON wrappers recursively."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == "$oid":
                return str(inner)
            if key in ("$numberLong", "$numberInt"):
                return int(inner)
            if key == "$numberDouble":
                return float(inner)
            if key == "$date":
                return _unwrap(inner)
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ImportFormatError(
            str(path), f"cannot open the file ({exc.strerror}); check the folder and domain"
        ) from exc
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(str(path), f"not valid JSON ({exc.msg})", line=number) from exc
            if not isinstance(doc, dict):
                raise ImportFormatError(str(path), "each line must be one JSON object", line=number)
            yield number, _unwrap(doc)


def _require(doc: dict[str, Any], key: str, path: Path, line: int, kind: type | tuple[type, ...] | None = None) -> Any:
    if key not in doc:
        raise ImportFormatError(str(path), "missing field", line=line, field=key)
    value = doc[key]
    if kind is not None and not isinstance(value, kind):
        raise ImportFormatError(
            str(path), f"expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}", line=line, field=key
        )
    return value


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
    seen: set[str] = set()
    for line, doc in _lines(path):
        cid = str(_require(doc, "_id", path, line))
        if cid in seen:
            raise ImportFormatError(str(path), f"duplicate conversation id {cid}", line=line, field="_id")
        seen.add(cid)
        is_human = [bool(_require(doc, f"is_human{e}", path, line)) for e in (0, 1)]
        types = [str(_require(doc, f"system_type{e}", path, line)) for e in (0, 1)]
        names = [str(doc.get(f"system_name{e}", "")) for e in (0, 1)]
        bots = []
        for e in (0, 1):
            if is_human[e] or types[e] == HUMAN:
                bots.append(HUMAN)
            else:
                bots.append(_renamed(_raw_name(types[e], names[e]), types[e], names[e], rename))
        convo = _require(doc, "convo", path, line, list)
        turns = []
        for i, utterance in enumerate(convo):
            if not isinstance(utterance, dict) or "text" not in utterance:
                raise ImportFormatError(str(path), f"utterance {i} has no text", line=line, field="convo")
            entity = i % 2
            turns.append(
                Turn(
                    speaker=f"entity{entity}",
                    text=str(utterance["text"]),
                    bot=None if bots[entity] == HUMAN else bots[entity],
                    meta={"exchange_nr": utterance.get("exchange_nr"), "id": utterance.get("id")},
                )
            )
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
                    "domain": doc.get("domain_name"),
                    "system_type": types,
                    "system_name": names,
                    "is_human": is_human,
                },
            )
        )
    return conversations


def _read_packages(path: Path, known: set[str]) -> list[Unit]:
    units = []
    for line, doc in _lines(path):
        pid = str(_require(doc, "_id", path, line))
        package = _require(doc, "package", path, line, list)
        segments = []
        for entry in package:
            if not isinstance(entry, dict) or "convo_id" not in entry or "start_turn" not in entry:
                raise ImportFormatError(
                    str(path), "each package entry needs convo_id and start_turn", line=line, field="package"
                )
            cid = str(entry["convo_id"])
            if cid not in known:
                raise ImportFormatError(
                    str(path), f"package refers to unknown conversation {cid}", line=line, field="package"
                )
            try:
                start_turn = int(entry["start_turn"])
            except (TypeError, ValueError) as exc:
                raise ImportFormatError(
                    str(path), f"start_turn is not an integer: {entry['start_turn']!r}", line=line, field="start_turn"
                ) from exc
            segments.append(
                {"conversation_id": cid, "start_turn": start_turn, "exchanges": exchanges_for_start_turn(start_turn)}
            )
        units.append(
            Unit(
                id=pid,
                kind="stb-package",
                conversation_ids=[str(s["conversation_id"]) for s in segments],
                payload={"segments": segments},
            )
        )
    return units


def _ms_to_datetime(ms: Any) -> datetime | None:
    if not isinstance(ms, (int, float)) or ms <= 0:
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
    for line, doc in _lines(path):
        cid = str(_require(doc, "convo_id", path, line))
        pid = str(_require(doc, "package_id", path, line))
        user = str(_require(doc, "user_name", path, line))
        if cid not in conversations:
            raise ImportFormatError(str(path), f"annotation of unknown conversation {cid}", line=line, field="convo_id")
        if pid not in units:
            raise ImportFormatError(str(path), f"annotation of unknown package {pid}", line=line, field="package_id")
        if cid not in start_turns[pid]:
            raise ImportFormatError(
                str(path), f"conversation {cid} is not in package {pid}", line=line, field="convo_id"
            )
        start_turn = start_turns[pid][cid]
        entities = [_require(doc, f"entity{e}_annotation", path, line, dict) for e in (0, 1)]
        value: dict[str, Any] = {"segment_exchanges": exchanges_for_start_turn(start_turn)}
        for e, ann in enumerate(entities):
            if "is_human" not in ann:
                raise ImportFormatError(str(path), "missing field", line=line, field=f"entity{e}_annotation.is_human")
            try:
                value[f"entity{e}"] = label_of(ann["is_human"])
            except ValueError as exc:
                raise ImportFormatError(str(path), str(exc), line=line, field=f"entity{e}_annotation.is_human") from exc
        for e, ann in enumerate(entities):
            turn = ann.get("decision_turn")
            value[f"decision_turn{e}"] = int(turn) if isinstance(turn, (int, float)) else None
        for feature, key in _FEATURES.items():
            value[feature] = feature_winner(entities[0].get(key), entities[1].get(key))
        start, end, elapsed = doc.get("start_time"), doc.get("end_time"), doc.get("elapsed_time")
        elapsed_s = None
        if isinstance(elapsed, (int, float)) and isinstance(start, (int, float)) and start > 0 and elapsed >= 0:
            elapsed_s = elapsed / 1000.0
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
                meta={"package_id": pid, "annotation_id": str(doc.get("_id")), "start_turn": start_turn},
            )
        )
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
    paths = {kind: folder / f"{kind}-dialogues-full-{domain}.json" for kind in ("sampled", "packed", "annotated")}
    for path in paths.values():
        if not path.exists():
            raise ImportFormatError(
                str(path), f"file not found; expected the Spot The Bot export of domain '{domain}' in {folder}"
            )
    names = {**(paper_names(domain) if use_paper_names else {}), **(rename or {})}
    conversations = _read_conversations(paths["sampled"], names or None)
    by_id = {c.id: c for c in conversations}
    units = _read_packages(paths["packed"], set(by_id))
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
