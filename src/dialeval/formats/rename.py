"""Relabel systems in a data set (e.g. long ParlAI model paths to a paper's short names)."""

from __future__ import annotations

from ..records import Dataset

# judgment value keys and unit payload keys that hold a system name (never a conversation id)
_VALUE_KEYS = ("chosen", "other", "model_a", "model_b")
_PAYLOAD_KEYS = ("correct_answer",)
_PAYLOAD_LISTS = ("speakers_to_eval", "systems")


def rename_systems(dataset: Dataset, renames: dict[str, str]) -> Dataset:
    """Rename bots everywhere a system name appears: conversations, turns, units, judgments."""

    def r(name):
        return renames.get(name, name) if isinstance(name, str) else name

    for c in dataset.conversations:
        c.bots = [r(b) for b in c.bots]
        for t in c.turns:
            t.bot = r(t.bot)
            for cand in t.candidates or []:
                cand["bot"] = r(cand.get("bot"))
    for u in dataset.units:
        for key in _PAYLOAD_LISTS:
            if isinstance(u.payload.get(key), list):
                u.payload[key] = [r(b) for b in u.payload[key]]
        for key in _PAYLOAD_KEYS:
            if key in u.payload:
                u.payload[key] = r(u.payload[key])
    conversation_ids = {c.id for c in dataset.conversations}
    for j in dataset.judgments:
        if isinstance(j.value, dict):
            for key in _VALUE_KEYS:
                if key in j.value:
                    j.value[key] = r(j.value[key])
        # shown_order lists systems, or conversations (ACUTE-Eval shows two conversations): only systems are renamed
        if j.shown_order and not set(j.shown_order) <= conversation_ids:
            j.shown_order = [r(b) for b in j.shown_order]
    return dataset
