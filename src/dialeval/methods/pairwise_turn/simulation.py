"""The simulated annotator's steps on PW-Turn's task page (simulate/annotator.py drives the session)."""

from __future__ import annotations

import re

from ...simulate import model
from ...simulate.annotator import SimulatedAnnotator, shows


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    from ...protocols import onboarding_content as onb

    stage = sim.stage(page)
    if stage == "onboarding":
        steps = [
            sim.candidates_shown(block)
            for block in re.findall(r'<fieldset class="onb-step">(.*?)</fieldset>', page, re.DOTALL)
        ]
        data = {}
        for k, options in enumerate(steps):
            good = onb.STEPS[k].candidates[onb.STEPS[k].good]
            right = next((i for i, o in enumerate(options) if shows(o, good)), 0)
            careful_ok = not sim.profile.careless and sim.rng.random() > 0.02
            data[f"step{k}"] = str(right if careful_ok else sim.rng.randrange(2))
        data["elapsed_ms"] = sim.elapsed_ms("onboarding")
        sim.act(aid, "onboarding", data)  # a failure that blocks: the next task page is the done page
    elif stage == "waiting":
        sim.follow_reply(aid)
    elif stage == "chat":
        sim.send(aid, f"a{aid}")
    elif stage == "choose":
        a = sim.assignment(aid)
        pending = a.state.get("pending") or {}
        cands = pending.get("candidates") or []
        shown = sim.candidates_shown(page)
        if len(shown) != len(cands) or not all(shows(s, c["text"]) for s, c in zip(shown, cands)):
            sim.log.errors.append(f"assignment {aid}: the candidates shown differ from the stored ones")
        m = re.search(r'name="turn" value="(\d+)"', page)
        question = a.payload.get("question")
        choice = model.pick_side(
            sim.profile,
            cands[0]["bot"],
            cands[1]["bot"],
            sim.truth.strength(cands[0]["bot"], question),
            sim.truth.strength(cands[1]["bot"], question),
            sim.rng,
        )
        sim.act(
            aid,
            "choose",
            {
                "elapsed_ms": sim.elapsed_ms("pairwise-turn"),
                "turn": m.group(1) if m else "0",
                "choice": str(choice),
                "justification": model.justification(sim.rng, sim.profile.careless, f"response {choice + 1}"),
            },
        )
    else:
        sim.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
        sim.gone = True
