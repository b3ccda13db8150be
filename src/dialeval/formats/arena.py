"""Chatbot Arena battles: one vote between two models a record.

The shape of the public LMSYS releases (``clean_battle_*.json``, ``arena_33k``, the PPR judge files in
``../shared/data/arena-judges``)::

    {"model_a": "gpt-4", "model_b": "vicuna-13b",
     "winner": "model_a" | "model_b" | "tie" | "tie (bothbad)",
     "judge": "arena_user_42", "turn": 1, "tstamp": 1682351591.1,      # optional
     "question_id": "...", "num": 17,                                  # optional battle ids
     "conversation_a": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}],
     "conversation_b": [...]}                                          # optional text

Files: JSON lines, a JSON list of such objects, CSV or Parquet (by extension). ``both_bad`` and
``bothbad`` read as ``tie (bothbad)``; MT-Bench's ``tie (inconsistent)`` as ``tie``.

Reading gives a Dataset of method ``arena``: one Judgment per battle (question ``battle``) whose
value is ``{"model_a", "model_b", "winner", "turn"}`` (plus ``conversation_a``/``conversation_b``
ids when the text is present, each a Conversation ``<battle>/a`` of that model); the annotator is
``judge`` or, without it, ``judge_name`` (default ``crowd``). The battle id is ``num`` (or
``battle_id``): a line repeating an earlier battle exactly is read once, the id reused for another
battle is an error naming both lines. Without one it is ``question_id`` (several battles may ask
one question: a repeat gets ``-<line>``), else the line. Judges' files of the same battles
share it, which is what ``judge_files`` uses: each file's verdicts are added as judgments of an
annotator named after the file (platform ``judge``, records.JUDGE_PLATFORM), so a later analysis can set them against
the crowd; the leaderboard uses the other annotators only.

Items judged more than once (several people on one prompt and model pair, as in FastChat's MT-Bench
human judgments; a judge asked in both side orders) are recognised by ``item_id`` when a record has
one, else by ``question_id`` + ``turn`` + the two models in either order (``81/t1/alpaca-13b|gpt-4``).
That key is stored as the judgment's ``meta["item"]``: the judge audit measures people's agreement
with each other on it, and a judge's records of one item in both side orders are its swapped pair
(position consistency). A judge file's records are matched to the battle file by that key when they
have one (so a judge may answer each item twice, once per order), else by battle id as above.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats.reading import INT_LIMIT, Record, UniqueIds, json_lines, parse_json, read_text, records_of
from dialeval.records import JUDGE_PLATFORM, Annotator, Conversation, Dataset, Judgment, Turn
from dialeval.textclean import clean_imported

METHOD = "arena"
QUESTION = "battle"
OUTCOMES = ("model_a", "model_b", "tie", "tie (bothbad)")
_LAST_STAMP = 253402300799  # 9999-12-31, the last second a datetime holds
_ALIASES = {
    "both_bad": "tie (bothbad)",
    "bothbad": "tie (bothbad)",
    "tie(bothbad)": "tie (bothbad)",
    "tie (inconsistent)": "tie",  # MT-Bench's GPT-4 verdict that changed with the side order
}


def _records(path: Path) -> Iterator[Record]:
    """A Record (with its line or row number) per battle of JSONL, a JSON list, CSV or Parquet."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet"):
        import pandas as pd

        # CSV is decoded by the reading layer (encoding, byte-order mark, a clear decoding error)
        source: Any = io.StringIO(read_text(path)) if suffix == ".csv" else path
        try:
            frame = pd.read_csv(source) if suffix == ".csv" else pd.read_parquet(source)
        except Exception as exc:  # pandas raises many types; the message says what is wrong
            raise ImportFormatError(str(path), f"cannot read the table: {exc}") from None
        first = 2 if suffix == ".csv" else 1  # CSV: line 1 is the header
        for k, row in enumerate(frame.to_dict(orient="records")):
            record = {str(key): _plain(value) for key, value in row.items()}
            yield Record(clean_imported(record, str(path), k + first), path, k + first)
        return
    if suffix == ".json":
        text = read_text(path)
        if text.lstrip().startswith("["):
            for item in records_of(parse_json(text, path), path, "a battle (a JSON object)"):
                yield Record(clean_imported(item.data, str(path), item.line), path, item.line)
            return
    yield from json_lines(path, "a battle (a JSON object)")


