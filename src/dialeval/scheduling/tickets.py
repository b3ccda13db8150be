"""The scheduler's side of judge-guided collection (scheduling/pools.py explains the scheme): freeze the
pools once, from the judge's labels as they stand at the first assignment, and hand an annotator the
next ticket of a bot pair. Reads and writes go through store.work inside the scheduling transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..records import judge_annotator_id
from ..store import work
from ..store.work import UnitInfo
from .assign import Choice, Group, SchedulingView
from .pools import LOOKAHEAD, PairPool, build_pool, ticket_unit
from .process_state import Pools, scheduler_state

if TYPE_CHECKING:
    from ..protocols import base

GroupOf = Callable[[UnitInfo], Group]
# did the pair's first bot win, in this stored judge answer on this unit (None: not a winner answer)
FirstWon = Callable[[UnitInfo, Any], bool | None]


class GuidedUnits(NamedTuple):
    """How a method that supports judge-guided collection names its units to the scheduler."""

    kind: str  # the unit kind people label (e.g. "acute")
    group_of: GroupOf  # a unit's (question, a, b), a and b as pair_key orders them
    first_won: FirstWon  # did the pair's first bot win in this stored judge answer (None: no winner)


def judge_annotator(config: Any) -> str:
    return judge_annotator_id(config.adaptive.judge)


def frozen_pools(protocol: base.Protocol[Any], view: SchedulingView, guided: GuidedUnits) -> Pools:
    """question -> {(a, b): PairPool}: read from the study's snapshot event, made (and stored) on the
    first call from the units of `guided.kind` and the judge's side-order answers."""
    cache = scheduler_state(protocol.store).pools  # per process: frozen pools never change
    if view.study_id in cache:
        return cache[view.study_id]
    stored = work.list_events(view.session, view.study_id, work.GUIDED_POOLS_EVENT)
    if stored:
        pools = [PairPool.from_dict(d) for d in stored[0]["payload"]["pools"]]
    else:
        pools = _build(protocol, view, *guided)
        cfg = protocol.config.adaptive
        work.add_event(
            view.session,
            view.study_id,
            work.GUIDED_POOLS_EVENT,
            {"judge": cfg.judge, "mix": cfg.judge_mix, "pools": [p.to_dict() for p in pools]},
        )
    out: Pools = {}
    for p in pools:
        out.setdefault(p.question, {})[(p.a, p.b)] = p
    if stored:  # one just built is cached only once its transaction has stored it (the next call)
        cache[view.study_id] = out
    return out


def _build(
    protocol: base.Protocol[Any], view: SchedulingView, kind: str, group_of: GroupOf, first_won: FirstWon
) -> list[PairPool]:
    units = view.units(kind)
    by_ext = {u.external_id: u for u in units}
    answers: dict[str, dict[str, bool]] = {}
    for ext, value, meta in work.annotator_unit_judgments(
        view.session, view.study_id, judge_annotator(protocol.config)
    ):
        judge: dict[str, Any] = meta["judge"] if isinstance(meta.get("judge"), dict) else {}
        unit = by_ext.get(ext)
        if unit is None or judge.get("role") != "order" or judge.get("order") not in ("AB", "BA"):
            continue
        won = first_won(unit, value)
        if won is not None:
            answers.setdefault(ext, {})[judge["order"]] = won
    groups: dict[Group, list[str]] = {}
    for u in units:
        groups.setdefault(group_of(u), []).append(u.external_id)
    mix = protocol.config.adaptive.judge_mix
    return [build_pool(q, a, b, ids, answers, mix) for (q, a, b), ids in sorted(groups.items())]


def ticket_status(view: SchedulingView, kind: str) -> dict[Group, dict[int, str]]:
    """Per group, ticket -> "open" (out with someone) or "done" (answered); tickets of expired,
    abandoned or returned assignments are absent (free again)."""
    out: dict[Group, dict[int, str]] = {}
    for status, state in work.assignment_states(view.session, view.study_id, kind):
        t = state.get("guided")
        if not t or status in work.EXCLUDED_ASSIGNMENT_STATUSES:
            continue
        q, a, b = t["group"]
        tickets = out.setdefault((q, a, b), {})
        if tickets.get(int(t["ticket"])) != "done":
            tickets[int(t["ticket"])] = "done" if status == "submitted" else "open"
    return out


def next_ticket(
    pool: PairPool,
    seed: int,
    tickets: Mapping[int, str],
    units: Mapping[str, UnitInfo],
    seen: Iterable[int],
) -> tuple[int, int, UnitInfo] | None:
    """(ticket, unit index, unit) of the lowest free ticket whose unit this annotator has not seen,
    looking at most LOOKAHEAD tickets past the highest one given out; None when there is none."""
    seen = set(seen)
    top = max(tickets, default=-1)
    for ticket in range(top + 1 + LOOKAHEAD):
        if ticket in tickets:
            continue
        index = ticket_unit(pool, seed, ticket)
        unit = units.get(pool.units[index])
        if unit is not None and unit.id not in seen:
            return ticket, index, unit
    return None


class FrozenPools(Protocol):
    """What a ticket draw reads of the scheduler's plan (plan.AdaptivePlan, which imports this module)."""

    @property
    def pools(self) -> Pools | None: ...
    @property
    def seed(self) -> int: ...


def ticket_for(
    plan: FrozenPools, groups: Sequence[Group], units: Sequence[UnitInfo], view: SchedulingView, kind: str
) -> Choice | None:
    """The assignment of the next free ticket this annotator may take, from the first of `groups`
    (in order) that has one; None when none has. `plan`: the scheduler's AdaptivePlan (its pools)."""
    tickets = ticket_status(view, kind)  # read once for every group tried
    by_id = {u.external_id: u for u in units}
    seen = view.seen_units()
    pools = plan.pools or {}  # frozen at the study's first assignment
    for group in groups:
        pool = pools.get(group[0], {}).get(group[1:])
        if pool is None:
            continue
        found = next_ticket(pool, plan.seed, tickets.get(group, {}), by_id, seen)
        if found is not None:
            return ticket_choice(group, *found, view)
    return None


def ticket_choice(group: Group, ticket: int, index: int, unit: UnitInfo, view: SchedulingView) -> Choice:
    """The assignment of a ticket: both sides in random order, the ticket kept in its state (and
    copied into the judgment's meta at submit, so the test can replay it)."""
    order = list(unit.conversation_ids)
    view.rng.shuffle(order)
    return Choice(unit.id, shown_order=order, state={"guided": {"group": list(group), "ticket": ticket, "unit": index}})
