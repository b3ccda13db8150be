"""The simulated annotator's steps on the arena page (driven by simulate/annotator.py).

Per page visit, by the page's ``data-stage``: write a message (``chat``), follow the two streamed
replies (``waiting``), vote (``vote``), or, with a vote held (``voted``), sometimes change it within
the window and then post ``next`` -- which makes it final. What the person perceives (which bot is
Model A) is read from the store by assignment id; only the decision uses it, through the latent
strengths of SimTruth: a careful annotator calls a tie when the two are close, both bad when both
are weak, else prefers the stronger with the profile's noise and side bias.
"""

from __future__ import annotations

import re

from ...simulate import model
from ...simulate.annotator import SimulatedAnnotator, shown_texts, shows

SECONDS = {"arena": 20.0}  # one vote: two replies read (the message itself is timed as "message")
TIE_MARGIN = 0.15  # latent strengths this close read as equally good
BOTH_BAD_BELOW = -1.5  # both bots this weak read as both bad
CHANGE_P = 0.1  # a person changes a vote within the window this often
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")


def replies_shown(page: str) -> list[str]:
    """The texts of the last round's two replies as the page shows them."""
    rounds = re.findall(r'<li class="arena-round">(.*?)</li>', page, re.DOTALL)
    if not rounds:
        return []
    return shown_texts(rounds[-1])


def decide(sim: SimulatedAnnotator, sides: list[str]) -> str:
    if sim.profile.random_answers:
        winner: str = sim.rng.choice(WINNERS)
        return winner
    if sim.profile.role == "adversary" and sim.profile.favourite in sides and len(set(sides)) == 2:
        return "model_a" if sides[0] == sim.profile.favourite else "model_b"
    a, b = (sim.truth.strength(s) for s in sides)
    if a < BOTH_BAD_BELOW and b < BOTH_BAD_BELOW:
        return "tie (bothbad)"
    if abs(a - b) < TIE_MARGIN and sim.rng.random() < 0.5:
        return "tie"
    pick = model.choose_pairwise(a, b, sim.profile.side_bias, sim.profile.noise, sim.rng)
    return "model_a" if pick == 0 else "model_b"


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    stage = sim.stage(page)
    if stage == "waiting":
        sim.follow_reply(aid)
    elif stage == "chat":
        sim.send(aid, f"a{aid}")
    elif stage == "vote":
        a = sim.assignment(aid)
        sides = list(a.state.get("sides") or a.shown_order or [])
        pending = a.state.get("pending")
        if pending:  # per-turn: the page must show exactly the stored replies
            shown = replies_shown(page)
            stored = [c["text"] for c in pending["candidates"]]
            if len(shown) != len(stored) or not all(shows(s, t) for s, t in zip(shown, stored)):
                sim.log.errors.append(f"assignment {aid}: the replies shown differ from the stored ones")
        # an acknowledged vote is one judgment, final at "next", when its window passes or when the
        # crowd has left (Method.settle), whichever comes first
        sim.act(aid, "vote", {"winner": decide(sim, sides), "elapsed_ms": sim.elapsed_ms("arena")}, judgment=True)
    elif stage == "voted":
        if sim.rng.random() < CHANGE_P:  # second thoughts, inside the window: the same judgment
            a = sim.assignment(aid)
            current = (a.state.get("vote") or {}).get("winner")
            other = sim.rng.choice([w for w in WINNERS if w != current])
            sim.act(aid, "vote", {"winner": other}, judgment=False)
        sim.act(aid, "next", {}, judgment=False)  # refused as closed when the window passed meanwhile
    elif stage == "complete":
        return
    else:
        sim.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
        sim.gone = True