def _plain(value: Any) -> Any:
    """numpy scalars and arrays from pandas -> plain Python; NaN (an empty cell) -> None."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "isoformat"):  # a timestamp column
        return str(value)
    return value


def normalise_winner(raw: Any) -> str | None:
    """One of OUTCOMES, or None when `raw` is not a known outcome."""
    if not isinstance(raw, str):
        return None
    low = raw.strip().lower()
    low = _ALIASES.get(low, low)
    return low if low in OUTCOMES else None


def _turns(record: Record, key: str, model: str) -> list[Turn]:
    turns = []
    for m in record.records(key):
        if "content" not in m:
            raise m.error("a message needs role and content", "content")
        role = m.text("role", "")
        if role == "system":
            continue
        bot = role in ("assistant", "model", "bot")
        turns.append(Turn(speaker="bot" if bot else "human", text=m.text("content"), bot=model if bot else None))
    return turns


class _BattleIds:
    """Battle ids of one file: ``num`` or ``battle_id`` name a battle (a repeat is read once, the id
    reused for another battle is an error naming both lines); ``question_id`` names a question,
    which several battles may share (a repeat gets ``-<line>``); else the line."""

    def __init__(self, path: Path):
        self.unique = UniqueIds(path, "battle id")
        self.seen: set[str] = set()

    def of(self, record: Record) -> str | None:
        """The battle id, or None for an exact repeat of an earlier battle (skip it)."""
        data = record.data
        for key in ("num", "battle_id"):
            if data.get(key) not in (None, ""):
                battle = record.ident(key)
                self.unique.field = key
                return battle if self.unique.add(battle, record.line, record.data) else None
        battle = data.get("question_id")
        if not (type(battle) is str and battle.strip()):
            battle = record.ident("question_id", None) or f"line-{record.line}"
        if battle in self.seen:
            battle = f"{battle}-{record.line}"
        self.seen.add(battle)
        return battle


def item_key(record: Record | Mapping[str, Any]) -> str | None:
    """The item a record judges: its ``item_id``, else question + turn + the unordered model pair;
    None when the record names no question (each battle is then its own item)."""
    if record.get("item_id") not in (None, ""):
        return str(record["item_id"])
    if record.get("question_id") in (None, ""):
        return None
    pair = "|".join(sorted((str(record.get("model_a")), str(record.get("model_b")))))
    turn = record.get("turn")
    return f"{record['question_id']}/t{turn}/{pair}" if turn not in (None, "") else f"{record['question_id']}/{pair}"


def iter_battles(path: Path, judge_name: str = "crowd") -> Iterator[tuple[str, dict, datetime | None, dict, list]]:
    """Each battle of a battle file, checked, as (judge, value, created_at, meta, conversations), in
    file order and one at a time: `dialeval import arena` streams them into the store (constant
    memory but for the battle ids kept to find repeats). Exact repeats are skipped (a note says so)."""
    ids = _BattleIds(path)
    for record in _records(path):
        battle = _plain_battle(record.data, record.line, ids) if type(record.data) is dict else None
        if battle is None:
            battle = _battle(record, ids, judge_name)
        if battle is not None:
            yield battle
    ids.unique.finish()


def stream_battles(path: str | Path, judge_name: str = "crowd") -> Iterator[tuple[Annotator, Judgment, list]]:
    """The streamed import of a battle file (ImportFormat.stream): (annotator, judgment,
    conversations) per battle, as read_arena_battles makes them, one at a time."""
    annotators: dict[str, Annotator] = {}
    for judge, value, created, meta, conversations in iter_battles(Path(path), judge_name):
        annotator = annotators.get(judge)
        if annotator is None:
            annotator = annotators[judge] = Annotator(id=judge, platform="import", meta=_pooled(judge, judge_name))
        # positional (annotator_id, unit_id, question, value, conversation_id, justification,
        # elapsed_s, created_at, shown_order, meta): half the cost of keywords, a million times
        judgment = Judgment(
            judge, None, QUESTION, value, None, None, None, created, [value["model_a"], value["model_b"]], meta
        )
        yield annotator, judgment, conversations
    if not annotators:
        raise ImportFormatError(str(path), "no battles in this file")


# the outcomes as the releases spell them (normalise_winner of each is itself)
_EXACT_OUTCOMES = {o: o for o in OUTCOMES}


_Battle = tuple[str, dict, datetime | None, dict, list]  # judge, value, created_at, meta, conversations


def _plain_battle(data: dict, line: int | None, ids: _BattleIds) -> _Battle | None:
    """The battle `_battle` makes of a record in the releases' usual shape, without its getters
    (a million battles): every field of the plain type and range, a text question id and no
    other battle id, judge, no conversation text. None when anything is otherwise: `_battle`
    then reads it (and raises its errors)."""
    model_a, model_b, winner = data.get("model_a"), data.get("model_b"), data.get("winner")
    question, judge, turn, raw = data.get("question_id"), data.get("judge"), data.get("turn"), data.get("tstamp")
    if not (
        type(model_a) is str
        and type(model_b) is str
        and type(winner) is str
        and type(question) is str
        and type(judge) is str
        and type(turn) is int
        and type(raw) is float
        and winner in _EXACT_OUTCOMES
        and 1 <= turn <= INT_LIMIT
        and 0 <= raw <= _LAST_STAMP
        and data.get("num") is None
        and data.get("battle_id") is None
        and data.get("item_id") is None
        and data.get("conversation_a") is None
        and data.get("conversation_b") is None
        and model_a.strip()
        and model_b.strip()
        and question.strip()
        and judge.strip()
    ):
        return None
    # _BattleIds.of for a question id: several battles may ask one question
    battle, seen = question, ids.seen
    if battle in seen:
        battle = f"{battle}-{line}"
    seen.add(battle)
    pair = f"{model_a}|{model_b}" if model_a <= model_b else f"{model_b}|{model_a}"  # item_key's sorted pair
    meta = {"battle": battle, "item": f"{question}/t{turn}/{pair}", "question_id": question}
    for key in _META_KEYS_AFTER_QUESTION:
        if (extra := data.get(key)) is not None:
            meta[key] = extra
    value = {"model_a": model_a, "model_b": model_b, "winner": winner, "turn": turn}
    created = datetime.fromtimestamp(raw, tz=UTC) if raw else None
    return judge, value, created, meta, []


def _battle(record: Record, ids: _BattleIds, judge_name: str) -> tuple[str, dict, datetime | None, dict, list] | None:
    """The checked battle of one record, or None for an exact repeat of an earlier one."""
    # Fast paths: a field of the plain type and range the Record getter would accept is taken as it
    # is (what the getter returns); anything else goes through the getter, which raises its error.
    data = record.data
    model_a, model_b, winner = data.get("model_a"), data.get("model_b"), data.get("winner")
    plain = type(model_a) is str and type(model_b) is str and model_a.strip() and model_b.strip()
    winner = normalise_winner(winner) if plain else None
    if winner is None:
        for key in ("model_a", "model_b", "winner"):
            if data.get(key) in (None, ""):
                raise record.error("missing", key)
        winner = normalise_winner(record.text("winner"))
        if winner is None:
            raise record.error(f"unknown outcome {record['winner']!r}; expected one of {', '.join(OUTCOMES)}", "winner")
        model_a, model_b = record.text("model_a", empty=False), record.text("model_b", empty=False)
    model_a, model_b = str(model_a), str(model_b)  # (text by now: for the type checker)
    battle = ids.of(record)
    if battle is None:
        return None
    judge = data.get("judge")
    if not (type(judge) is str and judge.strip()):
        judge = record.ident("judge", None) or judge_name
    value: dict[str, Any] = {"model_a": model_a, "model_b": model_b, "winner": winner}
    turn = data.get("turn")
    if not (type(turn) is int and 1 <= turn <= INT_LIMIT):
        turn = record.integer("turn", None, minimum=1)
    if turn is not None:
        value["turn"] = turn
    conversations = []
    for side, model in (("a", model_a), ("b", model_b)):
        if data.get(f"conversation_{side}") is None:
            continue
        cid = f"{battle}/{side}"
        turns = _turns(record, f"conversation_{side}", model)
        conversations.append(Conversation(id=cid, bots=[model], turns=turns, meta={"battle": battle}))
        value[f"conversation_{side}"] = cid
    created = None
    raw = data.get("tstamp")
    stamp: float | None
    if isinstance(raw, (float, int)) and not isinstance(raw, bool) and 0 <= raw <= _LAST_STAMP:
        stamp = float(raw)
    else:
        stamp = record.number("tstamp", None, minimum=0, maximum=_LAST_STAMP)
    if stamp:
        created = datetime.fromtimestamp(stamp, tz=UTC)
    meta = {"battle": battle}
    item = item_key(data)
    if item is not None:  # several votes on one item (either side order): people's agreement, judges' consistency
        meta["item"] = item
    meta.update({k: data[k] for k in _META_KEYS if data.get(k) is not None})
    return judge, value, created, meta, conversations


_META_KEYS = ("question_id", "num", "language", "anony", "category")
_META_KEYS_AFTER_QUESTION = ("language", "anony", "category")  # (a plain battle has no num)


def _pooled(judge: str, judge_name: str) -> dict[str, Any]:
    """Without a "judge" field every vote is the release's anonymous crowd: one id, many people."""
    return {"pooled": True} if judge == judge_name else {}


