"""The pure scheduling policies of scheduling/assign.py (used by the ACUTE scheduler): the
per-annotator cap, the load of each balancing group and of each conversation."""

from __future__ import annotations

import random

from dialeval.scheduling.assign import SchedulingView, cap_reached, conversation_load, group_load
from dialeval.store.work import AssignmentInfo, UnitInfo


def unit(uid: int, convs: list[str], pair: tuple[str, str], question: str = "q") -> UnitInfo:
    return UnitInfo(uid, f"u{uid}", "acute", convs, {"bot_pair": list(pair), "question": question})


def assignment(uid: int, kind: str = "acute", status: str = "submitted") -> AssignmentInfo:
    return AssignmentInfo(uid, 1, 1, uid, f"u{uid}", kind, [], {}, status, None, {})


def view(load: dict[int, dict[str, int]]) -> SchedulingView:
    return SchedulingView(
        session=None,
        study_id=1,
        annotator=None,
        history=[],
        load=load,  # type: ignore[arg-type]
        rng=random.Random(0),
    )


def test_cap_reached_counts_only_the_kind_asked():
    history = [assignment(1), assignment(2, kind="acute-onboarding"), assignment(3, status="assigned")]
    assert not cap_reached(history, None)
    assert cap_reached(history, 3) and not cap_reached(history, 4)
    assert cap_reached(history, 2, "acute") and not cap_reached(history, 3, "acute")
    assert not cap_reached(history, 2, "acute-onboarding") and cap_reached(history, 1, "acute-onboarding")


def test_group_and_conversation_load_sum_submitted_and_open_assignments():
    units = [
        unit(1, ["c1", "c2"], ("a", "b")),
        unit(2, ["c2", "c3"], ("b", "a")),
        unit(3, ["c4", "c5"], ("a", "c")),
        unit(4, ["c6", "c7"], ("a", "c")),
    ]
    v = view(
        {1: {"submitted": 2, "assigned": 1}, 2: {"submitted": 1, "assigned": 0}, 3: {"submitted": 0, "assigned": 1}}
    )
    by_pair = group_load(units, v, lambda u: tuple(sorted(u.payload["bot_pair"])))
    assert by_pair == {("a", "b"): 4, ("a", "c"): 1}  # unit 4 is unused: its group counts 0 more
    assert conversation_load(units, v) == {"c1": 3, "c2": 4, "c3": 1, "c4": 1, "c5": 1}  # unused ones absent


def test_a_view_reads_its_load_once_on_first_use():
    reads: list[int] = []

    def read_load() -> dict[int, dict[str, int]]:
        reads.append(1)
        return {5: {"submitted": 1, "assigned": 1}}

    v = SchedulingView(
        session=None,  # type: ignore[arg-type]
        study_id=1,
        annotator=None,  # type: ignore[arg-type]
        history=[],
        load={},
        rng=random.Random(0),
        read_load=read_load,
    )
    assert not v.load_read and reads == []  # a choice from the history alone reads nothing
    assert v.used(5) == 2 and v.used(6) == 0 and v.load == {5: {"submitted": 1, "assigned": 1}}
    assert v.load_read and reads == [1]
