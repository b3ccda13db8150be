"""The LLM judge's adapter of this method (Method.judge): the tasks a judge answers on a study,
in the annotators' own wording, and the labels the audit sets against the people's."""

from __future__ import annotations

from typing import Any

from ...judges import parse as p
from ...judges.common import (
    HUMAN,
    bot_turns,
    human_judgments,
    judged_first,
    one_bot,
)
from ...judges.prompts import compose, lines
from ...judges.tasks import Answer, JudgeAdapter, JudgeTask, Label
from ...records import SM_QUALITIES, Conversation, Dataset, Turn
from .questions import SINGLE_MODEL_DIALOG_QUESTIONS, SINGLE_MODEL_TURN_QUALITIES

_SM_NAMES = {HUMAN: "You", "bot": "Your partner"}


def single_model_tasks(dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
    tasks = []
    for conv in dataset.conversations:
        if conv.error or one_bot(conv) is None:
            continue
        index = {id(t): i for i, t in enumerate(conv.turns)}
        for n, turn in bot_turns(conv):
            history = conv.turns[: index[id(turn)]]

            def prompt(order: str, history: list[Turn] = history, turn: Turn = turn) -> str:
                qualities = "\n".join(f'"{q}": {SINGLE_MODEL_TURN_QUALITIES[q]}' for q in SM_QUALITIES)
                return compose(
                    f"The conversation so far between you and your partner:\n{lines(history, _SM_NAMES)}",
                    f"Your partner's latest message: {turn.text}",
                    f"For this message, say which qualities apply (true or false):\n{qualities}",
                    example="{" + ", ".join(f'"{q}": true' for q in SM_QUALITIES) + "}",
                )

            def parse(text: str, order: str, n: int = n) -> Answer:
                obj = p.json_object(text)
                return Answer({"turn": n, **{q: p.boolean(obj, q, text) for q in SM_QUALITIES}})

            tasks.append(JudgeTask(f"sm-turn:{conv.id}:{n}", "turn", prompt, parse, conversation_id=conv.id))

        def dialog_prompt(order: str, conv: Conversation = conv) -> str:
            questions = "\n".join(f'"{q}": {SINGLE_MODEL_DIALOG_QUESTIONS[q]}' for q in SM_QUALITIES)
            return compose(
                f"Your whole conversation with your partner:\n{lines(conv.turns, _SM_NAMES)}",
                f"Answer each question from 1 (not at all) to 5 (very much):\n{questions}",
                example="{" + ", ".join(f'"{q}": 3' for q in SM_QUALITIES) + "}",
            )

        def dialog_parse(text: str, order: str) -> Answer:
            obj = p.json_object(text)
            return Answer({q: p.number(obj, q, 1, 5, text, integer=True) for q in SM_QUALITIES})

        tasks.append(JudgeTask(f"sm-dialog:{conv.id}", "dialog", dialog_prompt, dialog_parse, conversation_id=conv.id))
    return judged_first(tasks, dataset)


def single_model_labels(dataset: Dataset) -> list[Label]:
    convs = dataset.conversation_map()
    out = []
    for j in human_judgments(dataset):
        conv = convs.get(j.conversation_id or "")
        v = j.value if isinstance(j.value, dict) else {}
        if conv is None:
            continue
        bot = (one_bot(conv) or "?",)
        if j.question == "turn" and v.get("turn") is not None:
            for q in SM_QUALITIES:
                if isinstance(v.get(q), bool):
                    out.append(Label(f"{conv.id}:{v['turn']}:{q}", f"turn {q}", j.annotator_id, v[q], bot))
        elif j.question == "dialog":
            for q in SM_QUALITIES:
                if isinstance(v.get(q), int):
                    out.append(Label(f"{conv.id}:{q}", f"dialog {q}", j.annotator_id, v[q], bot))
    return out


single_model = JudgeAdapter(
    single_model_tasks, single_model_labels, agreement_scale="ticked or not per turn; the 1-5 rating per dialog"
)
