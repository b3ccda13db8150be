"""Scheduling helpers shared by every method: safe under concurrent annotators and worker processes.

The one entry point that touches the database is :func:`assign_locked`: it takes the study's
write lock (``Store.locked``: SQLite BEGIN IMMEDIATE / PostgreSQL advisory lock), expires abandoned
assignments, re-checks that the annotator has no open assignment (two tabs, a double click), then
asks the method's ``choose`` callback for a unit and stores the assignment with its randomised
shown order -- all in one transaction, so no unit is over-assigned.

    def choose(view: SchedulingView) -> Choice | None:
        ...                      # read view.load / view.history, pick with least_loaded()
        return Choice(unit_id, shown_order=[...], state={...})

    assignment = assign_locked(protocol, annotator, choose)

The pure helpers (least_loaded, bot_pairs, pair_key, cap_reached) hold the policies: balanced
progress across bot pairs, each pair of conversations / each conversation used as rarely as
possible, per-annotator caps.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..store import work
from ..store.work import AnnotatorInfo, AssignmentInfo, Session, UnitInfo  # Session: the store's transaction


@dataclass
class Choice:
    unit_id: int
    shown_order: list[Any] | None = None
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class SchedulingView:
    """What a `choose` callback sees, read inside the locked transaction."""

    session: Session
    study_id: int
    annotator: AnnotatorInfo
    history: list[AssignmentInfo]  # the annotator's assignments (submitted and open; not expired)
    load: dict[int, dict[str, int]]  # unit id -> {"submitted": n, "assigned": m}
    rng: random.Random
    # the annotator's expired, abandoned and returned assignments: not in caps, but already seen
    past: list[AssignmentInfo] = field(default_factory=list)
    store: Any = None  # when given, units are read through the per-process cache

    def units(self, kind: str | None = None) -> list[UnitInfo]:
        if self.store is None:
            return work.list_units(self.session, self.study_id, kind)
        return work.units_cached(self.session, self.store, self.study_id, kind)

    def used(self, unit_id: int) -> int:
        """Submitted + open assignments of a unit (expired ones returned to the pool)."""
        entry = self.load.get(unit_id)
        return (entry["submitted"] + entry["assigned"]) if entry else 0

    def seen_units(self) -> set[int]:
        return {a.unit_id for a in (*self.history, *self.past)}

    def seen_conversations(self) -> set[str]:
        return {c for a in (*self.history, *self.past) for c in a.conversation_ids}

    def create_unit(
        self, external_id: str, kind: str, conversation_ids: list[str], payload: dict | None = None
    ) -> UnitInfo:
        return work.create_unit(self.session, self.study_id, external_id, kind, conversation_ids, payload)


def assign_locked(
    protocol, annotator: AnnotatorInfo, choose: Callable[[SchedulingView], Choice | None]
) -> AssignmentInfo | None:
    """Pick and store the annotator's next assignment under the study lock (see module doc)."""
    store, study_id = protocol.store, protocol.study.study_id
    with store.locked(study_id) as session:
        work.expire_assignments(session, study_id)
        everything = work.annotator_assignments(session, study_id, annotator.id, include_expired=True)
        history = [a for a in everything if a.status not in work.EXCLUDED_ASSIGNMENT_STATUSES]
        for a in history:
            if a.is_open:  # another request of the same annotator got here first
                return a
        view = SchedulingView(
            session=session,
            study_id=study_id,
            annotator=annotator,
            history=history,
            load=work.unit_load(session, study_id),
            rng=protocol.study.fresh_rng(),
            past=[a for a in everything if a.status in work.EXCLUDED_ASSIGNMENT_STATUSES],
            store=store,
        )
        choice = choose(view)
        if choice is None:
            return None
        return work.create_assignment(
            session,
            study_id,
            choice.unit_id,
            annotator.id,
            shown_order=choice.shown_order,
            state=choice.state,
            expires_at=protocol.expiry(),
        )


def least_loaded(
    candidates: Iterable[Hashable], load: Mapping[Hashable, float] | Callable[[Any], Any], rng: random.Random
) -> Any | None:
    """The candidate with the smallest load (a mapping or a key function; tuples compare in order),
    ties broken at random. None when there is no candidate."""
    candidates = list(candidates)
    if not candidates:
        return None
    key = load if callable(load) else (lambda c: load.get(c, 0))
    keyed = [(key(c), c) for c in candidates]
    best = min(k for k, _ in keyed)
    return rng.choice([c for k, c in keyed if k == best])


def pair_key(a: str, b: str) -> tuple[str, str]:
    """An unordered bot pair as a sorted tuple."""
    return (a, b) if a <= b else (b, a)


def bot_pairs(bots: Sequence[str], configured: Sequence[Sequence[str]] | None = None) -> list[tuple[str, str]]:
    """The compared bot pairs: the configured ones, else every pair of distinct bots."""
    if configured:
        return [pair_key(a, b) for a, b in configured]
    return [pair_key(a, b) for a, b in itertools.combinations(sorted(set(bots)), 2)]


