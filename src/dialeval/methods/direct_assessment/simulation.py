"""The simulated annotator's steps on Direct Assessment's task page (simulate/annotator.py drives the session)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...simulate import model
from ...simulate.annotator import TOPICS, SimulatedAnnotator

if TYPE_CHECKING:
    from ...store.store import Store


def _number(pattern: str, page: str) -> int:
    """The number the page shows in `pattern`'s first group (the task page shows it at this stage)."""
    found = re.search(pattern, page)
    if found is None:
        raise ValueError(f"the task page does not show {pattern!r}")
    return int(found.group(1))


def step(sim: SimulatedAnnotator, aid: int, page: str) -> None:
    stage = sim.stage(page)
    position = _number(r"Conversation (\d+) of (\d+)", page)
    if stage == "topic":
        data = {"opinion": sim.rng.choice(("like", "ambivalent", "dislike"))}
        if re.search(r'name="topic"', page):
            data["topic"] = sim.rng.choice(TOPICS)
        sim.act(aid, "start_chat", data)
    elif stage == "waiting":
        sim.follow_reply(aid)
    elif stage == "chat":
        inputs = _number(r"Your messages: (\d+)", page)
        need = _number(r"at least (\d+) before you can finish", page)
        if inputs >= need:
            sim.act(aid, "end_chat", {})
        else:
            if inputs == need // 2 and sim.rng.random() < 0.2:
                sim.act(aid, "topic", {"topic": sim.rng.choice(TOPICS)})
            sim.send(aid, f"a{aid}-{position}")
    elif stage == "rate":
        a = sim.assignment(aid)
        order = list(a.shown_order or a.payload["bots"])
        bot = order[position - 1]
        is_qc = bot == a.payload.get("qc_bot")
        ratings = model.da_ratings(
            sim.truth.strength(bot),
            is_qc,
            careless=sim.profile.careless,
            lenience=sim.profile.lenience,
            noise=sim.profile.noise,
            rng=sim.rng,
        )
        sim.act(
            aid,
            "rate",
            {
                **{k: str(v) for k, v in ratings.items()},
                "position": str(position),
                "elapsed_ms": sim.elapsed_ms("direct-assessment"),
            },
        )
    else:
        sim.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
        sim.gone = True


def qc_reasons(store: Store, study_id: int, annotator_id: int) -> list[str]:
    """The quality-control reasons the pages record besides the worker filters: a failed QC test."""
    from ...store.facade import StudyStore
    from .protocol import qc_status

    return ["failed_qc_test"] if qc_status(StudyStore(store, study_id), annotator_id)["passed"] is False else []
