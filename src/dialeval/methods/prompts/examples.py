"""The report's example browser of a prompt-set study (report.json `examples`, the HTML report's
last section): judged items with their prompt, both answers, the people's votes and reasons and the
LLM judges' verdicts, flagged where people split or a judge's verdict differs from the people's.

It reads the whole data set, judges included (the statistics see people only), so it is the
Method.examples hook that report.build calls, not part of analyze_prompts. Annotator ids are left out:
a vote is its choice and reason. Items with a disagreement come first; at most MAX_ITEMS items and
MAX_TEXT_CHARS characters per text go into report.json (the counts say how many there were).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ...records import Conversation, Dataset, is_judge_annotator
from .analysis import QUESTION, vote_frame, vote_label
from .promptset import BOT

MAX_ITEMS = 200
MAX_TEXT_CHARS = 6000
TIE, BOTH_BAD = "tie", "both bad"


def _label(value: dict[str, Any]) -> str | None:
    """A vote as its winning system's name, 'tie' or 'both bad' (comparable across side orders)."""
    winner = value.get("winner")
    if winner in ("model_a", "model_b"):
        return str(value.get(winner))
    return {"tie": TIE, "tie (bothbad)": BOTH_BAD}.get(str(winner))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + " …"


def _majority(labels: list[str]) -> str | None:
    """The people's most frequent answer, None when two answers are equally frequent."""
    top = Counter(labels).most_common(2)
    if not top or (len(top) > 1 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def _item_key(prompt_id: Any, a: Any, b: Any) -> tuple[str, str, str]:
    """An item: the prompt and the pair of systems in either side order."""
    first, second = sorted((str(a), str(b)))
    return str(prompt_id), first, second


def _judges(dataset: Dataset) -> dict[tuple[str, str, str], dict[str, dict[str, Any]]]:
    """(prompt id, system, system) -> judge name -> {verdict, orders: {system shown first: answer}}:
    the judges' answers per item."""
    from ...judges.run import judge_meta

    names = {a.id: str((a.meta or {}).get("bot") or a.id) for a in dataset.annotators if is_judge_annotator(a)}
    out: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for j in dataset.judgments:
        if j.annotator_id not in names or j.question != QUESTION or not isinstance(j.value, dict):
            continue
        label = _label(j.value)
        a, b = j.value.get("model_a"), j.value.get("model_b")
        if label is None or not a or not b:
            continue
        meta = judge_meta(j)
        entry = out[_item_key(j.value.get("prompt_id"), a, b)].setdefault(
            names[j.annotator_id], {"verdict": None, "orders": {}}
        )
        if meta.get("role") == "order" and meta.get("order") in ("AB", "BA"):
            # keyed by the system shown first: the value's model_a is the task's first option
            entry["orders"][str(a if meta["order"] == "AB" else b)] = label
        else:  # a verdict (both orders agreed, or one order asked, or an imported judge's answer)
            entry["verdict"] = label
    return out


def _sides(conversation: Conversation, shared: int | None) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(prompt turns, answer turns) of one answer conversation: the prompt ends where the system
    first speaks (promptset.Prompt.shared)."""
    turns = conversation.turns
    first = next((i for i, t in enumerate(turns) if t.speaker == BOT), len(turns))
    cut = shared if shared is not None else first
    prompt = [{"role": "user" if t.speaker == "user" else "assistant", "text": _cut(t.text)} for t in turns[:cut]]
    answer = [{"role": "assistant" if t.speaker == BOT else "user", "text": _cut(t.text)} for t in turns[cut:]]
    return prompt, answer


def prompt_examples(
    dataset: Dataset, report: dict[str, Any], exclude_annotators: list[str] | None = None
) -> dict[str, Any] | None:
    """report.json `examples` (docs/reference/report-json.md); None when nothing was judged."""
    votes = vote_frame(dataset, exclude_annotators)
    votes = votes[votes["question"] == QUESTION]
    if votes.empty:
        return None
    convs = dataset.conversation_map()
    shared_of = {u.id: u.payload.get("shared") for u in dataset.units if isinstance(u.payload, dict)}
    judges = _judges(dataset)
    items = []
    by_item = [  # prompt, then the pair in either side order
        votes["prompt_id"].astype(str),
        votes[["model_a", "model_b"]].min(axis=1),
        votes[["model_a", "model_b"]].max(axis=1),
    ]
    for (pid, _, _), part in votes.groupby(by_item, sort=True):
        first = part.iloc[0]
        systems = sorted((str(first["model_a"]), str(first["model_b"])))
        conversation_of = dict(zip(part["model_a"], part["conversation_a"], strict=True))
        conversation_of.update(zip(part["model_b"], part["conversation_b"], strict=True))
        if any(conversation_of.get(s) not in convs for s in systems):
            continue  # imported votes without the answers' text: nothing to show
        prompt, answers = None, []
        for system in systems:
            shown, answer = _sides(convs[conversation_of[system]], shared_of.get(str(first["unit"])))
            prompt = prompt or shown
            answers.append({"system": system, "turns": answer})
        labels = [vote_label(r) for r in part.itertuples(index=False)]
        reasons = list(part["reason"])
        majority = _majority(labels)
        item_judges = judges.get(_item_key(pid, *systems), {})
        judge_rows = [{"judge": name, **entry} for name, entry in sorted(item_judges.items())]
        verdicts = [r["verdict"] for r in judge_rows if r["verdict"] is not None]
        items.append(
            {
                "prompt_id": str(pid),
                "category": str(first["category"]),
                "systems": systems,
                "prompt": prompt or [],
                "answers": answers,
                "votes": [{"choice": c, "reason": r or None} for c, r in zip(labels, reasons, strict=True)],
                "counts": dict(Counter(labels)),
                "majority": majority,
                "people_split": len(set(labels)) > 1,
                "judges": judge_rows,
                "judge_disagrees": majority is not None and any(v != majority for v in verdicts),
            }
        )
    if not items:
        return None
    items.sort(key=lambda r: (not (r["people_split"] or r["judge_disagrees"]), r["category"], r["prompt_id"]))
    return {
        "items_judged": len(items),
        "listed": min(len(items), MAX_ITEMS),
        "people_split": sum(r["people_split"] for r in items),
        "judge_disagrees": sum(r["judge_disagrees"] for r in items),
        "order": "items with a disagreement first, then by category and prompt id",
        "items": items[:MAX_ITEMS],
    }