def read_arena_battles(
    path: str | Path, judge_name: str = "crowd", judge_files: list[str | Path] | None = None
) -> Dataset:
    """Read a Chatbot Arena battle file (and optional judges' verdict files on the same battles)."""
    path = Path(path)
    if not path.exists():
        raise ImportFormatError(str(path), "file not found; check the path")
    dataset = Dataset(method=METHOD, meta={"format": "arena", "path": str(path)})
    annotators: dict[str, Annotator] = {}
    battles: dict[str, tuple[str, str]] = {}
    items: dict[str, str | None] = {}  # battle -> the item it judges
    for judge, value, created, meta, conversations in iter_battles(path, judge_name):
        model_a, model_b = value["model_a"], value["model_b"]
        battles[meta["battle"]] = (model_a, model_b)
        items[meta["battle"]] = meta.get("item")
        if judge not in annotators:
            annotators[judge] = Annotator(id=judge, platform="import", meta=_pooled(judge, judge_name))
        dataset.conversations.extend(conversations)
        dataset.judgments.append(
            Judgment(
                annotator_id=judge,
                unit_id=None,
                question=QUESTION,
                value=value,
                created_at=created,
                shown_order=[model_a, model_b],
                meta=meta,
            )
        )
    if not dataset.judgments:
        raise ImportFormatError(str(path), "no battles in this file")
    for judge_file in judge_files or []:
        _add_judge_file(dataset, Path(judge_file), battles, annotators, items)
    dataset.annotators = list(annotators.values())
    dataset.meta["battles"] = len(battles)
    return dataset


