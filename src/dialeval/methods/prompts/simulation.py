"""The simulated annotator's step on the prompt-set page (simulate/annotator.py drives the session)."""

from __future__ import annotations

import re

from ...simulate import model
from ...simulate.annotator import SimulatedAnnotator, shown_texts, shows

TIE_WITHIN = 0.15  # a careful annotator calls it a tie when P(A) is this close to one half
CHECK_ACCURACY = 0.95  # a careful annotator sees which answer is off-topic


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    a = sim.assignment(aid)
    order = a.shown_order or a.conversation_ids
    shown = answer_texts(page)
    for n, conv_id in enumerate(order):
        texts = [t.text for t in sim.conversation(conv_id).turns]
        if n < len(shown) and shown[n] and not all(any(shows(x, t) for t in texts) for x in shown[n]):
            sim.log.errors.append(f"assignment {aid}: answer {'AB'[n]} does not show conversation {conv_id}")
    if sim.profile.careless:
        choice = sim.rng.choice(["A", "B", "A", "B", "tie"])
    elif a.payload.get("is_check"):
        right = "AB"[order.index(a.payload["correct"])]
        choice = right if sim.rng.random() < CHECK_ACCURACY else "AB"[1 - "AB".index(right)]
    else:
        bots = [a.payload["speakers_to_eval"][a.conversation_ids.index(c)] for c in order]
        s_a, s_b = sim.truth.strength(bots[0]), sim.truth.strength(bots[1])
        p_a = model.sigmoid((s_a - s_b) / max(sim.profile.noise, 1e-6) + sim.profile.side_bias)
        if abs(p_a - 0.5) < TIE_WITHIN and sim.rng.random() < 0.5:
            choice = "tie"
        else:
            choice = (
                "A" if model.choose_pairwise(s_a, s_b, sim.profile.side_bias, sim.profile.noise, sim.rng) == 0 else "B"
            )
    seconds = sim.think("onboarding" if a.state.get("practice") else "prompts")
    sim.act(
        aid,
        "submit",
        {
            "choice": choice,
            "justification": model.justification(sim.rng, sim.profile.careless, f"answer {choice}"),
            "elapsed_ms": str(int(seconds * 1000)),
        },
    )


def answer_texts(page: str) -> list[list[str]]:
    """The answers' texts on each side of the page, as read (simulate.annotator.shown_texts)."""
    return [
        shown_texts("".join(re.findall(r'<li class="msg msg-eval[^"]*">.*?</li>', block, re.DOTALL)))
        for block in re.findall(r'<section class="side"[^>]*>(.*?)</section>', page, re.DOTALL)
    ]
