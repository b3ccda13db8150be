"""The LLM judge's adapter of this method (Method.judge): the tasks a judge answers on a study,
in the annotators' own wording, and the labels the audit sets against the people's."""

from __future__ import annotations

from typing import Any

from ...judges.common import (
    HUMAN,
    bot_turns,
    first_is,
    human_judgments,
    judged_first,
    longer_chosen,
    pair_choice,
    pairwise_task,
    question_wording,
)
from ...judges.prompts import compose, lines
from ...judges.tasks import Answer, JudgeAdapter, JudgeTask, Label
from ...questions import Question
from ...records import Dataset, Turn
from .questions import PAIRWISE_TURN_QUESTIONS

_PW_NAMES = {HUMAN: "You", "bot": "Your partner"}


def pairwise_turn_tasks(dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
    asked: dict[str, str] = {}  # conversation -> the question its people answered
    for j in human_judgments(dataset):
        if j.conversation_id and isinstance(j.value, dict) and "chosen" in j.value:
            asked.setdefault(j.conversation_id, j.question)
    default = next(iter([q.get("id") for q in config.get("questions") or []]), "preference")
    tasks = []
    for conv in dataset.conversations:
        index = {id(t): i for i, t in enumerate(conv.turns)}
        question = question_wording(config, asked.get(conv.id, default), PAIRWISE_TURN_QUESTIONS)
        for n, turn in bot_turns(conv):
            cands = [c for c in turn.candidates or [] if c.get("bot") and c.get("text") is not None]
            if len(cands) != 2:
                continue
            history = conv.turns[: index[id(turn)]]
            bots = [str(c["bot"]) for c in cands]

            def prompt(
                order: str,
                history: list[Turn] = history,
                cands: list[dict[str, Any]] = cands,
                question: Question = question,
            ) -> str:
                first = first_is(order)
                options = "\n".join(f"Response {m}: {cands[k]['text']}" for m, k in zip((1, 2), (first, 1 - first)))
                return compose(
                    f"The conversation so far between you and your partner:\n{lines(history, _PW_NAMES)}",
                    f"Two possible next responses from your partner:\n{options}",
                    f"Question: {question.text}",
                    example='{"choice": 1} or {"choice": 2}',
                )

            def parse(text: str, order: str, bots: list[str] = bots, n: int = n) -> Answer:
                k = pair_choice(text, order)
                return Answer({"turn": n, "chosen": bots[k], "other": bots[1 - k]}, chose_first=k == first_is(order))

            key = f"pw-turn:{conv.id}:{n}:{question.id}"
            tasks.append(pairwise_task(key, question.id, bots, prompt, parse, conversation_id=conv.id))
    return judged_first(tasks, dataset)


def pairwise_turn_labels(dataset: Dataset) -> list[Label]:
    convs = dataset.conversation_map()
    out = []
    for j in human_judgments(dataset):
        v = j.value if isinstance(j.value, dict) else {}
        conv = convs.get(j.conversation_id or "")
        if conv is None or v.get("chosen") is None or v.get("turn") is None:
            continue
        turns = dict(bot_turns(conv))
        turn = turns.get(int(v["turn"]))
        cands = {str(c.get("bot")): str(c.get("text") or "") for c in (turn.candidates or [])} if turn else {}
        chosen, other = str(v["chosen"]), str(v.get("other"))
        longer = None
        if chosen in cands and other in cands:
            longer = longer_chosen(len(cands[chosen]), len(cands[other]), 0)
        first = None
        if j.shown_order and isinstance(j.shown_order[0], str):
            first = j.shown_order[0] == chosen
        out.append(
            Label(
                item=f"{conv.id}:{int(v['turn'])}",
                question=j.question,
                annotator=j.annotator_id,
                label=chosen,
                bots=tuple(sorted((chosen, other))),
                chose_first=first,
                chose_longer=longer,
                score=1.0 if chosen == min(chosen, other) else 0.0,
            )
        )
    return out


# -- Spot The Bot: human, bot or unsure per speaker of a segment ------------------------------------


pairwise_turn = JudgeAdapter(
    pairwise_turn_tasks, pairwise_turn_labels, paired=True, agreement_scale="which bot's reply was chosen"
)
