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
``bothbad`` read as ``tie (bothbad)``.

Reading gives a Dataset of method ``arena``: one Judgment per battle (question ``battle``) whose
value is ``{"model_a", "model_b", "winner", "turn"}`` (plus ``conversation_a``/``conversation_b``
ids when the text is present, each a Conversation ``<battle>/a`` of that model); the annotator is
``judge`` or, without it, ``judge_name`` (default ``crowd``). The battle id is ``num``, else
``question_id``, else the line (a repeated id gets ``-<line>``): judges' files of the same battles
share it, which is what ``judge_files`` uses: each file's verdicts are added as judgments of an
annotator named after the file (platform ``judge``, records.JUDGE_PLATFORM), so a later analysis can set them against
the crowd; the leaderboard uses the other annotators only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats import iter_jsonl
from dialeval.records import JUDGE_PLATFORM, Annotator, Conversation, Dataset, Judgment, Turn

METHOD = "arena"
QUESTION = "battle"
OUTCOMES = ("model_a", "model_b", "tie", "tie (bothbad)")
_ALIASES = {"both_bad": "tie (bothbad)", "bothbad": "tie (bothbad)", "tie(bothbad)": "tie (bothbad)"}


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, record) for JSONL, a JSON list, CSV or Parquet."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet"):
        import pandas as pd

        try:
            frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
        except Exception as exc:  # pandas raises many types; the message says what is wrong
            raise ImportFormatError(str(path), f"cannot read the table: {exc}") from None
        first = 2 if suffix == ".csv" else 1  # CSV: line 1 is the header
        for k, row in enumerate(frame.to_dict(orient="records")):
            yield k + first, {key: _plain(value) for key, value in row.items()}
        return
    if suffix == ".json":
        text = path.read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(str(path), f"not valid JSON ({exc.msg})", line=exc.lineno) from None
            for k, record in enumerate(data, start=1):
                if not isinstance(record, dict):
                    raise ImportFormatError(str(path), "each battle must be a JSON object", line=k)
                yield k, record
            return
    yield from iter_jsonl(path)


def _plain(value: Any) -> Any:
    """numpy scalars and arrays from pandas -> plain Python; NaN -> None."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and value != value:
        return None
    return value


def normalise_winner(raw: Any) -> str | None:
    """One of OUTCOMES, or None when `raw` is not a known outcome."""
    if not isinstance(raw, str):
        return None
    low = raw.strip().lower()
    low = _ALIASES.get(low, low)
    return low if low in OUTCOMES else None


def _turns(messages: Any, model: str, path: Path, line: int, field: str) -> list[Turn]:
    if not isinstance(messages, list):
        raise ImportFormatError(str(path), "must be a list of {role, content}", line=line, field=field)
    turns = []
    for k, m in enumerate(messages):
        if not isinstance(m, dict) or "content" not in m:
            raise ImportFormatError(str(path), "a message needs role and content", line=line, field=f"{field}[{k}]")
        role = str(m.get("role", ""))
        if role == "system":
            continue
        bot = role in ("assistant", "model", "bot")
        turns.append(Turn(speaker="bot" if bot else "human", text=str(m["content"]), bot=model if bot else None))
    return turns


def _battle_id(record: dict[str, Any], line: int, seen: set[str]) -> str:
    for key in ("num", "battle_id", "question_id"):
        if record.get(key) not in (None, ""):
            battle = str(record[key])
            break
    else:
        battle = f"line-{line}"
    if battle in seen:
        battle = f"{battle}-{line}"
    seen.add(battle)
    return battle


def read_arena_battles(
    path: str | Path, judge_name: str = "crowd", judge_files: list[str | Path] | None = None
) -> Dataset:
    """Read a Chatbot Arena battle file (and optional judges' verdict files on the same battles)."""
    path = Path(path)
    if not path.exists():
        raise ImportFormatError(str(path), "file not found; check the path")
    dataset = Dataset(method=METHOD, meta={"format": "arena", "path": str(path)})
    annotators: dict[str, Annotator] = {}
    seen: set[str] = set()
    battles: dict[str, tuple[str, str]] = {}
    for line, record in _records(path):
        for key in ("model_a", "model_b", "winner"):
            if record.get(key) in (None, ""):
                raise ImportFormatError(str(path), "missing", line=line, field=key)
        winner = normalise_winner(record["winner"])
        if winner is None:
            raise ImportFormatError(
                str(path),
                f"unknown outcome {record['winner']!r}; expected one of {', '.join(OUTCOMES)}",
                line=line,
                field="winner",
            )
        model_a, model_b = str(record["model_a"]), str(record["model_b"])
        battle = _battle_id(record, line, seen)
        battles[battle] = (model_a, model_b)
        judge = str(record.get("judge") or judge_name)
        if judge not in annotators:
            annotators[judge] = Annotator(id=judge, platform="import")
        value: dict[str, Any] = {"model_a": model_a, "model_b": model_b, "winner": winner}
        turn = record.get("turn")
        if turn is not None:
            try:
                value["turn"] = int(turn)
            except (TypeError, ValueError):
                raise ImportFormatError(str(path), f"not an integer: {turn!r}", line=line, field="turn") from None
        for side, model in (("a", model_a), ("b", model_b)):
            messages = record.get(f"conversation_{side}")
            if messages is None:
                continue
            cid = f"{battle}/{side}"
            turns = _turns(messages, model, path, line, f"conversation_{side}")
            dataset.conversations.append(Conversation(id=cid, bots=[model], turns=turns, meta={"battle": battle}))
            value[f"conversation_{side}"] = cid
        created = None
        stamp = record.get("tstamp")
        if isinstance(stamp, (int, float)) and stamp > 0:
            created = datetime.fromtimestamp(float(stamp), tz=UTC)
        meta = {"battle": battle}
        meta.update({k: record[k] for k in ("question_id", "num", "language", "anony") if record.get(k) is not None})
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
        _add_judge_file(dataset, Path(judge_file), battles, annotators)
    dataset.annotators = list(annotators.values())
    dataset.meta["battles"] = len(battles)
    return dataset


def _add_judge_file(
    dataset: Dataset, path: Path, battles: dict[str, tuple[str, str]], annotators: dict[str, Annotator]
) -> None:
    """A judge's verdicts on the battles already read: same battle ids, same two models."""
    if not path.exists():
        raise ImportFormatError(str(path), "judge file not found; check the path")
    judge = path.stem
    if judge in annotators:
        raise ImportFormatError(str(path), f"judge '{judge}' is already an annotator of this import")
    annotators[judge] = Annotator(id=judge, platform=JUDGE_PLATFORM, meta={"file": str(path)})
    seen: set[str] = set()
    for line, record in _records(path):
        battle = _battle_id(record, line, seen)
        if battle not in battles:
            raise ImportFormatError(str(path), f"battle {battle} is not in the battle file", line=line)
        models = (str(record.get("model_a")), str(record.get("model_b")))
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
                meta={"battle": battle, "judge_file": path.name},
            )
        )
