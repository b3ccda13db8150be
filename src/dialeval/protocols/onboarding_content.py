"""Onboarding for PW-Turn (Smith et al. 2022, Appendix A): one fixed conversation with four response pairs.

At each of the four partner turns, one candidate is a sensible continuation and the other is
clearly broken: repetitive, off-topic, ungrammatical or contradictory. A worker must pick the
sensible one all four times (two tries by default) before the real task. The content is our own.

`good` is the index (0 or 1) of the better candidate as written here; the page shows the two in a
random order per try, and the server checks the answers against `good`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class OnboardingStep:
    human: str  # what the person said just before
    candidates: tuple[str, str]
    good: int  # index in `candidates` of the clearly better reply
    flaw: str  # what is wrong with the other one (for readers of this file; never shown)


PERSONA = ("I work as a nurse on night shifts.", "I grow tomatoes on my balcony.")

STEPS: tuple[OnboardingStep, ...] = (
    OnboardingStep(
        human="Hi!",
        candidates=("Hi there! How is your day going so far?", "hi hi hi hi hi hi hi hi hi hi"),
        good=0,
        flaw="repeats one word",
    ),
    OnboardingStep(
        human="Pretty tiring, I just finished a night shift at the hospital.",
        candidates=(
            "The capital of Australia is Canberra and the tallest tree is a redwood.",
            "Night shifts sound exhausting. Do you get to sleep during the day?",
        ),
        good=1,
        flaw="ignores what was said",
    ),
    OnboardingStep(
        human="I try to, but I usually water my tomatoes first. They are on my balcony.",
        candidates=(
            "Balcony tomatoes! Do they get enough sun up there?",
            "tomatoes balcony water the the is are water tomato?",
        ),
        good=0,
        flaw="is not a sentence",
    ),
    OnboardingStep(
        human="They do, I already picked a dozen this summer. Do you have any plants?",
        candidates=(
            "I do not like talking. I do not like talking. I do not like talking.",
            "Only a small basil pot in my kitchen, but I would love to try tomatoes.",
        ),
        good=1,
        flaw="repeats itself and is rude",
    ),
)


def shuffled_orders(rng: random.Random) -> list[list[int]]:
    """For each step, the order in which its two candidates are shown (a permutation of [0, 1])."""
    return [rng.sample([0, 1], 2) for _ in STEPS]


def score(answers: list[int | None]) -> int:
    """How many of the four steps were answered with the better candidate (answers index `candidates`)."""
    return sum(1 for step, a in zip(STEPS, answers) if a == step.good)


def passed(answers: list[int | None]) -> bool:
    return len(answers) == len(STEPS) and score(answers) == len(STEPS)