def _add_judge_file(
    dataset: Dataset,
    path: Path,
    battles: dict[str, tuple[str, str]],
    annotators: dict[str, Annotator],
    items: dict[str, str | None],
) -> None:
    """A judge's verdicts on the battles already read: the same items (either side order), or, for
    records without a question id, the same battle ids and the same two models."""
    if not path.exists():
        raise ImportFormatError(str(path), "judge file not found; check the path")
    judge = path.stem
    if judge in annotators:
        raise ImportFormatError(str(path), f"judge '{judge}' is already an annotator of this import")
    annotators[judge] = Annotator(id=judge, platform=JUDGE_PLATFORM, meta={"file": str(path)})
    ids = _BattleIds(path)
    known_items = {item for item in items.values() if item is not None}
    for record in _records(path):
        line = record.line
        models = (record.text("model_a", ""), record.text("model_b", ""))
        item = item_key(record)
        ids_given = [str(record[k]) for k in ("num", "battle_id", "question_id") if record.get(k) not in (None, "")]
        named = ids_given[0] if ids_given else None
        same_battle = named is not None and battles.get(named) == models and items.get(named) == item
        if item is not None and not same_battle and (item in known_items or named not in battles):
            # not the battle file's line (several verdicts per item, either side order): matched by item
            _add_judge_record(dataset, path, judge, line, record, item, known_items)
            continue
        battle = ids.of(record)
        if battle is None:
            continue
        if battle not in battles:
            raise ImportFormatError(str(path), f"battle {battle} is not in the battle file", line=line)
        if models != battles[battle]:
            raise ImportFormatError(
                str(path),
                f"battle {battle} is {battles[battle][0]} vs {battles[battle][1]} in the battle file, "
                f"{models[0]} vs {models[1]} here",
                line=line,
            )
        winner = normalise_winner(record.get("winner"))
        if winner is None:
            raise ImportFormatError(str(path), f"unknown outcome {record.get('winner')!r}", line=line, field="winner")
        dataset.judgments.append(
            Judgment(
                annotator_id=judge,
                unit_id=None,
                question=QUESTION,
                value={"model_a": models[0], "model_b": models[1], "winner": winner},
                shown_order=list(models),
                meta={"battle": battle, "judge_file": path.name, **({"item": item} if item else {})},
            )
        )
    ids.unique.finish()


def _add_judge_record(
    dataset: Dataset, path: Path, judge: str, line: int | None, record: Record, item: str, items: set[str]
) -> None:
    """One judge answer matched by item: the side order is the record's own (model_a shown first)."""
    if item not in items:
        raise ImportFormatError(str(path), f"item {item} is not in the battle file", line=line)
    winner = normalise_winner(record.get("winner"))
    if winner is None:
        raise ImportFormatError(str(path), f"unknown outcome {record.get('winner')!r}", line=line, field="winner")
    models = [str(record["model_a"]), str(record["model_b"])]
    dataset.judgments.append(
        Judgment(
            annotator_id=judge,
            unit_id=None,
            question=QUESTION,
            value={"model_a": models[0], "model_b": models[1], "winner": winner},
            shown_order=models,
            meta={"battle": f"{path.stem}:{line}", "item": item, "judge_file": path.name},
        )
    )
