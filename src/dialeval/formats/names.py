"""System names the store can take, made from any name a data set uses.

A study's bot names must match ``BOT_NAME_PATTERN`` (they appear in URLs, file names and YAML). Outside
data uses whatever its authors wrote: ParlAI model paths (``zoo:blender/blender_90M/model``), Arena
names with spaces or parentheses. Import turns each such name into a valid one and keeps the original
(in the bot's ``options.original_name`` of the study file), instead of refusing the data.
"""

from __future__ import annotations

import re

from ..records import Dataset
from .rename import rename_systems

BOT_NAME_PATTERN = r"^[A-Za-z0-9_.+\-]+$"
MAX_LENGTH = 100
_VALID = re.compile(BOT_NAME_PATTERN)
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_.+\-]+")
HUMAN = "human"


def is_valid_name(name: str) -> bool:
    return bool(_VALID.match(name)) and len(name) <= MAX_LENGTH


def safe_name(name: str) -> str:
    """``zoo:blender/blender_90M/model`` -> ``zoo-blender-blender_90M-model``: each run of characters
    the store cannot take becomes one ``-``; an empty result is ``system``."""
    if is_valid_name(name):
        return name
    cleaned = _NOT_ALLOWED.sub("-", name).strip("-.")[:MAX_LENGTH].strip("-.")
    return cleaned or "system"


def dataset_system_names(dataset: Dataset) -> list[str]:
    """Every system named in a data set, in first-seen order (conversations, then judgment values)."""
    names: list[str] = []

    def add(name: object) -> None:
        if isinstance(name, str) and name and name != HUMAN and name not in names:
            names.append(name)

    for c in dataset.conversations:
        for b in c.bots:
            add(b)
    for j in dataset.judgments:
        if isinstance(j.value, dict):
            add(j.value.get("model_a"))
            add(j.value.get("model_b"))
    return names


def make_names_safe(dataset: Dataset) -> dict[str, str]:
    """Rename every system the store cannot take; returns {new name: original name}.

    New names are unique: a clash with another system's name gets ``-2``, ``-3``, ...
    """
    names = dataset_system_names(dataset)
    taken = {n for n in names if is_valid_name(n)}
    renames: dict[str, str] = {}
    for name in names:
        if is_valid_name(name):
            continue
        base = safe_name(name)
        new, k = base, 2
        while new in taken:
            suffix = f"-{k}"
            new = base[: MAX_LENGTH - len(suffix)] + suffix
            k += 1
        taken.add(new)
        renames[name] = new
    if renames:
        rename_systems(dataset, renames)
    return {new: old for old, new in renames.items()}
