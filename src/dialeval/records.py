"""Plain records that every part of dialeval passes around.

Importers and generators produce them, the store saves and loads them, analysis turns them into
DataFrames. They carry no database ids: `id` fields are the stable external ids (a conversation id
from a data set, a worker hash, ...), unique within one study.

Judgment values, per method (the contract between importers, the web app and the analysis):

- acute:             {"winner": <conversation id chosen>, "loser": <conversation id>}
                     unit.conversation_ids = [conv_a, conv_b]; unit.payload["speakers_to_eval"] = [bot_a, bot_b]
- pairwise-turn:     {"turn": i (1-based bot turn), "chosen": <bot>, "other": <bot>}
                     one judgment per bot turn; the unit's conversation holds both candidates per turn
- single-model:      per turn: {"turn": i, "engaging": bool, "humanlike": bool, "interesting": bool}
                     question = "turn"; at the end question = "dialog":
                     {"engaging": 1..5, "humanlike": 1..5, "interesting": 1..5}
- spot-the-bot:      {"segment_exchanges": k, "entity0": "human"|"bot"|"unsure", "entity1": ...,
                      "decision_turn0": int|None, "decision_turn1": int|None,
                      "fluency": 0|1|"tie", "sensibleness": 0|1|"tie", "specificity": 0|1|"tie"}
                     (feature values name the entity that did better; None where not answered)
- arena:             question "battle": {"model_a": bot, "model_b": bot,
                      "winner": "model_a"|"model_b"|"tie"|"tie (bothbad)", "turn"?: int,
                      "conversation_a"?/"conversation_b"?: conversation ids when the text was imported,
                      "anonymous"?: false when a bot named itself (live battles; not ranked),
                      "revealed"?: [bots that named themselves]}
- prompts:           question "overall" (and one per protocol.criteria id): the arena's shape with
                     "model_a" = the system whose answer was shown as A, plus "prompt_id",
                     "conversation_a"/"conversation_b" (answer:<system>:<prompt id>); practice and
                     attention checks: question "onboarding" / "check", meta {"check": true, "passed"}
- direct-assessment: {"robotic": 0..100, "interesting": ..., "fun": ..., "consistent": ...,
                      "fluent": ..., "repetitive": ..., "topic": ...}   raw slider positions, negatives NOT reversed
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

DA_CRITERIA = ("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic")
DA_NEGATIVE = ("robotic", "repetitive")
SM_QUALITIES = ("engaging", "humanlike", "interesting")
STB_FEATURES = ("fluency", "sensibleness", "specificity")

# The platform of an LLM judge's annotator (`dialeval judge`, arena `--judges` files): its judgments
# are kept out of every human statistic unless the report is asked to include them.
JUDGE_PLATFORM = "judge"
_LEGACY_JUDGE_PLATFORMS = ("llm-judge",)  # arena imports made before the two were unified


# The platform of a `dialeval simulate` annotator (who entered through the study link, Prolific or
# volunteer link as `AnnotatorRow.meta["entered_as"]` says): never paid, never mixed silently into
# a report of real annotators (report/build.py, the admin's approvals).
SIMULATED_PLATFORM = "simulated"


def is_simulated_annotator(annotator: Annotator) -> bool:
    """True for an annotator of `dialeval simulate` (never a person)."""
    return annotator.platform == SIMULATED_PLATFORM


def judge_annotator_id(judge_name: str) -> str:
    """The annotator id under which `dialeval judge --bot NAME` stores a judge's answers."""
    return f"judge-{judge_name}"


def is_judge_annotator(annotator: Annotator) -> bool:
    """True for the annotator of an LLM judge (never a person)."""
    return annotator.platform == JUDGE_PLATFORM or annotator.platform in _LEGACY_JUDGE_PLATFORMS


@dataclass
class Turn:
    """One message. `speaker` is 'human', 'bot', or an entity label such as 'entity0'/'entity1'.

    `bot` names the system that produced it (None for a person). A seed turn comes from a corpus
    and is never attributed to a bot. `candidates` (PW-Turn) lists every bot's reply for this turn
    as [{"bot": name, "text": ...}], and `chosen` is the index of the one that continued.
    """

    speaker: str
    text: str
    bot: str | None = None
    is_seed: bool = False
    candidates: list[dict[str, Any]] | None = None
    chosen: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Conversation:
    """An ordered list of turns. `bots` lists the systems in it, in entity order (entity0 first)."""

    id: str
    bots: list[str]
    turns: list[Turn]
    source: str = "import"  # self-chat | bot-bot | live | human | import
    meta: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # set when generation failed; the turns so far are kept


@dataclass
class Annotator:
    id: str
    platform: str = "import"  # link | prolific | mturk | volunteer | simulated | import | judge
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Unit:
    """One piece of work shown to one annotator: a pair of conversations, a segment, a package, a chat."""

    id: str
    kind: str
    conversation_ids: list[str] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass
