"""`dialeval export STUDY --format preferences -o prefs.jsonl|.parquet`: preference pairs for reward
models and DPO, one line per judged item (one prompt, one pair of systems), in the conversational
preference shape (`prompt` as chat messages, `chosen` / `rejected` as the assistant's messages).

The label is the people's majority on the item's "overall" question; ``votes`` counts chosen,
rejected, tie and both_bad; ``agreement`` is the share of votes for the most chosen answer. Items
whose majority is a tie or "both bad", or without a majority, are left out unless ``keep_ties``:
then they are kept with ``label`` "tie", "both-bad" or "split", chosen/rejected in the order of the pair.
Annotator ids are hashed (SHA-256
with the study's id, so they cannot be matched across studies). LLM judges, checks and annotators
filtered by quality control are left out, as in the report.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import DialevalError
from ...records import Turn
from .promptset import answer_turns, load_prompts
from .protocol import QUESTION


def _messages(turns: Iterable[Turn]) -> list[dict[str, str]]:
    return [
        {"role": "assistant" if t.speaker == "bot" or t.speaker == "context" else "user", "content": t.text}
        for t in turns
    ]


def preference_rows(opened: Any, keep_ties: bool = False) -> list[dict[str, Any]]:
    from ...analysis.shared import filtered_annotator_ids
    from ...records import is_judge_annotator
    from ...study import study_uid

    dataset = opened.store.load_dataset(opened.id)
    prompts = {p.id: p for p in load_prompts(opened.config.options, opened.folder)}
    convs = dataset.conversation_map()
    skip = filtered_annotator_ids(dataset, None) | {a.id for a in dataset.annotators if is_judge_annotator(a)}
    salt = study_uid(opened.folder)
    items: dict[tuple[str, str, str], dict[str, Any]] = {}
    for j in dataset.judgments:
        v = j.value
        if j.question != QUESTION or (j.meta or {}).get("check") or j.annotator_id in skip or not isinstance(v, dict):
            continue
        a, b = sorted((v["model_a"], v["model_b"]))
        item = items.setdefault((v["prompt_id"], a, b), {"votes": Counter(), "annotators": [], "reasons": []})
        winner = v["winner"]
        label = v[winner] if winner in ("model_a", "model_b") else ("tie" if winner == "tie" else "both-bad")
        item["votes"][label] += 1
        item["annotators"].append(hashlib.sha256(f"{salt}:{j.annotator_id}".encode()).hexdigest()[:16])
        if j.justification:
            item["reasons"].append(j.justification)
    rows = []
    for (pid, a, b), item in sorted(items.items()):
        prompt = prompts.get(pid)
        ca, cb = convs.get(f"answer:{a}:{pid}"), convs.get(f"answer:{b}:{pid}")
        if prompt is None or ca is None or cb is None:
            continue
        votes: Counter[str] = item["votes"]
        n = sum(votes.values())
        top = votes.most_common()
        label = top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else "split"  # split: no majority
        if label not in (a, b) and not keep_ties:
            continue
        chosen, rejected = (b, a) if label == b else (a, b)
        answers = {a: ca, b: cb}
        rows.append(
            {
                "prompt_id": pid,
                "category": prompt.category,
                "prompt": prompt.as_messages(),
                "chosen": _messages(answer_turns(answers[chosen], prompt)),
                "rejected": _messages(answer_turns(answers[rejected], prompt)),
                "chosen_system": chosen,
                "rejected_system": rejected,
                "label": "chosen" if label in (a, b) else label,
                "votes": {
                    "chosen": votes.get(chosen, 0),
                    "rejected": votes.get(rejected, 0),
                    "tie": votes.get("tie", 0),
                    "both_bad": votes.get("both-bad", 0),
                },
                "n_votes": n,
                "agreement": round(top[0][1] / n, 4),  # share of votes for the most chosen answer
                "annotators": item["annotators"],
                "reasons": item["reasons"],
            }
        )
    return rows


def export_preferences(opened: Any, output: Path, keep_ties: bool = False) -> int:
    """Write the preference rows as JSONL (one object per line) or Parquet (by the file's suffix)."""
    suffix = output.suffix.lower()
    if suffix not in (".parquet", ".pq", ".jsonl", ".json"):
        raise DialevalError(f"{output}: preferences are written as .jsonl or .parquet")
    rows = preference_rows(opened, keep_ties)
    output.parent.mkdir(parents=True, exist_ok=True)
    if suffix in (".parquet", ".pq"):
        import pandas as pd

        try:
            import pyarrow  # noqa: F401  (the parquet writer pandas uses; not in the base install)
        except ImportError:
            raise DialevalError(
                "parquet export needs pyarrow: pip install 'dialeval[parquet]' (or write prefs.jsonl)"
            ) from None
        if not rows:
            raise DialevalError("no judged item to export yet (every item is a tie, or nothing is judged)")
        pd.DataFrame(rows).to_parquet(output, index=False)
    else:
        with output.open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)
