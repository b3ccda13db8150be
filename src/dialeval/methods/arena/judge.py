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


def arena_label_frame(dataset: Dataset) -> Any:
    """arena_labels of judgments read as columns (records.JudgmentColumns: a report on a million
    battles), as a pandas DataFrame instead of a million Label objects: one row per label, in the
    same order, with the columns item, question, annotator, label, decisive, score and chose_longer
    (True, False or None), each the value arena_labels gives on that dataset. Not carried: bots and
    chose_first (the columns hold no shown order)."""
    import numpy as np
    import pandas as pd

    from ...records import JudgmentColumns

    judgments = dataset.judgments
    if not isinstance(judgments, JudgmentColumns):
        raise TypeError("arena_label_frame reads judgments held as columns (records.JudgmentColumns)")
    frame = judgments.frame

    def column(name: str) -> pd.Series:
        """A value as Judgment.value/meta would hold it: None where missing (None or NaN)."""
        values = frame[name] if name in frame else pd.Series(None, index=frame.index, dtype=object)
        return values.astype(object).where(values.notna(), None)

    def named(values: pd.Series) -> pd.Series:  # str(v.get(key)): a missing key reads "None"
        return values if pd.api.types.infer_dtype(values, skipna=False) == "string" else values.map(str)

    winner = column("value.winner")
    kept = (frame["question"] == "battle") & winner.isin(["model_a", "model_b", "tie", "tie (bothbad)"])
    rows = np.flatnonzero(kept.to_numpy())
    winner = winner.iloc[rows].reset_index(drop=True)
    model_a = named(column("value.model_a").iloc[rows].reset_index(drop=True))
    model_b = named(column("value.model_b").iloc[rows].reset_index(drop=True))
    item = column("meta.item").iloc[rows].reset_index(drop=True)
    battle = column("meta.battle").iloc[rows].reset_index(drop=True)
    has_item = item.notna().to_numpy()
    decisive = winner.isin(["model_a", "model_b"]).to_numpy()
    a, b = model_a.to_numpy(dtype=object), model_b.to_numpy(dtype=object)
    chosen = np.where(winner.to_numpy(dtype=object) == "model_a", a, b)
    # bots: the item's two models sorted (either side order compares equal), else (model_a, model_b)
    first_bot = np.where(has_item, np.where(b < a, b, a), a)
    won = np.where(first_bot == chosen, 0, 1)  # bots.index(the chosen model)
    out = pd.DataFrame(
        {
            "item": np.where(has_item, named(item).to_numpy(dtype=object), named(battle).to_numpy(dtype=object)),
            "question": "battle",
            "annotator": frame["annotator"].iloc[rows].to_numpy(dtype=object),
            "label": np.where(decisive, np.where(won == 0, "model_a", "model_b"), "tie").astype(object),
            "decisive": decisive,
            "score": np.where(decisive, 1.0 - won, 0.5),
        }
    )
    out["chose_longer"] = _longer_of_columns(dataset, frame, rows, winner, model_a, model_b, item)
    return out


def _longer_of_columns(
    dataset: Dataset, frame: Any, rows: Any, winner: Any, model_a: Any, model_b: Any, item: Any
) -> list[bool | None]:
    """arena_labels' chose_longer for the kept rows of a column load: the texts of the battle's two
    conversations, else the item's answers' lengths from any battle of it, else a live battle's
    candidates of the voted turn. None everywhere when the study holds no conversation."""
    from ...records import plain_value
    from .analysis import answer_texts

    if not dataset.conversations:  # no text anywhere (answer_texts reads conversations too)
        return [None] * len(rows)
    lengths_of = {c.id: len(_assistant_text(c)) for c in dataset.conversations}
    lengths = _answer_lengths_of_columns(frame, lengths_of)
    _, per_turn = answer_texts(dataset)

    def text_column(name: str) -> list[Any]:
        if name not in frame:
            return [None] * len(rows)
        values = frame[name].iloc[rows]
        return [plain_value(x) if x is not None and x == x else None for x in values.tolist()]

    conv_a, conv_b = text_column("value.conversation_a"), text_column("value.conversation_b")
    turns, conversations = text_column("value.turn"), text_column("conversation")
    side = {"model_a": 0, "model_b": 1}
    out: list[bool | None] = []
    for k, (won, a, b, it) in enumerate(zip(winner.tolist(), model_a.tolist(), model_b.tolist(), item.tolist())):
        chosen = side.get(won)
        len_a, len_b = lengths_of.get(str(conv_a[k])), lengths_of.get(str(conv_b[k]))
        longer = None
        if len_a is not None and len_b is not None:
            longer = longer_chosen(len_a, len_b, chosen)
        elif it is not None and (str(it), a) in lengths and (str(it), b) in lengths:
            longer = longer_chosen(lengths[(str(it), a)], lengths[(str(it), b)], chosen)
        elif conversations[k] and isinstance(turns[k], int):
            live = [per_turn.get((conversations[k], turns[k], m)) for m in (a, b)]
            if None not in live:
                longer = longer_chosen(len(live[0] or ""), len(live[1] or ""), chosen)
        out.append(longer)
    return out


def _answer_lengths_of_columns(frame: Any, lengths_of: dict[str, int]) -> dict[tuple[str, str], int]:
    """_answer_lengths over every judgment of a column load (the first battle of an item that has
    a model's answer gives its length)."""
    from ...records import plain_value

    def values(name: str) -> list[Any]:
        if name not in frame:
            return [None] * len(frame)
        return [plain_value(x) if x is not None and x == x else None for x in frame[name].tolist()]

    out: dict[tuple[str, str], int] = {}
    items = values("meta.item")
    sides = [(values(f"value.conversation_{side}"), values(f"value.model_{side}")) for side in "ab"]
    for k, it in enumerate(items):
        if it is None:
            continue
        for convs, models in sides:
            length = lengths_of.get(str(convs[k]))
            if length is not None:
                out.setdefault((str(it), str(models[k])), length)
    return out


# -- PW-Turn: two candidate replies per bot turn ---------------------------------------------------


arena = JudgeAdapter(
    arena_tasks,
    arena_labels,
    paired=True,
    agreement_scale="model_a, model_b or tie",
    label_frame=arena_label_frame,
)
