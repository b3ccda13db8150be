"""The simulated annotator's steps on ACUTE-Eval's task page (simulate/annotator.py drives the session)."""

from __future__ import annotations

import re

from ...simulate import model
from ...simulate.annotator import SimulatedAnnotator, shown_texts, shows


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    a = sim.assignment(aid)
    order = a.shown_order or a.conversation_ids
    speakers = a.payload["speakers_to_eval"]
    bots = [speakers[a.conversation_ids.index(c)] for c in order]
    shown = acute_sides(page)
    for n, conv_id in enumerate(order):
        conv = sim.conversation(conv_id)
        texts = {t.text for t in conv.turns}
        if n < len(shown) and shown[n] and not all(any(shows(s, t) for t in texts) for s in shown[n]):
            sim.log.errors.append(f"assignment {aid}: side {n + 1} does not show conversation {conv_id}")
    question = a.payload.get("question")
    onboarding = a.unit_kind.endswith("onboarding")
    choice = model.pick_side(
        sim.profile,
        bots[0],
        bots[1],
        sim.truth.strength(bots[0], question),
        sim.truth.strength(bots[1], question),
        sim.rng,
    )
    seconds = sim.think("onboarding" if onboarding else "acute")
    sim.act(
        aid,
        "submit",
        {
            "choice": str(choice + 1),
            "justification": model.justification(sim.rng, sim.profile.careless, f"speaker {choice + 1}"),
            "elapsed_ms": str(int(seconds * 1000)),
        },
    )


def acute_sides(page: str) -> list[list[str]]:
    """The highlighted speaker's texts on each side of an ACUTE page."""
    sides = []
    for block in re.findall(r'<section class="side"[^>]*>(.*?)</section>', page, re.DOTALL):
        turns = re.findall(r'<li class="msg msg-eval[^"]*">(.*?)</li>', block, re.DOTALL)
        sides.append([t for turn in turns for t in shown_texts(turn)])
    return sides
