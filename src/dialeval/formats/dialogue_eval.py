"""Reader of the Dialogue-Eval MTurk batch CSV (Ji et al. 2022).

One CSV row per MTurk assignment. `Answer.taskAnswers` is a JSON list holding one dict with, for
each of the six slots i = 0..5 of the HIT:

- `task{i}`: the bot (biencoder, polyencoder, kvmemnn, seq2seq, lan_model, or qc = degraded bot)
- `seed{i}`: the persona seed; the bot used a persona when seed <= 500
- `score{i}`: "a#b#c#d#e#f#g#", raw slider positions 0..100 for the seven criteria in
  `DA_CRITERIA` order (robotic and repetitive are NOT reversed)
- `dialogue{i}`: "u: ...###b: ...###"
- `topic{i}`, `topic_opinion{i}`, `topic_change_opinion{i}`, `topic_chatbot_opinion{i}`:
  "#<turn>@<value>#<turn>@<value>..." (the topic entered before the chat, then each change)

System names: the task name, plus "+persona" when the slot used a persona (`qc` never gets one).

Every run of the public release reads (free topic runs 1 and 2, ice-breaker). Their variants:

- An **empty submission** answers no slot: `[{}]` (free run 1) or only a comment,
  `[{"feedback": "..."}]` (free run 2, ice-breaker; rejected assignments). Its worker is kept as an
  annotator (it counts as a failed worker), its unit and its six assigned conversations (bots from
  `Input.u{i}`, no turns) are kept and flagged `empty_submission`, and it yields no judgments.
- A **partial submission** answers some slots only: the unanswered slots are kept like an empty
  submission's (flag `unanswered`), the answered ones are read as usual. A slot whose bot is known
  but whose scores are missing keeps its conversation (flag `unrated`) and yields no judgment.
- Keys the reader does not use (`feedback`, `error-message`, new per-slot keys) are ignored or kept
  in the unit payload; `AssignmentStatus` (Approved / Rejected / Submitted) is kept there too.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.formats.reading import MAX_DURATION_S, Record, UniqueIds, csv_rows, parse_json, type_name
from dialeval.records import DA_CRITERIA, Annotator, Conversation, Dataset, Judgment, RecordBatch, Turn, Unit
from dialeval.textclean import clean_imported

METHOD = "direct-assessment"
SLOTS = 6
QC_TASK = "qc"
PERSONA_SUFFIX = "+persona"
PERSONA_SEED_MAX = 500
REQUIRED_COLUMNS = ("HITId", "AssignmentId", "WorkerId", "Answer.taskAnswers")
_MARK = re.compile(r"#(\d+)@")
# the per-slot keys whose presence means the worker answered slot i
SLOT_KEYS = ("task", "score", "dialogue", "seed")


def system_name(task: str, persona: bool | None) -> str:
    """`biencoder` / `biencoder+persona`; the QC bot and unknown persona use stay bare."""
    if persona and task != QC_TASK:
        return task + PERSONA_SUFFIX
    return task


def parse_marked(text: str | None) -> list[dict[str, Any]]:
    """ "#0@dogs#4@cats" -> [{"turn": 0, "value": "dogs"}, {"turn": 4, "value": "cats"}]."""
    if not text:
        return []
    if not isinstance(text, str):
        raise TypeError(f"expected a '#<turn>@<value>' string, got {type_name(text)}")
    parts = _MARK.split(text)
    return [{"turn": int(parts[k]), "value": parts[k + 1]} for k in range(1, len(parts) - 1, 2)]


def parse_scores(text: Any) -> list[float]:
    """ "100#37#47#10#100#92#16#" -> seven floats; TypeError/ValueError with the reason otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"expected a '#'-separated string of {len(DA_CRITERIA)} numbers, got {text!r}")
    pieces = text.split("#")
    if pieces and pieces[-1].strip() == "":
        pieces = pieces[:-1]
    if len(pieces) != len(DA_CRITERIA):
        raise ValueError(
            f"expected {len(DA_CRITERIA)} scores ({', '.join(DA_CRITERIA)}), got {len(pieces)} in {text!r}"
        )
    values = []
    for name, piece in zip(DA_CRITERIA, pieces):
        try:
            v = float(piece)
        except ValueError:
            raise ValueError(f"score for {name} is not a number: {piece!r}") from None
        if math.isnan(v) or not 0 <= v <= 100:
            raise ValueError(f"score for {name} is out of range 0..100: {piece!r}")
        values.append(v)
    return values


