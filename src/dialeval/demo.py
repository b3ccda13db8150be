"""The demo: one small study of every method with the bundled bots, ready to serve or simulate.

Everything works offline: the bots are the bundled retrieval, ELIZA, repeat and degraded bots, the
seed conversations come from the bundled chitchat corpus.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from . import METHODS

DEMO_BOTS = [
    {"name": "retrieval", "type": "retrieval"},
    {"name": "eliza", "type": "eliza"},
    {"name": "repeat", "type": "repeat"},
]

# Small enough to generate in seconds and to be completed by a simulated crowd in a minute or two.
DEMO_STUDIES: dict[str, dict[str, Any]] = {
    "acute": {
        "bots": DEMO_BOTS,
        "generation": {"mode": "self-chat", "conversations": 8, "turns": 4},
        "questions": [{"id": "preference"}],
        "annotation": {"units_per_annotator": 1},
        "protocol": {"comparisons_per_unit": 3, "annotations_per_pair": 20, "onboarding_weak_bot": "repeat"},
    },
    "pairwise-turn": {
        "bots": DEMO_BOTS[:2],
        "questions": [{"id": "preference"}],
        "onboarding": {"enabled": True, "on_fail": "block", "tries": 2},
        "protocol": {"bot_turns": 6, "conversations_per_pair": 20},
    },
    "single-model": {
        "bots": DEMO_BOTS,
        "protocol": {"bot_turns": 6, "conversations_per_bot": 10},
    },
    "spot-the-bot": {
        "bots": DEMO_BOTS,
        "generation": {"mode": "bot-bot", "conversations": 6, "turns": 5, "human_conversations": 6},
        "protocol": {
            "segment_exchanges": [2, 3, 5],
            "bot_segments_per_package": 8,
            "human_segments_per_package": 2,
            "packages_per_annotator": 2,
            "annotations_per_segment": 2,
        },
    },
    "direct-assessment": {
        "bots": [*DEMO_BOTS, {"name": "qc", "type": "degraded", "options": {"seed": 7}}],
        "protocol": {"min_inputs": 10, "qc_bot": "qc", "topic": "free", "hits_per_annotator": 1},
    },
}


def demo_study_data(method: str, seed: int = 1) -> dict[str, Any]:
    data = {
        "name": f"demo-{method}",
        "method": method,
        "seed": seed,
        "description": f"dialeval demo study of {method} with the bundled bots",
        **copy.deepcopy(DEMO_STUDIES[method]),
    }
    data["pages"] = {"title": f"dialeval demo: {method}"}
    return data


def planned_conversations(methods: tuple[str, ...] = METHODS, seed: int = 1) -> int:
    """How many conversations `create_demo` generates (the progress bar's total)."""
    from .config import StudyConfig
    from .dialogue.generate import study_plan

    total = 0
    for method in methods:
        config = StudyConfig.model_validate(demo_study_data(method, seed))
        if config.generation.mode != "none":
            plan = study_plan(config)
            total += len(plan.conversation_ids()) + len(plan.human_ids())
    return total


def clear_demo(out: str | Path, methods: tuple[str, ...] = METHODS) -> None:
    """Remove the demo's own study folders under `out` (nothing else there) so a run starts afresh."""
    import shutil

    for method in methods:
        folder = Path(out) / method
        if (folder / "study.yaml").exists():
            shutil.rmtree(folder)


def create_demo(out: str | Path, methods: tuple[str, ...] = METHODS, seed: int = 1, progress=None) -> list[Path]:
    """Write the demo study folders under `out` and generate their conversations (resumably)."""
    from .dialogue.generate import generate_study, study_plan
    from .study import open_study, write_study_file

    folders = []
    for method in methods:
        folder = Path(out) / method
        if not (folder / "study.yaml").exists():
            write_study_file(folder, demo_study_data(method, seed))
        opened = open_study(folder)
        try:
            if opened.config.generation.mode != "none":
                generate_study(
                    opened,
                    study_plan(opened.config),
                    on_done=(lambda conv, method=method: progress(method, conv)) if progress else None,
                )
        finally:
            opened.close()
        folders.append(folder)
    return folders