def cap_reached(history: Sequence[AssignmentInfo], cap: int | None, kind: str | None = None) -> bool:
    """True when the annotator already has `cap` assignments (of that unit kind)."""
    if cap is None:
        return False
    n = sum(1 for a in history if kind is None or a.unit_kind == kind)
    return n >= cap


def group_load(units: Iterable[UnitInfo], view: SchedulingView, group: Callable[[UnitInfo], Hashable]) -> dict:
    """Used assignments summed per group (e.g. per bot pair), for balanced progress."""
    totals: dict[Hashable, int] = {}
    for u in units:
        g = group(u)
        totals[g] = totals.get(g, 0) + view.used(u.id)
    return totals


def conversation_load(units: Iterable[UnitInfo], view: SchedulingView) -> dict[str, int]:
    """How often each conversation has been given out (through any unit)."""
    totals: dict[str, int] = {}
    for u in units:
        n = view.used(u.id)
        if n:
            for c in u.conversation_ids:
                totals[c] = totals.get(c, 0) + n
    return totals


# -- adaptive collection (config `adaptive:`; dialeval/adaptive.py) ---------------------------------
ADAPTIVE_STOPPED = "adaptive-stopped"
Group = tuple[str, str, str]  # (question, bot a, bot b) with a, b as pair_key orders them


@dataclass
class AdaptivePlan:
    """The adaptive state of a study read inside the scheduling transaction.

    `states`: one AdaptiveState per question, replayed from every non-onboarding judgment of a
    non-filtered annotator in judgment order (the same outcomes and rule as the report's `stopping`
    table). `stopped`: no more units for anybody ("decided": every question's ranking is known;
    "max_judgments": the budget is spent, counting the units that are out)."""

    states: dict[str, Any]
    judgments: int
    stopped: str | None
    counter: int
    seed: int
    # judge-guided collection (protocols/guided.py): question -> {(a, b): PairPool}; None when off
    pools: dict[str, dict[tuple[str, str], Any]] | None = None

    def open_groups(self) -> set[Group]:
        """(question, a, b) of the pairs whose order is still open."""
        return {(q, *pair_key(a, b)) for q, st in self.states.items() if not st.done for a, b in st.undecided_pairs()}

    def pick(
        self,
        groups: Iterable[Group],
        load: Callable[[Group], Any],
        view: SchedulingView,
        question_load: Callable[[str], Any] | None = None,
    ) -> Group | None:
        """The group of the next unit among `groups` (those with a unit this annotator may get):
        the question with the least `question_load` among those still open, then `next_pair` of
        its state (rng seeded from the study seed and the assignment counter, so a replay draws the
        same); when the annotator cannot get a unit of the drawn pair, the open pair of least `load`."""
        import numpy as np

        allowed = self.open_groups() & set(groups)
        if not allowed:
            return None
        questions = sorted({g[0] for g in allowed})
        q = least_loaded(questions, question_load or (lambda _q: 0), view.rng)
        rng = np.random.default_rng([self.seed % (2**32), self.counter])
        drawn = self.states[q].next_pair(rng)
        if drawn is not None and (q, *pair_key(*drawn)) in allowed:
            return (q, *pair_key(*drawn))
        return least_loaded(sorted(g for g in allowed if g[0] == q), load, view.rng)


def adaptive_plan(
    protocol,
    view: SchedulingView,
    method: str,
    questions: Sequence[str],
    outcome: Callable[[work.ScoredJudgment], tuple[str, str, str | None] | None],
    judgments_per_unit: int = 1,
    guided: tuple[str, Callable, Callable] | None = None,
) -> AdaptivePlan | None:
    """None when the study does not use adaptive collection; else the plan (see AdaptivePlan).
    Logs the event ``adaptive-stopped`` (with the stopping tables) the first time it stops.
    `guided`: (unit kind, group of a unit, did the pair's first bot win in a judge answer) for a
    method whose units a judge can label first; used when the study sets ``adaptive.judge``."""
    config = protocol.config
    cfg = config.adaptive
    if not cfg.enabled:
        return None
    pools = None
    if cfg.judge is not None and guided is not None:
        from .guided import frozen_pools

        pools = frozen_pools(protocol, view, *guided)
    states, n = _adaptive_states(protocol, view, method, tuple(questions), outcome, pools)
    stopped = None
    if states and all(st.done for st in states.values()):
        stopped = "decided"
    elif cfg.max_judgments is not None:
        pending = sum(entry["assigned"] for entry in view.load.values()) * judgments_per_unit
        if n + pending >= cfg.max_judgments:
            stopped = "max_judgments"
    plan = AdaptivePlan(
        states=states,
        judgments=n,
        stopped=stopped,
        counter=work.count_assignments(view.session, view.study_id),
        seed=config.seed,
        pools=pools,
    )
    if stopped and not work.list_events(view.session, view.study_id, ADAPTIVE_STOPPED):
        work.add_event(
            view.session,
            view.study_id,
            ADAPTIVE_STOPPED,
            {
                "reason": stopped,
                "judgments": n,
                "alpha": cfg.alpha,
                "prior": cfg.prior,
                "selection": cfg.selection,
                "questions": {q: {"ranking": st.ranking(), "pairs": st.stopping_table()} for q, st in states.items()},
            },
        )
    return plan


