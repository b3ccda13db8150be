"""Persona sentences shown to annotators (and given to bots) in live chats and self-chats.

The sentences live in data/personas.txt, grouped by topic; a persona takes at most one sentence
per group so that it does not contradict itself.
"""

from __future__ import annotations

import random
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def persona_groups() -> tuple[tuple[str, ...], ...]:
    """The bundled persona sentences, one tuple per topic group, in file order."""
    text = resources.files("dialeval").joinpath("data/personas.txt").read_text(encoding="utf-8")
    groups: list[list[str]] = []
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            current = None  # a comment or a topic header closes the group
            continue
        if not line:
            continue
        if current is None:
            current = []
            groups.append(current)
        current.append(line)
    return tuple(tuple(g) for g in groups if g)


def all_personas() -> list[str]:
    return [s for group in persona_groups() for s in group]


def sample_persona(rng: random.Random, k: int = 2, exclude: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """k persona sentences from k different topic groups, none of them in `exclude`."""
    groups = [[s for s in g if s not in exclude] for g in persona_groups()]
    groups = [g for g in groups if g]
    if k > len(groups):
        raise ValueError(f"a persona can have at most {len(groups)} sentences, not {k}")
    return [rng.choice(g) for g in rng.sample(groups, k)]


def persona_pairs(rng: random.Random, n: int, k: int = 2) -> list[tuple[list[str], list[str]]]:
    """n pairs of personas, one pair per conversation: (first speaker's, second speaker's).

    The two personas of a pair share no sentence, so two speakers never claim the same fact.
    """
    pairs = []
    for _ in range(n):
        first = sample_persona(rng, k)
        pairs.append((first, sample_persona(rng, k, exclude=set(first))))
    return pairs
