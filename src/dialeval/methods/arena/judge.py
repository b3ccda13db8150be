"""The LLM judge's adapter of this method (Method.judge): the tasks a judge answers on a study,
in the annotators' own wording, and the labels the audit sets against the people's."""

from __future__ import annotations

from typing import Any

from ...judges import parse as p
from ...judges.common import (
    _first_is,
    _longer,
    pairwise_task,
)
from ...judges.prompts import compose, lines
from ...judges.tasks import Answer, JudgeAdapter, JudgeTask, Label
from ...records import Conversation, Dataset

ARENA_QUESTION = "Which assistant's response is better?"
_ARENA_ANSWERS = ("A", "B", "tie", "both bad")


def _assistant_text(conv: Conversation) -> str:
    return "\n".join(t.text for t in conv.turns if t.speaker == "bot")


def arena_tasks(dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
    convs = dataset.conversation_map()
    tasks, seen = [], set()
    for j in dataset.judgments:
        v = j.value if isinstance(j.value, dict) else {}
        battle = (j.meta or {}).get("battle")
        ca, cb = v.get("conversation_a"), v.get("conversation_b")
        if j.question != "battle" or battle in seen or ca not in convs or cb not in convs:
            continue
        seen.add(battle)
        models = (str(v.get("model_a")), str(v.get("model_b")))
        pair = (convs[ca], convs[cb])

        def prompt(order: str, pair=pair) -> str:
            first = _first_is(order)
            blocks = []
            for name, k in zip("AB", (first, 1 - first)):
                names = {"human": "User", "bot": f"Assistant {name}"}
                blocks.append(f"[Conversation with Assistant {name}]\n{lines(pair[k].turns, names)}")
            return compose(
                "A user asked two anonymous assistants the same thing.",
                *blocks,
                f"Question: {ARENA_QUESTION} Answer A, B, tie, or both bad.",
                example='{"winner": "A"}, {"winner": "B"}, {"winner": "tie"} or {"winner": "both bad"}',
            )

        def parse(text: str, order: str, models=models, ca=ca, cb=cb) -> Answer:
            said = p.choice(p.json_object(text), "winner", _ARENA_ANSWERS, text)
            base = {"model_a": models[0], "model_b": models[1], "conversation_a": ca, "conversation_b": cb}
            if said in ("tie", "both bad"):
                return Answer({**base, "winner": "tie" if said == "tie" else "tie (bothbad)"})
            first = _first_is(order)
            k = first if said == "A" else 1 - first
            return Answer({**base, "winner": ("model_a", "model_b")[k]}, chose_first=k == first)

        tasks.append(pairwise_task(f"arena:{battle}", "battle", list(models), prompt, parse, meta={"battle": battle}))
    return tasks


def arena_labels(dataset: Dataset) -> list[Label]:
    convs = dataset.conversation_map()
    out = []
    for j in dataset.judgments:
        v = j.value if isinstance(j.value, dict) else {}
        winner = v.get("winner")
        if j.question != "battle" or winner not in ("model_a", "model_b", "tie", "tie (bothbad)"):
            continue
        k = {"model_a": 0, "model_b": 1}.get(winner)
        ca, cb = convs.get(str(v.get("conversation_a"))), convs.get(str(v.get("conversation_b")))
        longer = None
        if ca is not None and cb is not None:
            longer = _longer(len(_assistant_text(ca)), len(_assistant_text(cb)), k)
        models = (str(v.get("model_a")), str(v.get("model_b")))
        shown = j.shown_order or list(models)
        first = None if k is None else shown[0] == models[k]
        out.append(
            Label(
                item=str((j.meta or {}).get("battle")),
                question="battle",
                annotator=j.annotator_id,
                label=winner if k is not None else "tie",
                bots=(str(v.get("model_a")), str(v.get("model_b"))),
                chose_first=first,
                chose_longer=longer,
                decisive=k is not None,
                score=0.5 if k is None else 1.0 - k,
            )
        )
    return out


# -- PW-Turn: two candidate replies per bot turn ---------------------------------------------------


arena = JudgeAdapter(arena_tasks, arena_labels, paired=True, agreement_scale="model_a, model_b or tie")