def parse_dialogue(text: Any, bot: str) -> list[Turn]:
    """ "u: hi###b: hello###" -> Turns (u = human, b = bot); ValueError on an unknown prefix."""
    return [Turn(speaker=speaker, text=said, bot=by) for speaker, said, by in dialogue_turns(text, bot)]


def dialogue_turns(text: Any, bot: str) -> list[tuple[str, str, str | None]]:
    """parse_dialogue's turns as plain (speaker, text, bot) tuples (RecordBatch.turns)."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string 'u: ...###b: ...###', got {type(text).__name__}")
    pieces = text.split("###")
    if pieces and pieces[-1] == "":
        pieces = pieces[:-1]
    if not {piece[:2] for piece in pieces} <= {"u:", "b:"}:
        k, piece = next((k, p) for k, p in enumerate(pieces) if p[:2] not in ("u:", "b:"))
        raise ValueError(f"message {k + 1} starts with neither 'u:' nor 'b:': {piece[:40]!r}")
    return [("human", p[2:].strip(), None) if p[0] == "u" else ("bot", p[2:].strip(), bot) for p in pieces]


def _answers(raw: str, path: str, line: int) -> dict[str, Any]:
    field = "Answer.taskAnswers"
    data = clean_imported(parse_json(raw, path, line, field), path, line, field)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ImportFormatError(path, "expected a JSON list of objects", line=line, field=field)
    merged: dict[str, Any] = {}
    for d in data:
        merged.update(d)
    return merged


def _work_time(raw: str | None, path: str, line: int) -> float | None:
    if raw is None or str(raw).strip() == "":
        return None
    try:
        v = float(raw)
    except ValueError:
        raise ImportFormatError(path, f"not a number: {raw!r}", line=line, field="WorkTimeInSeconds") from None
    if not (math.isfinite(v) and 0 <= v <= MAX_DURATION_S):
        message = f"not a duration in seconds (0 to {MAX_DURATION_S:,}): {raw!r}"
        raise ImportFormatError(path, message, line=line, field="WorkTimeInSeconds")
    return v


def read_dialogue_eval_csv(
    path: str | Path, study_label: str | None = None, persona_seed_max: int = PERSONA_SEED_MAX
) -> Dataset:
    """Read a Dialogue-Eval MTurk batch CSV into a direct-assessment Dataset.

    Conversation ids are "<AssignmentId>/<slot>"; unit ids are the AssignmentId (kind "da-hit",
    the six conversation ids in slot order); one Judgment per rated conversation with question
    "ratings" and the seven raw slider positions. `elapsed_s` is WorkTimeInSeconds / 6 (the file has
    no per-conversation times; `meta["elapsed_estimated"]` says so).
    Raises ImportFormatError (with line and field) on a malformed row.
    """
    stream = DialogueEvalStream(path, study_label, persona_seed_max)
    ds = Dataset(method=METHOD)
    for batch in stream:
        for conv, turns in zip(batch.conversations, batch.turns):
            conv.turns = [Turn(speaker=speaker, text=said, bot=by) for speaker, said, by in turns]
        ds.conversations += batch.conversations
        ds.units += batch.units
        ds.judgments += batch.judgments
    ds.annotators = list(stream.annotators.values())
    ds.meta = stream.meta()
    return ds


BATCH_ROWS = 1000  # CSV rows per RecordBatch: about 6,000 conversations and 120,000 turns


class DialogueEvalStream:
    """The records of a Dialogue-Eval MTurk batch CSV a RecordBatch at a time (iterate it once), as
    read_dialogue_eval_csv reads them: what `dialeval import dialogue-eval` stores as it reads, so
    that memory does not grow with the file (but for the ids kept to find repeats and the workers).
    Once iterated: `annotators` (their meta complete only then), `meta()` (the Dataset's)."""

    def __init__(
        self,
        path: str | Path,
        study_label: str | None = None,
        persona_seed_max: int = PERSONA_SEED_MAX,
        batch_rows: int | None = None,
    ):
        self.path = Path(path)
        self.study_label = study_label or self.path.stem
        self.persona_seed_max = persona_seed_max
        self.batch_rows = batch_rows or BATCH_ROWS
        self.annotators: dict[str, Annotator] = {}
        self.empty: list[str] = []
        self.partial: set[str] = set()
        self.rows = 0

    def __iter__(self) -> Iterator[RecordBatch]:
        spath = str(self.path)
        seen = UniqueIds(spath, "assignment", "AssignmentId")
        records = csv_rows(self.path, REQUIRED_COLUMNS)
        try:
            first = next(records, None)
        except ImportFormatError as e:
            if e.field in REQUIRED_COLUMNS and e.line == 1:  # not in the header: say what file was expected
                message = f"missing column '{e.field}' (is this a Dialogue-Eval MTurk batch file?)"
                raise ImportFormatError(spath, message, 1, e.field) from None
            raise
        if first is None:
            raise ImportFormatError(spath, "no data rows")
        batch, rows = RecordBatch(), 0
        for record in itertools.chain((first,), records):
            rows += 1
            _read_row(record, spath, record.line or 0, batch, self, seen)
            if rows % self.batch_rows == 0:
                yield batch
                batch = RecordBatch()
        seen.finish()
        self.rows = rows
        yield batch

    def meta(self) -> dict[str, Any]:
        """The meta of read_dialogue_eval_csv's Dataset."""
        return {
            "source": "dialogue-eval",
            "path": str(self.path),
            "study_label": self.study_label,
            "rows": self.rows,
            "empty_submissions": self.empty,
            "persona_seed_max": self.persona_seed_max,
            "partial_submissions": sorted(self.partial),
        }


def _read_row(
    row: Record, path: str, line: int, batch: RecordBatch, stream: DialogueEvalStream, seen: UniqueIds
) -> None:
    for col in ("HITId", "AssignmentId", "WorkerId"):
        if not (row.get(col) or "").strip():
            raise ImportFormatError(path, "empty value", line=line, field=col)
    hit, assignment, worker = row["HITId"].strip(), row["AssignmentId"].strip(), row["WorkerId"].strip()
    if not seen.add(assignment, line, dict(row)):
        return  # the same row again: read once
    work_time = _work_time(row.get("WorkTimeInSeconds"), path, line)
    answers = _answers(row["Answer.taskAnswers"] or "", path, line)

    ann = stream.annotators.get(worker)
    if ann is None:
        ann = stream.annotators[worker] = Annotator(id=worker, platform="mturk", meta={"assignments": []})
        batch.annotators.append(ann)
    ann.meta["assignments"].append(assignment)

    base_meta = {"hit": hit, "assignment": assignment, "worker": worker, "work_time_s": work_time}
    conv_ids = [f"{assignment}/{i}" for i in range(SLOTS)]
    unit_payload: dict[str, Any] = {"hit": hit, "assignment": assignment, "worker": worker, "work_time_s": work_time}
    inputs = [(row.get(f"Input.u{i}") or "").strip() or None for i in range(SLOTS)]

    status = (row.get("AssignmentStatus") or "").strip() or None
    if status:
        unit_payload["assignment_status"] = status
    for key in ("feedback", "error-message"):
        if answers.get(key):
            unit_payload[key.replace("-", "_")] = answers[key]
    answered = [any(f"{key}{i}" in answers for key in SLOT_KEYS) for i in range(SLOTS)]

    def unanswered(i: int, why: str, flag: str) -> Conversation:
        task = inputs[i]
        return Conversation(
            id=conv_ids[i],
            bots=[task] if task else [],
            turns=[],
            source="live",
            meta={**base_meta, "slot": i, "model": task, "persona": None, "qc": task == QC_TASK, flag: True},
            error=why,
        )

    if not any(answered):
        # An empty submission: nothing was rated; keep who and what was assigned.
        stream.empty.append(assignment)
        ann.meta["empty_submission"] = True
        ann.meta.setdefault("empty_assignments", []).append(assignment)
        unit_payload["empty_submission"] = True
        unit_payload["unanswered_slots"] = list(range(SLOTS))
        for i in range(SLOTS):
            batch.conversations.append(
                unanswered(i, "empty submission: the worker submitted no conversation", "empty_submission")
            )
            batch.turns.append([])
        batch.units.append(Unit(id=assignment, kind="da-hit", conversation_ids=conv_ids, payload=unit_payload))
        return

    elapsed = work_time / SLOTS if work_time is not None else None
    systems: list[str | None] = []
    for i in range(SLOTS):
        if not answered[i]:
            unit_payload.setdefault("unanswered_slots", []).append(i)
            systems.append(inputs[i])
            batch.conversations.append(unanswered(i, "partial submission: this slot was not answered", "unanswered"))
            batch.turns.append([])
            continue
        task = answers.get(f"task{i}")
        if not isinstance(task, str) or not task.strip():
            raise ImportFormatError(
                path, f"missing bot name for slot {i}", line=line, field=f"Answer.taskAnswers.task{i}"
            )
        task = task.strip()
        seed_raw = answers.get(f"seed{i}")
        try:
            seed = int(str(seed_raw).strip())
        except (TypeError, ValueError):
            raise ImportFormatError(
                path, f"seed is not an integer: {seed_raw!r}", line=line, field=f"Answer.taskAnswers.seed{i}"
            ) from None
        persona = seed <= stream.persona_seed_max
        name = system_name(task, persona)
        systems.append(name)
        scores = None
        if answers.get(f"score{i}") not in (None, ""):
            try:
                scores = parse_scores(answers.get(f"score{i}"))
            except (TypeError, ValueError) as e:
                raise ImportFormatError(path, str(e), line=line, field=f"Answer.taskAnswers.score{i}") from None
        try:
            turns = dialogue_turns(answers.get(f"dialogue{i}", ""), name)
        except (TypeError, ValueError) as e:
            raise ImportFormatError(path, str(e), line=line, field=f"Answer.taskAnswers.dialogue{i}") from None
        marked = {}
        for key in ("topic", "topic_opinion", "topic_change_opinion", "topic_chatbot_opinion"):
            try:
                marked[key] = parse_marked(answers.get(f"{key}{i}"))
            except (TypeError, ValueError) as e:
                raise ImportFormatError(path, str(e), line=line, field=f"Answer.taskAnswers.{key}{i}") from None
        topics, opinions = marked["topic"], marked["topic_opinion"]
        meta = {
            **base_meta,
            "slot": i,
            "model": task,
            "seed": seed,
            "persona": persona and task != QC_TASK,
            "qc": task == QC_TASK,
            "assigned": inputs[i],
            "topic": topics[0]["value"] if topics else None,
            "topic_opinion": opinions[0]["value"] if opinions else None,
            "topics": topics,
            "topic_opinions": opinions,
            "topic_change_opinions": marked["topic_change_opinion"],
            "topic_chatbot_opinions": marked["topic_chatbot_opinion"],
        }
        if scores is None:
            meta["unrated"] = True
            unit_payload.setdefault("unrated_slots", []).append(i)
        batch.conversations.append(Conversation(id=conv_ids[i], bots=[name], turns=[], source="live", meta=meta))
        batch.turns.append(turns)
        if scores is None:
            continue
        batch.judgments.append(
            Judgment(
                annotator_id=worker,
                unit_id=assignment,
                question="ratings",
                value=dict(zip(DA_CRITERIA, scores)),
                conversation_id=conv_ids[i],
                elapsed_s=elapsed,
                meta={"hit": hit, "assignment": assignment, "slot": i, "elapsed_estimated": True},
            )
        )
    unit_payload["systems"] = systems
    if unit_payload.get("unanswered_slots"):
        stream.partial.add(assignment)
    batch.units.append(Unit(id=assignment, kind="da-hit", conversation_ids=conv_ids, payload=unit_payload))
