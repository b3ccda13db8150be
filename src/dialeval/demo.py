"""The demo: one small study of every method with the bundled bots, ready to serve or simulate.

Each method's demo study is its `Method.demo` (methods/<id>/__init__.py). Everything works offline:
the bots are the bundled retrieval, ELIZA, repeat and degraded bots, the seed conversations come
from the bundled chitchat corpus.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .registry import get


def demo_methods() -> tuple[str, ...]:
    """The methods with a demo study (each method's `Method.demo`), in registry order."""
    from .registry import all_methods

    return tuple(m.id for m in all_methods().values() if m.demo is not None and m.collectable)


def demo_study_data(method: str, seed: int = 1) -> dict[str, Any]:
    data = {
        "name": f"demo-{method}",
        "method": method,
        "seed": seed,
        "description": f"dialeval demo study of {method} with the bundled bots",
        **copy.deepcopy(get(method).demo or {}),
    }
    data["pages"] = {"title": f"dialeval demo: {method}"}
    return data


def planned_conversations(methods: tuple[str, ...] | None = None, seed: int = 1) -> int:
    """How many conversations `create_demo` generates (the progress bar's total)."""
    from .config import StudyConfig
    from .dialogue.generate import study_plan

    total = 0
    for method in methods or demo_methods():
        config = StudyConfig.model_validate(demo_study_data(method, seed))
        planned = get(method).planned
        if planned is not None:  # the method's own material (answers to a bundled prompt set)
            from .registry import load_part

            total += load_part(planned)(config, ".")
        elif config.generation.mode != "none":
            plan = study_plan(config)
            total += len(plan.conversation_ids()) + len(plan.human_ids())
    return total


def clear_demo(out: str | Path, methods: tuple[str, ...] | None = None) -> None:
    """Remove the demo's own study folders under `out` (nothing else there) so a run starts afresh."""
    import shutil

    for method in methods or demo_methods():
        folder = Path(out) / method
        if (folder / "study.yaml").exists():
            shutil.rmtree(folder)


def create_demo(out: str | Path, methods: tuple[str, ...] | None = None, seed: int = 1, progress=None) -> list[Path]:
    """Write the demo study folders under `out` and generate their conversations (resumably)."""
    from .dialogue.generate import generate_study, study_plan
    from .study import open_study, write_study_file

    folders = []
    for method in methods or demo_methods():
        folder = Path(out) / method
        if not (folder / "study.yaml").exists():
            write_study_file(folder, demo_study_data(method, seed))
        opened = open_study(folder)
        own = get(method).generate
        try:
            if own is not None:  # the method makes its own material (answers to a prompt set)
                from .registry import load_part

                on_item = None
                if progress:

                    def on_item(item: Any, method: str = method) -> None:
                        progress(method, item)

                load_part(own)(opened, on_done=on_item)
            elif opened.config.generation.mode != "none":
                generate_study(
                    opened,
                    study_plan(opened.config),
                    on_done=(lambda conv, method=method: progress(method, conv)) if progress else None,
                )
        finally:
            opened.close()
        folders.append(folder)
    return folders
