"""The LLM judge's adapter of this method (Method.judge): the tasks a judge answers on a study,
in the annotators' own wording, and the labels the audit sets against the people's."""

from __future__ import annotations

from typing import Any

from ...judges import parse as p
from ...judges.common import (
    first_is,
    longer_chosen,
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
        item = (j.meta or {}).get("item")  # several people's battles of one item: the judge asks it once
        ca, cb = v.get("conversation_a"), v.get("conversation_b")
        if j.question != "battle" or (item or battle) in seen or ca not in convs or cb not in convs:
            continue
        seen.add(item or battle)
        models = (str(v.get("model_a")), str(v.get("model_b")))
        pair = (convs[ca], convs[cb])

        def prompt(order: str, pair: tuple[Conversation, Conversation] = pair) -> str:
            first = first_is(order)
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

        def parse(
            text: str, order: str, models: tuple[str, str] = models, ca: str = str(ca), cb: str = str(cb)
        ) -> Answer:
            said = p.choice(p.json_object(text), "winner", _ARENA_ANSWERS, text)
            base = {"model_a": models[0], "model_b": models[1], "conversation_a": ca, "conversation_b": cb}
            if said in ("tie", "both bad"):
                return Answer({**base, "winner": "tie" if said == "tie" else "tie (bothbad)"})
            first = first_is(order)
            k = first if said == "A" else 1 - first
            return Answer({**base, "winner": ("model_a", "model_b")[k]}, chose_first=k == first)

        meta = {"battle": battle, **({"item": item} if item else {})}
        tasks.append(pairwise_task(f"arena:{battle}", "battle", list(models), prompt, parse, meta=meta))
    return tasks


def _answer_lengths(dataset: Dataset) -> dict[tuple[str, str], int]:
    """(item, model) -> length of that model's answer text, from any judgment of the item that has it,
    so a judge's verdict imported without text still meets the answers people read."""
    convs = dataset.conversation_map()
    out: dict[tuple[str, str], int] = {}
    for j in dataset.judgments:
        v = j.value if isinstance(j.value, dict) else {}
        item = (j.meta or {}).get("item")
        for side in ("a", "b"):
            conv = convs.get(str(v.get(f"conversation_{side}")))
            if item is not None and conv is not None:
                out.setdefault((str(item), str(v.get(f"model_{side}"))), len(_assistant_text(conv)))
    return out


def arena_labels(dataset: Dataset) -> list[Label]:
    """One label per battle judgment. A battle of a recognised item (meta "item": several people, or
    both side orders) is labelled on the item's two models in a fixed (sorted) order, so answers given
    with the sides swapped compare equal."""
    from .analysis import answer_texts  # live per-turn battles keep both replies as turn candidates

    convs = dataset.conversation_map()
    lengths = _answer_lengths(dataset)
    _, per_turn = answer_texts(dataset)
    out = []
    for j in dataset.judgments:
        v = j.value if isinstance(j.value, dict) else {}
        winner = v.get("winner")
        if j.question != "battle" or winner not in ("model_a", "model_b", "tie", "tie (bothbad)"):
            continue
        k = {"model_a": 0, "model_b": 1}.get(winner)
        models = (str(v.get("model_a")), str(v.get("model_b")))
        item = (j.meta or {}).get("item")
        ca, cb = convs.get(str(v.get("conversation_a"))), convs.get(str(v.get("conversation_b")))
        longer = None
        if ca is not None and cb is not None:
            longer = longer_chosen(len(_assistant_text(ca)), len(_assistant_text(cb)), k)
        elif item is not None and (str(item), models[0]) in lengths and (str(item), models[1]) in lengths:
            longer = longer_chosen(lengths[(str(item), models[0])], lengths[(str(item), models[1])], k)
        elif j.conversation_id and isinstance(v.get("turn"), int):
            live = [per_turn.get((j.conversation_id, v["turn"], m)) for m in models]
            if None not in live:
                longer = longer_chosen(len(live[0] or ""), len(live[1] or ""), k)
        shown = j.shown_order or list(models)
        first = None if k is None else shown[0] == models[k]
        bots = tuple(sorted(models)) if item is not None else models
        won = None if k is None else bots.index(models[k])  # 0: bots[0] won, 1: bots[1]
        out.append(
            Label(
                item=str(item if item is not None else (j.meta or {}).get("battle")),
                question="battle",
                annotator=j.annotator_id,
                label=("model_a", "model_b")[won] if won is not None else "tie",
                bots=bots,
                chose_first=first,
                chose_longer=longer,
                decisive=k is not None,
                score=0.5 if won is None else 1.0 - won,
            )
        )
    return out


# -- PW-Turn: two candidate replies per bot turn ---------------------------------------------------


arena = JudgeAdapter(arena_tasks, arena_labels, paired=True, agreement_scale="model_a, model_b or tie")
