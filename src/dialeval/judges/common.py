"""What the judge adapters of the method packages (methods/<id>/judge.py) share: the question's
wording from the study file or the method's presets, reading a pairwise answer in either side
order, the people's judgments an item is compared with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..analysis.practice import is_practice
from ..questions import Question
from ..records import Conversation, Dataset, Judgment, Turn
from . import parse as p
from .prompts import lines
from .tasks import SWAPPED, Answer, JudgeTask

HUMAN = "human"
ACUTE_UNIT = "acute"  # the unit kind of an ACUTE comparison (onboarding units are another kind)


# -- shared helpers ----------------------------------------------------------------------------------
def question_wording(config: dict[str, Any], qid: str, presets: dict[str, Question]) -> Question:
    """The wording annotators see: the study file's text for this id, else the paper's preset."""
    for q in config.get("questions") or []:
        if q.get("id") == qid:
            preset = presets.get(qid)
            return Question(
                qid,
                q.get("text") or (preset.text if preset else qid),
                q.get("choice") or (preset.choice if preset else "{n}"),
            )
    return presets.get(qid, Question(qid, qid))


def first_is(order: str) -> int:
    """Index (0 or 1) of the canonical option shown first in this order."""
    return 0 if order == "AB" else 1


def pair_choice(text: str, order: str, key: str = "choice") -> int:
    """The canonical option (0 or 1) chosen in an answer {"choice": 1|2} given in `order`."""
    picked = p.choice(p.json_object(text), key, (1, 2), text)
    shown_first = first_is(order)
    return shown_first if picked == 1 else 1 - shown_first


def shown_order(options: list[str], swap: bool = True) -> Callable[[str], list[str]]:
    """What the judge saw first and second in an order (`swap`: the options trade places in BA)."""

    def shown(order: str) -> list[str]:
        if not swap:
            return list(options)
        first = first_is(order)
        return [options[first], options[1 - first]]

    return shown


def _agree(values: dict[str, Any]) -> Any | None:
    """The verdict of a swapped pair: the value both orders gave, else none."""
    a, b = values.get("AB"), values.get("BA")
    return a if a is not None and a == b else None


def pairwise_task(
    key: str,
    question: str,
    options: list[str],
    prompt: Callable[[str], str],
    parse: Callable[[str, str], Answer],
    *,
    unit_id: str | None = None,
    conversation_id: str | None = None,
    meta: dict[str, Any] | None = None,
) -> JudgeTask:
    """A question between two options, asked in both side orders; the verdict is the answer both
    orders agree on (so a judge that picks by position casts none)."""
    return JudgeTask(
        key=key,
        question=question,
        prompt=prompt,
        parse=parse,
        orders=SWAPPED,
        combine=_agree,
        unit_id=unit_id,
        conversation_id=conversation_id,
        shown=shown_order(options),
        meta=meta or {},
    )


def longer_chosen(len_a: int, len_b: int, chosen: int | None) -> bool | None:
    if chosen is None or len_a == len_b:
        return None
    return (len_a > len_b) == (chosen == 0)


def human_judgments(dataset: Dataset, question: str | None = None) -> list[Judgment]:
    units = {u.id: u for u in dataset.units}
    return [
        j
        for j in dataset.judgments
        if (question is None or j.question == question) and not is_practice(j, units.get(j.unit_id or ""))
    ]


def judged_first(tasks: list[JudgeTask], dataset: Dataset) -> list[JudgeTask]:
    """Items people judged come first, so a partial run already measures agreement."""
    judged = {j.unit_id for j in dataset.judgments} | {j.conversation_id for j in dataset.judgments}
    judged.discard(None)
    return sorted(tasks, key=lambda t: t.unit_id not in judged and t.conversation_id not in judged)


# -- ACUTE-Eval ------------------------------------------------------------------------------------
def eval_text(conv: Conversation, speaker: str, n: int) -> str:
    return lines(conv.turns, {speaker: f"Speaker {n}"}, default="Partner")


def eval_length(conv: Conversation, speaker: str) -> int:
    """Characters of the judged speaker's turns, as shown (seed turns included)."""
    return sum(len(t.text) for t in conv.turns if t.speaker == speaker)


def one_bot(conv: Conversation) -> str | None:
    bots = sorted({t.bot for t in conv.turns if t.bot})
    return bots[0] if len(bots) == 1 else None


def bot_turns(conv: Conversation) -> list[tuple[int, Turn]]:
    """(1-based bot turn, turn) for each bot turn of a live conversation."""
    out, n = [], 0
    for t in conv.turns:
        if t.speaker == "bot" and not t.is_seed:
            n += 1
            out.append((n, t))
    return out
