"""The LLM judge's adapter of this method (Method.judge): the tasks a judge answers on a study,
in the annotators' own wording, and the labels the audit sets against the people's."""

from __future__ import annotations

from typing import Any

from ...judges import parse as p
from ...judges.common import (
    HUMAN,
    human_judgments,
    judged_first,
    shown_order,
)
from ...judges.prompts import compose, lines
from ...judges.tasks import Answer, JudgeAdapter, JudgeTask, Label
from ...records import STB_FEATURES, Conversation, Dataset, Turn
from .questions import STB_FEATURES as STB_FEATURE_QUESTIONS

_STB_LABELS = ("human", "bot", "unsure")
_STB_FEATURE_ANSWERS = ("A", "B", "tie")


def _segment(conv: Conversation, exchanges: int) -> list[Turn]:
    return conv.turns[: 2 + 2 * exchanges]


def _speaker_names(turns: list[Turn]) -> dict[str, str]:
    order: list[str] = []
    for t in turns:
        if t.speaker not in order:
            order.append(t.speaker)
    return {s: f"Speaker {'AB'[k]}" for k, s in enumerate(order[:2])}


def spot_the_bot_tasks(dataset: Dataset, config: dict[str, Any]) -> list[JudgeTask]:
    convs = dataset.conversation_map()
    tasks, seen = [], set()
    for unit in dataset.units:
        if unit.kind != "stb-package":
            continue
        for seg in unit.payload.get("segments") or []:
            conv, k = convs.get(seg.get("conversation")), int(seg.get("exchanges") or 0)
            if conv is None or (conv.id, k) in seen:
                continue
            seen.add((conv.id, k))
            turns = _segment(conv, k)

            def prompt(order: str, turns: list[Turn] = turns) -> str:
                features = "\n".join(f'"{f}": {STB_FEATURE_QUESTIONS[f]} (A, B or tie)' for f in STB_FEATURES)
                return compose(
                    "A segment of a conversation between Speaker A and Speaker B. Each speaker is a person "
                    "or a chatbot; any mix is possible.",
                    lines(turns, _speaker_names(turns)),
                    'Questions: "speaker_a": Is Speaker A a human or a bot? "speaker_b": Is Speaker B a human '
                    "or a bot? Answer human, bot, or unsure when the segment does not tell you yet.\n" + features,
                    example='{"speaker_a": "human", "speaker_b": "bot", "fluency": "A", "sensibleness": "tie", '
                    '"specificity": "B"}',
                )

            def parse(text: str, order: str, k: int = k) -> Answer:
                obj = p.json_object(text)
                value: dict[str, Any] = {
                    "segment_exchanges": k,
                    "entity0": p.choice(obj, "speaker_a", _STB_LABELS, text),
                    "entity1": p.choice(obj, "speaker_b", _STB_LABELS, text),
                    "decision_turn0": None,
                    "decision_turn1": None,
                }
                for f in STB_FEATURES:
                    said = p.choice(obj, f, _STB_FEATURE_ANSWERS, text)
                    value[f] = "tie" if said == "tie" else "AB".index(said)
                return Answer(value)

            tasks.append(
                JudgeTask(
                    key=f"stb:{conv.id}@{k}",
                    question="spot-the-bot",
                    prompt=prompt,
                    parse=parse,
                    unit_id=unit.id,
                    conversation_id=conv.id,
                    shown=shown_order(list(conv.bots), swap=False),
                    meta={"segment": f"{conv.id}@{k}"},
                )
            )
    return judged_first(tasks, dataset)


def spot_the_bot_labels(dataset: Dataset) -> list[Label]:
    convs = dataset.conversation_map()
    out = []
    for j in human_judgments(dataset):
        v = j.value if isinstance(j.value, dict) else {}
        conv = convs.get(j.conversation_id or "")
        if conv is None or "entity0" not in v:
            continue
        item = f"{conv.id}@{v.get('segment_exchanges')}"
        bots = list(conv.bots) + [HUMAN, HUMAN]
        for e in (0, 1):
            label = v.get(f"entity{e}")
            if label in _STB_LABELS:
                out.append(
                    Label(f"{item}:{e}", "human or bot", j.annotator_id, label, (bots[e],), decisive=label != "unsure")
                )
        for f in STB_FEATURES:
            if v.get(f) is not None:
                out.append(Label(item, f, j.annotator_id, v[f], tuple(conv.bots[:2]), decisive=v[f] != "tie"))
    return out


# -- Direct Assessment: 0-100 per statement --------------------------------------------------------


spot_the_bot = JudgeAdapter(
    spot_the_bot_tasks,
    spot_the_bot_labels,
    agreement_scale="human, bot or unsure per speaker; A, B or tie per feature",
)