class Judgment:
    annotator_id: str
    unit_id: str | None
    question: str
    value: Any
    conversation_id: str | None = None
    justification: str | None = None
    elapsed_s: float | None = None
    created_at: datetime | None = None
    shown_order: list[str] | None = None  # what was shown left-to-right / in order
    meta: dict[str, Any] = field(default_factory=dict)


class JudgmentColumns(Sequence[Judgment]):
    """A study's judgments of one question held as columns (a pandas DataFrame, one row per
    judgment in store order) instead of objects: what a report on a million judgments loads
    (Store.load_dataset with a method's report_columns). ``frame`` has ``annotator``, ``unit``,
    ``conversation``, ``question``, ``elapsed_s``, ``judgment_id``, ``assignment_id``, ``excluded``,
    and ``value.<key>`` / ``meta.<key>`` for the keys the method's analysis reads; analyses read the
    frame. Iterating gives Judgment objects holding just those fields, for code that takes a list."""

    def __init__(self, frame: Any, value_keys: list[str], meta_keys: list[str]):
        self.frame, self.value_keys, self.meta_keys = frame, value_keys, meta_keys

    def __len__(self) -> int:
        return len(self.frame)

    def where(self, mask: Any) -> JudgmentColumns:
        """The judgments where the boolean Series `mask` is true."""
        return JudgmentColumns(self.frame[mask].reset_index(drop=True), self.value_keys, self.meta_keys)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self._judgment(row) for row in self.frame.iloc[k].to_dict(orient="records")]
        return self._judgment(self.frame.iloc[k].to_dict())

    def __iter__(self) -> Iterator[Judgment]:
        for row in self.frame.to_dict(orient="records"):
            yield self._judgment(row)

    def _judgment(self, row: dict[str, Any]) -> Judgment:
        def present(x: Any) -> bool:
            return x is not None and x == x  # NaN: missing

        value = {k: plain_value(row[f"value.{k}"]) for k in self.value_keys if present(row[f"value.{k}"])}
        meta = {k: plain_value(row[f"meta.{k}"]) for k in self.meta_keys if present(row[f"meta.{k}"])}
        meta.update(judgment_id=int(row["judgment_id"]), assignment_id=plain_value(row["assignment_id"]))
        if present(row["excluded"]):
            meta["excluded"] = row["excluded"]
        elapsed = row["elapsed_s"]
        return Judgment(
            annotator_id=row["annotator"],
            unit_id=row["unit"] if present(row["unit"]) else None,
            question=row["question"],
            value=value,
            conversation_id=row["conversation"] if present(row["conversation"]) else None,
            elapsed_s=float(elapsed) if present(elapsed) else None,
            meta=meta,
        )


def plain_value(x: Any) -> Any:
    """A numpy scalar as the Python value; NaN as None."""
    if x is None or (isinstance(x, float) and x != x):
        return None
    return x.item() if hasattr(x, "item") else x


@dataclass
class RecordBatch:
    """Records of an import read a batch at a time, in file order (Store.save_batches): a Dataset's,
    but each conversation's turns come as plain (speaker, text, bot) tuples in `turns` (one list per
    conversation, in the same order; the other Turn fields at their defaults) and its own `turns` is
    empty: a hundred thousand rated dialogues hold millions of turns, too many to build as objects.
    `annotators` are those first seen in the batch; the reader may add to their meta until the
    file is read (what is stored is their meta then)."""

    conversations: list[Conversation] = field(default_factory=list)
    turns: list[list[tuple[str, str, str | None]]] = field(default_factory=list)
    annotators: list[Annotator] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)


def plain_turns(conversations: Sequence[Conversation]) -> list[list[tuple[str, str, str | None]]] | None:
    """Every conversation's turns as RecordBatch's plain (speaker, text, bot) tuples, or None when
    some turn holds more (a seed, candidates, a choice, meta) or a record is of a subclass: stored
    and hashed (RecordsDigest) the same either way, the plain ones without a conversion per turn."""
    plain = []
    for c in conversations:
        if type(c) is not Conversation:
            return None
        turns = []
        for t in c.turns:
            if type(t) is not Turn or t.is_seed is not False or t.candidates is not None or t.chosen is not None:
                return None
            if type(t.meta) is not dict or t.meta:
                return None
            turns.append((t.speaker, t.text, t.bot))
        plain.append(turns)
    return plain


@dataclass
class Dataset:
    """Everything one import or one generation run produces, ready for the store or for analysis."""

    method: str
    conversations: list[Conversation] = field(default_factory=list)
    annotators: list[Annotator] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def conversation_map(self) -> dict[str, Conversation]:
        return {c.id: c for c in self.conversations}
