"""The simulated annotator's steps on the arena page (driven by simulate/annotator.py).

Per page visit, by the page's ``data-stage``: write a message (``chat``), follow the two streamed
replies (``waiting``), vote (``vote``), or, with a vote held (``voted``), sometimes change it within
the window and then post ``next`` -- which makes it final. What the person perceives (which bot is
Model A) is read from the store by assignment id; only the decision uses it, through the latent
strengths of SimTruth: a careful annotator calls a tie when the two are close, both bad when both
are weak, else prefers the stronger with the profile's noise and side bias.
"""

from __future__ import annotations

import html
import re

from ...simulate import model
from ...simulate.annotator import SimulatedAnnotator

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
    return [html.unescape(t).strip() for t in re.findall(r'<span class="text">(.*?)</span>', rounds[-1], re.DOTALL)]


def decide(sim, sides: list[str]) -> str:
    if sim.profile.careless:
        return sim.rng.choice(WINNERS)
    a, b = (sim.truth.strength(s) for s in sides)
    if a < BOTH_BAD_BELOW and b < BOTH_BAD_BELOW:
        return "tie (bothbad)"
    if abs(a - b) < TIE_MARGIN and sim.rng.random() < 0.5:
        return "tie"
    pick = model.choose_pairwise(a, b, sim.profile.side_bias, sim.profile.noise, sim.rng)
    return "model_a" if pick == 0 else "model_b"


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    held: set[int] = sim.__dict__.setdefault("arena_held_votes", set())  # assignments with a vote held
    stage = sim.stage(page)
    if aid in held and stage != "voted":
        held.discard(aid)
        sim.log.judgments += 1  # the server made the held vote final meanwhile (its window passed)
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
            if shown != [c["text"].strip() for c in pending["candidates"]]:
                sim.log.errors.append(f"assignment {aid}: the replies shown differ from the stored ones")
        res = sim.act(
            aid, "vote", {"winner": decide(sim, sides), "elapsed_ms": sim.elapsed_ms("arena")}, judgment=False
        )
        if res is not None:
            held.add(aid)
    elif stage == "voted":
        held.discard(aid)
        if sim.rng.random() < CHANGE_P:  # second thoughts, inside the window
            a = sim.assignment(aid)
            current = (a.state.get("vote") or {}).get("winner")
            other = sim.rng.choice([w for w in WINNERS if w != current])
            sim.act(aid, "vote", {"winner": other}, judgment=False)
        if sim.act(aid, "next", {}, judgment=True) is None:
            sim.log.judgments += 1  # refused as closed: the window had passed and the server made it final
    elif stage == "complete":
        return
    else:
        sim.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
        sim.gone = True
