"""The LLM judge's adapter of this method (Method.judge): the tasks a judge answers on a study,
in the annotators' own wording, and the labels the audit sets against the people's."""

from __future__ import annotations

from typing import Any

from ...judges.common import (
    ACUTE_UNIT,
    eval_length,
    eval_text,
    first_is,
    human_judgments,
    judged_first,
    longer_chosen,
    pair_choice,
    pairwise_task,
    question_wording,
)
from ...judges.prompts import compose
from ...judges.tasks import Answer, JudgeAdapter, JudgeTask, Label
from ...questions import Question
from ...records import Dataset
from .questions import ACUTE_QUESTIONS


def acute_tasks(dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
    convs = dataset.conversation_map()
    tasks = []
    for unit in dataset.units:
        if unit.kind != ACUTE_UNIT or len(unit.conversation_ids) != 2:
            continue
        ids = list(unit.conversation_ids)
        if any(c not in convs for c in ids):
            continue
        speakers = list(unit.payload.get("eval_speakers") or ["entity1", "entity1"])
        question = question_wording(config, str(unit.payload.get("question", "preference")), ACUTE_QUESTIONS)

        def prompt(
            order: str, ids: list[str] = ids, speakers: list[str] = speakers, question: Question = question
        ) -> str:
            first = first_is(order)
            shown = [first, 1 - first]
            blocks = [f"Conversation {n}:\n{eval_text(convs[ids[k]], speakers[k], n)}" for n, k in zip((1, 2), shown)]
            choices = "\n".join(f"{n} = {question.choice.format(n=n)}" for n in (1, 2))
            return compose(
                "Two conversations. Judge Speaker 1 in conversation 1 and Speaker 2 in conversation 2; "
                "'Partner' is the other side.",
                *blocks,
                f"Question: {question.text}\nChoices:\n{choices}",
                example='{"choice": 1} or {"choice": 2}',
            )

        def parse(text: str, order: str, ids: list[str] = ids) -> Answer:
            k = pair_choice(text, order)
            return Answer({"winner": ids[k], "loser": ids[1 - k]}, chose_first=k == first_is(order))

        tasks.append(pairwise_task(f"acute:{unit.id}", question.id, ids, prompt, parse, unit_id=unit.id))
    return judged_first(tasks, dataset)


def acute_labels(dataset: Dataset) -> list[Label]:
    convs = dataset.conversation_map()
    units = {u.id: u for u in dataset.units}
    out = []
    for j in human_judgments(dataset):
        unit = units.get(j.unit_id or "")
        if unit is None or unit.kind != ACUTE_UNIT or not isinstance(j.value, dict):
            continue
        ids = list(unit.conversation_ids)
        winner = j.value.get("winner")
        if winner not in ids:
            continue
        k = ids.index(winner)
        bots = tuple(unit.payload.get("speakers_to_eval") or ())
        speakers = list(unit.payload.get("eval_speakers") or ["entity1", "entity1"])
        lengths = [eval_length(convs[c], s) if c in convs else 0 for c, s in zip(ids, speakers)]
        out.append(
            Label(
                item=unit.id,
                question=j.question,
                annotator=j.annotator_id,
                label=bots[k] if len(bots) == 2 else winner,
                bots=bots,
                chose_first=(j.shown_order[0] == winner) if j.shown_order else None,
                chose_longer=longer_chosen(lengths[0], lengths[1], k),
                score=1.0 - k,
            )
        )
    return out


# -- Chatbot Arena battles -------------------------------------------------------------------------


acute = JudgeAdapter(acute_tasks, acute_labels, paired=True, agreement_scale="which bot's conversation was chosen")
