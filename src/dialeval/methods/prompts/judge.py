"""The LLM judge's adapter of prompt-set studies (Method.judge): one task per item (a prompt and two
answers), asked in both side orders with the annotators' own question; its answers have the people's
value shape with the item's pair in canonical order, so the audit and judge-guided collection read them."""

from __future__ import annotations

from typing import Any

from ...judges import parse as p
from ...judges.common import first_is, human_judgments, judged_first, longer_chosen, pairwise_task
from ...judges.prompts import compose, lines
from ...judges.tasks import Answer, JudgeAdapter, JudgeTask, Label
from ...records import Conversation, Dataset, Unit
from .options import PromptsOptions
from .promptset import BOT
from .protocol import KIND, QUESTION

_ANSWERS = ("A", "B", "tie", "both bad")


def _answer_text(conv: Conversation, shared: int) -> str:
    return lines(conv.turns[shared:], {BOT: "Assistant", "user": "User"}, default="User")


def prompts_tasks(dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
    convs = dataset.conversation_map()
    question = PromptsOptions.model_validate((config or {}).get("protocol") or {}).question
    tasks = []
    for unit in dataset.units:
        ids = list(unit.conversation_ids)
        if unit.kind != KIND or len(ids) != 2 or any(c not in convs for c in ids):
            continue
        shared = int(unit.payload.get("shared", 1))
        bots = list(unit.payload["speakers_to_eval"])
        prompt_text = lines(convs[ids[0]].turns[:shared], {"user": "User", "context": "Assistant"}, default="User")

        def prompt(order: str, ids: list[str] = ids, shared: int = shared, prompt_text: str = prompt_text) -> str:
            first = first_is(order)
            blocks = [
                f"[Answer {name}]\n{_answer_text(convs[ids[k]], shared)}" for name, k in zip("AB", (first, 1 - first))
            ]
            return compose(
                f"[The prompt]\n{prompt_text}",
                *blocks,
                f"Question: {question} Answer A, B, tie, or both bad.",
                example='{"winner": "A"}, {"winner": "B"}, {"winner": "tie"} or {"winner": "both bad"}',
            )

        def parse(text: str, order: str, ids: list[str] = ids, bots: list[str] = bots, unit: Unit = unit) -> Answer:
            said = p.choice(p.json_object(text), "winner", _ANSWERS, text)
            base = {
                "model_a": bots[0],
                "model_b": bots[1],
                "conversation_a": ids[0],
                "conversation_b": ids[1],
                "prompt_id": unit.payload.get("prompt_id"),
            }
            if said in ("tie", "both bad"):
                return Answer({**base, "winner": "tie" if said == "tie" else "tie (bothbad)"})
            first = first_is(order)
            k = first if said == "A" else 1 - first
            return Answer({**base, "winner": ("model_a", "model_b")[k]}, chose_first=k == first)

        tasks.append(pairwise_task(f"prompts:{unit.id}", QUESTION, ids, prompt, parse, unit_id=unit.id))
    return judged_first(tasks, dataset)


def prompts_labels(dataset: Dataset) -> list[Label]:
    units = {u.id: u for u in dataset.units}
    convs = dataset.conversation_map()
    out = []
    for j in human_judgments(dataset, QUESTION):
        unit = units.get(j.unit_id or "")
        v = j.value if isinstance(j.value, dict) else {}
        if unit is None or unit.kind != KIND or v.get("winner") not in ("model_a", "model_b", "tie", "tie (bothbad)"):
            continue
        bots = tuple(unit.payload["speakers_to_eval"])
        ids = list(unit.conversation_ids)
        winner_bot = v.get(v["winner"]) if v["winner"] in ("model_a", "model_b") else None
        k = bots.index(winner_bot) if winner_bot in bots else None
        shared = int(unit.payload.get("shared", 1))
        lengths = [len(_answer_text(convs[c], shared)) if c in convs else 0 for c in ids]
        out.append(
            Label(
                item=unit.id,
                question=QUESTION,
                annotator=j.annotator_id,
                label=winner_bot if winner_bot else "tie",
                bots=bots,
                chose_first=None if k is None or not j.shown_order else j.shown_order[0] == ids[k],
                chose_longer=longer_chosen(lengths[0], lengths[1], k),
                decisive=k is not None,
                score=0.5 if k is None else 1.0 - k,
            )
        )
    return out


prompts = JudgeAdapter(prompts_tasks, prompts_labels, paired=True, agreement_scale="which answer was chosen, or tie")
