"""The LLM judge's adapter of this method (Method.judge): the tasks a judge answers on a study,
in the annotators' own wording, and the labels the audit sets against the people's."""

from __future__ import annotations

from typing import Any

from ...judges import parse as p
from ...judges.common import (
    HUMAN,
    human_judgments,
    judged_first,
    one_bot,
)
from ...judges.prompts import compose, lines
from ...judges.tasks import Answer, JudgeAdapter, JudgeTask, Label
from ...records import DA_CRITERIA, Conversation, Dataset
from .questions import DA_SCALE_LABELS, DA_STATEMENTS

_DA_NAMES = {HUMAN: "You", "bot": "Chatbot"}


def direct_assessment_tasks(dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
    rated = {j.conversation_id: j.unit_id for j in human_judgments(dataset, "ratings") if j.conversation_id}
    tasks = []
    for conv in dataset.conversations:
        if conv.error or one_bot(conv) is None or not any(t.speaker == "bot" for t in conv.turns):
            continue

        def prompt(order: str, conv: Conversation = conv) -> str:
            statements = "\n".join(f'"{c}": {DA_STATEMENTS[c]}' for c in DA_CRITERIA)
            return compose(
                f"Your conversation with a chatbot:\n{lines(conv.turns, _DA_NAMES)}",
                f"Rate each statement about the conversation from 0 ({DA_SCALE_LABELS[0]}) to 100 "
                f"({DA_SCALE_LABELS[1]}):\n{statements}",
                example="{" + ", ".join(f'"{c}": 50' for c in DA_CRITERIA) + "}",
            )

        def parse(text: str, order: str) -> Answer:
            obj = p.json_object(text)
            return Answer({c: p.number(obj, c, 0, 100, text, integer=False) for c in DA_CRITERIA})

        tasks.append(
            JudgeTask(
                key=f"da:{conv.id}",
                question="ratings",
                prompt=prompt,
                parse=parse,
                unit_id=rated.get(conv.id),
                conversation_id=conv.id,
            )
        )
    return judged_first(tasks, dataset)


def direct_assessment_labels(dataset: Dataset) -> list[Label]:
    """Ratings compared on which side of the scale's middle they fall (agree above 50, disagree below)."""
    convs = dataset.conversation_map()
    out = []
    for j in human_judgments(dataset, "ratings"):
        conv = convs.get(j.conversation_id or "")
        if conv is None or not isinstance(j.value, dict):
            continue
        bot = one_bot(conv) or "?"
        for c in DA_CRITERIA:
            x = j.value.get(c)
            if isinstance(x, (int, float)):
                side = "agree" if x > 50 else "disagree" if x < 50 else "middle"
                out.append(Label(f"{conv.id}:{c}", c, j.annotator_id, side, (bot,), decisive=side != "middle"))
    return out


# -- Single-model: checkbox qualities per turn, 1-5 Likert at the end -------------------------------


direct_assessment = JudgeAdapter(
    direct_assessment_tasks,
    direct_assessment_labels,
    agreement_scale="the side of the 0-100 scale's middle (agree above 50, disagree below)",
)
