"""Relabel systems in a data set (e.g. long ParlAI model paths to a paper's short names)."""

from __future__ import annotations

from ..records import Dataset


def rename_systems(dataset: Dataset, renames: dict[str, str]) -> Dataset:
    """Rename bots everywhere a system name appears: conversations, turns, unit payloads, judgment values."""
    def r(name):
        return renames.get(name, name) if isinstance(name, str) else name

    for c in dataset.conversations:
        c.bots = [r(b) for b in c.bots]
        for t in c.turns:
            t.bot = r(t.bot)
            for cand in t.candidates or []:
                cand["bot"] = r(cand.get("bot"))
    for u in dataset.units:
        if "speakers_to_eval" in u.payload:
            u.payload["speakers_to_eval"] = [r(b) for b in u.payload["speakers_to_eval"]]
    for j in dataset.judgments:
        if isinstance(j.value, dict):
            for key in ("chosen", "other"):
                if key in j.value:
                    j.value[key] = r(j.value[key])
    return dataset
