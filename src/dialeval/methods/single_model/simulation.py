"""The simulated annotator's steps on SM-Turn + SM-Dialog's task page (simulate/annotator.py drives the session)."""

from __future__ import annotations

import re
from typing import Any

from ...simulate import model
from ...simulate.annotator import SimulatedAnnotator


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    stage = sim.stage(page)
    if stage == "waiting":
        sim.follow_reply(aid)
    elif stage == "chat":
        sim.send(aid, f"a{aid}")
    elif stage == "check":
        a = sim.assignment(aid)
        strength = sim.truth.strength(a.payload["bot"], "turn")
        ticked = model.sm_turn_qualities(
            strength, sim.profile.lenience, sim.profile.noise, sim.rng, careless=sim.profile.random_answers
        )
        m = re.search(r'name="turn" value="(\d+)"', page)
        data: dict[str, Any] = {"turn": m.group(1) if m else "0"}
        if ticked:
            data["quality"] = ticked
        else:
            data["none"] = "1"
        data["elapsed_ms"] = sim.elapsed_ms("single-model-turn")
        sim.act(aid, "rate", data)
    elif stage == "final":
        a = sim.assignment(aid)
        strength = sim.truth.strength(a.payload["bot"], "dialog")
        data = {}
        for q in ("engaging", "humanlike", "interesting"):
            data[q] = str(
                sim.rng.randint(1, 5)
                if sim.profile.random_answers
                else model.likert(strength, sim.profile.lenience, sim.profile.noise, sim.rng)
            )
        data["elapsed_ms"] = sim.elapsed_ms("single-model-dialog")
        sim.act(aid, "final", data)
    else:
        sim.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
        sim.gone = True
