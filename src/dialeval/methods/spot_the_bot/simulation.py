"""The simulated annotator's steps on Spot The Bot's task page (simulate/annotator.py drives the session)."""

from __future__ import annotations

import re

from ...simulate import model
from ...simulate.annotator import SimulatedAnnotator, SimulationError, shown_texts, shows


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    a = sim.assignment(aid, as_first_read=True)  # its segments and their order, fixed when it was made
    m = re.search(r'name="position" value="(\d+)"', page)
    if m is None:
        raise SimulationError("no segment position on the Spot The Bot page")
    pos = int(m.group(1))
    seg = a.payload["segments"][(a.shown_order or [])[pos]]
    conv = sim.conversation(seg["conversation"])
    shown = shown_texts(page)
    expected = [t.text for t in conv.turns[: 2 + 2 * seg["exchanges"]]]
    if len(shown) != len(expected) or not all(shows(s, e) for s, e in zip(shown, expected)):
        sim.log.errors.append(f"assignment {aid}: segment {pos} does not show {seg['conversation']}")
    human = seg["human"]
    bots = list(conv.bots) if not human else ["human", "human"]
    k = seg["exchanges"]
    strengths = [sim.truth.strength(b) for b in bots]
    careless = sim.profile.random_answers  # careless or a spammer
    data = {
        f"entity{e}": model.stb_label(not human and bots[e] != "human", strengths[e], k, sim.rng, careless=careless)
        for e in (0, 1)
    }
    for f in ("fluency", "sensibleness", "specificity"):
        data[f] = model.stb_feature(strengths[0], strengths[1], sim.profile.noise, sim.rng, careless=careless)
    data["position"] = str(pos)
    data["elapsed_ms"] = str(int(sim.think("spot-the-bot") * 1000))
    sim.act(aid, "segment", data)