# Judgment ids are handed out at insert, but on PostgreSQL concurrent inserts may commit out of
# order: a judgment below the highest id fed can still appear. The ids of the last REREAD_WINDOW
# judgments are therefore read again each time and the new ones among them fed.
REREAD_WINDOW = 2000


@dataclass
class _AdaptiveCache:
    states: dict[str, Any]
    judgments: int
    statuses: tuple  # annotators per status when built: a flag or a block means a full replay
    fed: set[int] = field(default_factory=set)  # ids fed above `floor`
    floor: int = 0  # every judgment with an id <= floor has been fed (or never will be)


def _adaptive_states(
    protocol,
    view: SchedulingView,
    method: str,
    questions: tuple[str, ...],
    outcome: Callable[[work.ScoredJudgment], tuple[str, str, str | None] | None],
    pools: dict[str, dict[tuple[str, str], Any]] | None = None,
) -> tuple[dict[str, Any], int]:
    """The AdaptiveState per question after every counted judgment, kept per process between
    assignments and fed only the judgments stored since (AdaptiveState.update), instead of
    replaying the whole study each time. Rebuilt from scratch when an annotator's status changed
    (their judgments may no longer count). Same outcomes, same order as a full replay."""
    from ..adaptive import is_filtered, study_state

    statuses = work.annotator_status_mark(view.session, view.study_id)
    caches = protocol.store.__dict__.setdefault("_adaptive_cache", {})
    key = (view.study_id, method, questions, pools is not None)
    cache = caches.get(key)
    if cache is None or cache.statuses != statuses:
        states = {q: study_state([], method, protocol.config, guided=(pools or {}).get(q)) for q in questions}
        cache = _AdaptiveCache(states, 0, statuses)
    for j in work.scheduling_judgments(view.session, view.study_id, after_id=cache.floor):
        if j.id in cache.fed:
            continue
        cache.fed.add(j.id)
        if is_filtered(j.annotator_status, j.annotator_meta) or j.meta.get("judge"):
            continue  # filtered annotators and LLM judges are not people's outcomes
        o = outcome(j)
        if o is None or j.question not in cache.states:
            continue
        # the test counts per annotator; a judge-guided judgment carries its ticket
        cache.states[j.question].update(*o[:3], j.annotator, j.meta.get("guided"))
        cache.judgments += 1
    if cache.fed:
        top = max(cache.fed)
        if top - cache.floor > 2 * REREAD_WINDOW:
            cache.floor = top - REREAD_WINDOW
            cache.fed = {i for i in cache.fed if i > cache.floor}
    caches[key] = cache
    return cache.states, cache.judgments


def adaptive_note(protocol) -> str | None:
    """One line for the admin page about adaptive collection (None when it is disabled)."""
    cfg = protocol.config.adaptive
    if not cfg.enabled:
        return None
    events = work.list_events(protocol.store, protocol.study.study_id, ADAPTIVE_STOPPED)
    head = (
        f"Adaptive collection on (selection {cfg.selection}, anytime-valid stopping at alpha {cfg.alpha:g}, "
        f"Bonferroni over the bot pairs)"
    )
    if cfg.judge is not None:
        head += _guided_note(protocol)
    if not events:
        return head + ": still collecting."
    p = events[0]["payload"]
    rankings = "; ".join(
        f"{q}: {' > '.join(v['ranking']) if v.get('ranking') else 'partial order'}"
        for q, v in (p.get("questions") or {}).items()
    )
    return f"{head}: stopped ({p.get('reason')}) after {p.get('judgments')} judgments. {rankings}".strip()


def _guided_note(protocol) -> str:
    """How far the judge had labelled the units when judge-guided collection froze its pools."""
    cfg = protocol.config.adaptive
    frozen = work.list_events(protocol.store, protocol.study.study_id, work.GUIDED_POOLS_EVENT)
    if not frozen:
        return (
            f", judge-guided by {cfg.judge} (its labels are read at the first assignment: run "
            f"`dialeval judge STUDY --bot {cfg.judge}` before anyone starts)"
        )
    pools = frozen[0]["payload"].get("pools", [])
    units = sum(len(p["units"]) for p in pools)
    judged = sum(int(p["judged"]) for p in pools)
    note = f", judge-guided by {cfg.judge} ({judged} of {units} units labelled when collection began"
    return note + (": no labels, so units are drawn uniformly)" if judged == 0 else ")")
