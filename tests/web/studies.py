"""Small study folders for the web tests: study.yaml + hand-made conversations (fast, no bot calls)."""

from __future__ import annotations

from pathlib import Path

import yaml

from dialeval.records import Conversation, Turn
from dialeval.study import open_study


def _selfchat(conv_id: str, bot: str, n_turns: int = 3, text: str | None = None) -> Conversation:
    turns = [Turn("entity0", "Hi there, how are you?", is_seed=True), Turn("entity1", "Fine, thanks!", is_seed=True)]
    for i in range(n_turns):
        turns.append(Turn("entity0", f"{bot} says thing {i} in {conv_id}", bot=bot))
        turns.append(Turn("entity1", text if (text and i == 0) else f"{bot} answers {i} in {conv_id}", bot=bot))
    return Conversation(id=conv_id, bots=[bot, bot], turns=turns, source="self-chat")


def _human(conv_id: str, n_turns: int = 4) -> Conversation:
    lines = [
        "I just got back from a hike in the mountains.",
        "Oh nice, which trail did you take?",
        "The one along the lake, it was beautiful.",
        "I love that one, especially in autumn.",
        "Yes, the leaves were turning red already.",
        "I should go again before it snows.",
    ]
    return Conversation(
        id=conv_id,
        bots=["human", "human"],
        source="human",
        turns=[Turn(f"entity{i % 2}", lines[i % len(lines)]) for i in range(2 * n_turns)],
    )


def _botbot(conv_id: str, a: str, b: str, n_turns: int = 5) -> Conversation:
    turns = [Turn("entity0", "Do you like cooking?", is_seed=True), Turn("entity1", "Yes, I bake bread.", is_seed=True)]
    for i in range(n_turns):
        turns.append(Turn("entity0", f"{a} line {i} ({conv_id})", bot=a))
        turns.append(Turn("entity1", f"{b} line {i} ({conv_id})", bot=b))
    return Conversation(id=conv_id, bots=[a, b], turns=turns, source="bot-bot")


BOTS = [
    {"name": "retrieval", "type": "retrieval"},
    {"name": "eliza", "type": "eliza"},
    {"name": "repeat", "type": "repeat"},
]


def write_study(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return folder


def make_acute_study(
    folder: Path,
    *,
    per_bot: int = 4,
    comparisons: int = 2,
    database: str | None = None,
    onboarding: bool = True,
    on_fail: str = "block",
    per_pair: int = 50,
    xss: str | None = None,
    xss_bots: tuple[str, ...] = ("eliza",),
    min_words: int = 2,
    name: str = "acute-test",
) -> Path:
    data = {
        "name": name,
        "method": "acute",
        "seed": 1,
        "bots": BOTS,
        "questions": [{"id": "preference"}],
        "onboarding": {"enabled": onboarding, "on_fail": on_fail},
        "annotation": {"expire_minutes": 30, "min_justification_words": min_words},
        "protocol": {
            "comparisons_per_unit": comparisons,
            "annotations_per_pair": per_pair,
            "onboarding_weak_bot": "repeat",
        },
    }
    if database:
        data["database"] = database
    write_study(folder, data)
    study = open_study(folder)
    try:
        for bot in ("retrieval", "eliza", "repeat"):
            for k in range(per_bot):
                study.store.save_conversation(
                    study.id, _selfchat(f"selfchat-{bot}-{k:04d}", bot, text=xss if bot in xss_bots else None)
                )
        study.store.save_conversation(study.id, _human("human-0000"))
    finally:
        study.close()
    return folder


def make_stb_study(
    folder: Path,
    *,
    per_pair: int = 3,
    humans: int = 3,
    exchanges: list[int] | None = None,
    bot_segments: int = 4,
    human_segments: int = 1,
    packages_per_annotator: int = 2,
    annotations_per_segment: int = 2,
    database: str | None = None,
    xss: str | None = None,
    name: str = "stb-test",
) -> Path:
    data = {
        "name": name,
        "method": "spot-the-bot",
        "seed": 1,
        "bots": BOTS,
        "generation": {"mode": "bot-bot", "conversations": per_pair, "turns": 5, "human_conversations": humans},
        "protocol": {
            "segment_exchanges": exchanges or [1, 2, 3],
            "bot_segments_per_package": bot_segments,
            "human_segments_per_package": human_segments,
            "packages_per_annotator": packages_per_annotator,
            "annotations_per_segment": annotations_per_segment,
        },
    }
    if database:
        data["database"] = database
    write_study(folder, data)
    study = open_study(folder)
    try:
        for a, b in (("retrieval", "eliza"), ("retrieval", "repeat"), ("eliza", "repeat")):
            for k in range(per_pair):
                conv = _botbot(f"botbot-{a}-{b}-{k:04d}", a, b)
                if xss:
                    conv.turns[2].text = xss
                study.store.save_conversation(study.id, conv)
        for k in range(humans):
            study.store.save_conversation(study.id, _human(f"human-{k:04d}", 5))
    finally:
        study.close()
    return folder


def make_prompts_study(folder: Path, prompts: list[dict], answers: dict[str, dict[str, str]], **protocol) -> Path:
    """A prompt-set study of imported systems: `answers` is {system: {prompt id: answer}}, brought in
    through the method's answers importer (a CSV), as `dialeval import answers` does."""
    import csv
    import json

    from dialeval.methods.prompts.answers import import_answers

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts), encoding="utf-8")
    study = {
        "name": folder.name,
        "method": "prompts",
        "bots": [{"name": s, "type": "imported"} for s in answers],
        "annotation": {"require_justification": False, "min_justification_words": 0},
        "protocol": {"prompts": "prompts.jsonl", **protocol},
    }
    (folder / "study.yaml").write_text(yaml.safe_dump(study), encoding="utf-8")
    path = folder.parent / f"{folder.name}-answers.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["prompt_id", "system", "answer"])
        for system, by_prompt in answers.items():
            writer.writerows([pid, system, text] for pid, text in by_prompt.items())
    import_answers(folder, [path], lambda line: None)
    return folder
