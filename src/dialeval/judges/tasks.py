"""What a judge is asked (`JudgeTask`), what a method offers judges (`JudgeAdapter`), and the labels
the audit compares (`Label`).

A task is one item of a study (an ACUTE unit, a battle, a PW-Turn turn, a segment, a conversation)
and one question. Pairwise tasks are asked in both side orders ("AB", then "BA": the two options
swapped); each order's answer is stored, and the judge's verdict (the method's judgment value) is
stored only when the two orders agree, so a position-driven judge casts no verdict on that item.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..records import Dataset

SINGLE = "-"  # the order name of a task asked once
SWAPPED = ("AB", "BA")


@dataclass
class Answer:
    """One parsed answer: the judgment value (the method's contract) and, for a pairwise question,
    whether the option shown first was chosen (None for a tie)."""

    value: Any
    chose_first: bool | None = None


@dataclass
class JudgeTask:
    key: str  # stable within the study: resuming skips keys already answered
    question: str  # the judgment's question, as the people's
    prompt: Callable[[str], str]  # order -> the full text sent to the judge
    parse: Callable[[str, str], Answer]  # (answer text, order) -> Answer; raises JudgeParseError
    orders: tuple[str, ...] = (SINGLE,)
    combine: Callable[[dict[str, Any]], Any | None] | None = None  # values by order -> verdict (None: none)
    unit_id: str | None = None
    conversation_id: str | None = None
    shown: Callable[[str], list[str]] | None = None  # order -> what was shown first, second
    meta: dict[str, Any] = field(default_factory=dict)

    def verdict(self, values: dict[str, Any]) -> Any | None:
        if self.combine is None:
            return values.get(SINGLE)
        return self.combine(values)


@dataclass
class Label:
    """One annotator's (or judge's) answer on one item, in a form the audit can compare."""

    item: str
    question: str
    annotator: str
    label: Any
    bots: tuple[str, ...] = ()
    chose_first: bool | None = None  # pairwise: the option shown first was chosen (None: tie or unknown)
    chose_longer: bool | None = None  # pairwise: the longer option was chosen (None: tie, equal or unknown)
    decisive: bool = True  # False for a tie / unsure: left out of the "decisive" agreement
    score: float | None = None  # pairwise: 1 if bots[0] was chosen, 0 if bots[1], 0.5 for a tie


@dataclass(frozen=True)
class JudgeAdapter:
    """A method's support for LLM judges: the tasks to ask on a study, and the labels to compare.

    Called like a function (the `judge` entry of a method's spec is "module:adapter"): adapter(dataset,
    config) -> tasks.
    """

    tasks: Callable[[Dataset, dict[str, Any]], list[JudgeTask]]
    labels: Callable[[Dataset], list[Label]]
    paired: bool = False  # answers choose between two options (position and length bias apply)
    agreement_scale: str = "the answer"  # how labels are compared, said in the report
    # the labels of judgments held as columns (records.JudgmentColumns) as a DataFrame, one row per
    # label with its fields item, question, annotator, label, decisive, score, chose_longer: what the
    # people's section reads on a million battles without a million objects (None: Label objects)
    label_frame: Callable[[Dataset], Any] | None = None

    def __call__(self, dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
        return self.tasks(dataset, config)
