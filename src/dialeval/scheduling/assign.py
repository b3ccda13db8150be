"""Assignment helpers shared by every method: safe under concurrent annotators and worker processes.

The one entry point that touches the database is :func:`assign_locked`: it takes the study's
write lock (``Store.locked``: SQLite BEGIN IMMEDIATE / PostgreSQL advisory lock), re-checks that
the annotator has no open assignment (two tabs, a double click), then asks the method's ``choose``
callback for a unit and stores the assignment with its randomised shown order -- all in one
transaction, so no unit is over-assigned. ``view.load`` is read when choose first uses it, after
expiring abandoned assignments; it is kept per process and brought up to date (store/work.py:
unit_load_cached), as are sums of it per key (``view.totals``, e.g. per bot pair).

    def choose(view: SchedulingView) -> Choice | None:
        ...                      # read view.load / view.history, pick with least_loaded()
        return Choice(unit_id, shown_order=[...], state={...})

    assignment = assign_locked(protocol, annotator, choose)

:func:`assign_in` does the same inside a transaction the method already holds under the study lock,
and :func:`answer_with_next` around an answer: ACUTE-Eval and the prompt sets store an answer, its
closed assignment and the annotator's next assignment in one commit, so the task page that follows
only reads.

The pure helpers (least_loaded, bot_pairs, pair_key, cap_reached) hold the policies: balanced
progress across bot pairs, each pair of conversations / each conversation used as rarely as
possible, per-annotator caps.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.orm import Session  # the store's transaction

from .. import clock
from ..store import work
from ..store.work import AnnotatorInfo, AssignmentInfo, UnitInfo

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..config import StudyConfig
    from ..protocols.base import Protocol

T = TypeVar("T")
R = TypeVar("R")  # what an answer's store_answer returns (answer_with_next)


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
    _units_mark: tuple[int, int | None] | None = field(default=None, init=False, repr=False)
    _seen_units: dict[int, UnitInfo] = field(default_factory=dict, init=False, repr=False)
    # when given, `load` is read by this on first use (a choice made from the history alone, e.g. a
    # cap reached, reads no load)
    read_load: Callable[[], dict[int, dict[str, int]]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.read_load is not None:
            del self.__dict__["load"]  # __getattr__ reads it on first use

    def __getattr__(self, name: str) -> Any:
        read = self.__dict__.get("read_load")
        if name != "load" or read is None:
            raise AttributeError(name)
        self.read_load = None
        self.load = read()
        return self.load

    @property
    def load_read(self) -> bool:
        return "load" in self.__dict__

    def units(self, kind: str | None = None) -> list[UnitInfo]:
        if self.store is None:
            return work.list_units(self.session, self.study_id, kind)
        # one check per assignment that the kept units are complete, however many kinds choose asks for
        if self._units_mark is None:
            self._units_mark = work.units_mark(self.session, self.study_id)
        units = work.units_cached(self.session, self.store, self.study_id, kind, mark=self._units_mark)
        self._seen_units.update((u.id, u) for u in units)
        return units

    def unit(self, unit_id: int) -> UnitInfo | None:
        """A unit choose was given by units() (None: one it made or read otherwise)."""
        return self._seen_units.get(unit_id)

    def used(self, unit_id: int) -> int:
        """Submitted + open assignments of a unit (expired ones returned to the pool)."""
        entry = self.load.get(unit_id)
        return (entry["submitted"] + entry["assigned"]) if entry else 0

    def totals(self, name: str, keys_of: Callable[[int], Iterable[Hashable]], token: object) -> dict[Any, int]:
        """used() summed per key (`keys_of(unit id)`: a unit's keys, fixed while `token` is the same
        object), over every unit with a load; kept per process under `name` when read through the
        store (work.load_totals), so not a pass over every unit at each assignment. Read-only."""
        load = self.load  # (read first: the kept sums follow it)
        if self.store is not None:
            return work.load_totals(self.store, self.study_id, name, keys_of, token)
        sums: dict[Hashable, int] = {}
        for unit_id in load:
            n = self.used(unit_id)
            if n:
                for key in keys_of(unit_id):
                    sums[key] = sums.get(key, 0) + n
        return sums

    def seen_units(self) -> set[int]:
        return {a.unit_id for a in (*self.history, *self.past)}

    def seen_conversations(self) -> set[str]:
        return {c for a in (*self.history, *self.past) for c in a.conversation_ids}

    def create_unit(
        self, external_id: str, kind: str, conversation_ids: list[str], payload: dict[str, Any] | None = None
    ) -> UnitInfo:
        unit = work.create_unit(self.session, self.study_id, external_id, kind, conversation_ids, payload)
        self._units_mark = None  # units() reads the study's units again
        self._seen_units[unit.id] = unit
        return unit


def assign_locked(
    protocol: Protocol[Any], annotator: AnnotatorInfo, choose: Callable[[SchedulingView], Choice | None]
) -> AssignmentInfo | None:
    """Pick and store the annotator's next assignment under the study lock (see module doc)."""
    with protocol.store.locked(protocol.study.study_id) as session:
        return assign_in(session, protocol, annotator, choose)


def assign_in(
    session: Session,
    protocol: Protocol[Any],
    annotator: AnnotatorInfo,
    choose: Callable[[SchedulingView], Choice | None],
    recheck: bool = False,
) -> AssignmentInfo | None:
    """assign_locked's work in the caller's transaction, which must hold the study lock
    (``Store.locked``): a method that stores an answer and the annotator's next assignment in one
    commit (ACUTE-Eval's submit)."""
    store, study_id = protocol.store, protocol.study.study_id

    # the annotator's assignments, the units mark and (PostgreSQL) the kept load's changes: one read
    everything, units_mark, load_read = work.annotator_assignments_and_load(session, store, study_id, annotator.id)

    def read_load() -> dict[int, dict[str, int]]:
        # kept per process, not recounted; from the changes read above when they are still the ones
        load = work.unit_load_cached(session, store, study_id, read_ahead=load_read)
        work.expire_due(session, store, study_id, recheck=recheck)  # expired ones no longer count
        return load

    now = clock.now()
    if any(a.is_open and a.expires_at is not None and a.expires_at < now for a in everything):
        read_load()  # their own open one is overdue: expired first, as for everybody
        everything = work.annotator_assignments(session, study_id, annotator.id, include_expired=True)
    history = [a for a in everything if a.status not in work.EXCLUDED_ASSIGNMENT_STATUSES]
    for a in history:
        if a.is_open:  # another request of the same annotator got here first
            return a
    if over_daily_cap(protocol.config, annotator, history):
        return None
    view = SchedulingView(
        session=session,
        study_id=study_id,
        annotator=annotator,
        history=history,
        load={},
        rng=protocol.study.fresh_rng(),
        past=[a for a in everything if a.status in work.EXCLUDED_ASSIGNMENT_STATUSES],
        store=store,
        read_load=read_load,
    )
    view._units_mark = units_mark  # read with the history: units() needs no statement of its own
    choice = choose(view)
    if choice is None:
        # before saying no from the load: an expiry the kept copy does not know of (set back by
        # hand) frees a unit
        if view.load_read and not recheck and work.expire_due(session, store, study_id, recheck=True):
            return assign_in(session, protocol, annotator, choose, recheck=True)
        return None
    return work.create_assignment(
        session,
        study_id,
        choice.unit_id,
        annotator.id,
        shown_order=choice.shown_order,
        state=choice.state,
        expires_at=protocol.expiry(),
        unit=view.unit(choice.unit_id),
    )


class _ChoiceFailed(Exception):
    """Choosing the next unit failed inside an answer's transaction (answer_with_next)."""


def answer_with_next(
    protocol: Protocol[Any],
    annotator: AnnotatorInfo,
    store_answer: Callable[[Session], tuple[R, bool]],
    choose: Callable[[SchedulingView], Choice | None],
) -> tuple[R, bool]:
    """An answer and the annotator's next assignment in one transaction under the study lock: one
    commit per judgment, and the task page that follows only reads. `store_answer(session)` writes
    the answer and returns (its result, whether it was stored; a repeated request id is not). Returns
    (that result, True when nothing is left for the annotator): the answer's reply can then send
    them to the done page (``Outcome(redirect=study.url("done"))``) instead of a task page that
    would look again under the lock only to redirect.

    Should choosing fail, the answer is never lost: the transaction is rolled back and the answer
    alone stored again in a new one, and the task page chooses as it always did. (A savepoint around
    the choice did the same at two round trips per answer on PostgreSQL, paid by every answer.)"""
    store, study_id = protocol.store, protocol.study.study_id
    try:
        with store.locked(study_id) as session:
            result, stored = store_answer(session)
            if not stored:
                return result, False
            try:
                return result, assign_in(session, protocol, annotator, choose) is None
            except Exception as exc:
                raise _ChoiceFailed from exc
    except _ChoiceFailed:
        _log.exception("choosing the next unit with the answer failed; the answer is stored alone")
    with store.locked(study_id) as session:
        return store_answer(session)[0], False


def over_daily_cap(config: StudyConfig, annotator: AnnotatorInfo, history: Sequence[AssignmentInfo]) -> bool:
    """An open study's cap (``annotators.daily_cap``): a volunteer-link annotator who has submitted
    that many units today (UTC) gets no more until tomorrow -- one person cannot cast a large
    share of an open study's votes. Recruited annotators (Prolific, MTurk) are paid per session and
    capped by ``units_per_annotator`` instead."""
    cap = config.annotators.daily_cap
    # a simulated annotator is capped as the door it came in by (store/work.py: entered_as)
    door = annotator.meta.get("entered_as", annotator.platform) if annotator.platform == "simulated" else None
    if cap is None or (door or annotator.platform) != "volunteer":
        return False
    today = clock.now().date()

    def day(a: AssignmentInfo) -> date | None:
        at = a.submitted_at
        if at is None:
            return None
        return (at if at.tzinfo else at.replace(tzinfo=UTC)).astimezone(UTC).date()

    return sum(1 for a in history if a.status == "submitted" and day(a) == today) >= cap


def least_loaded(candidates: Iterable[T], load: Mapping[T, float] | Callable[[T], Any], rng: random.Random) -> T | None:
    """The candidate with the smallest load (a mapping or a key function; tuples compare in order),
    ties broken at random. None when there is no candidate."""
    pool = list(candidates)
    if not pool:
        return None
    key = load if callable(load) else (lambda c: load.get(c, 0))
    keyed = [(key(c), c) for c in pool]
    best = min(k for k, _ in keyed)
    return rng.choice([c for k, c in keyed if k == best])


def pair_key(a: str, b: str) -> tuple[str, str]:
    """An unordered bot pair as a sorted tuple."""
    return (a, b) if a <= b else (b, a)


Group = tuple[str, str, str]  # (question, bot a, bot b) with a, b as pair_key orders them


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


def group_load(
    units: Iterable[UnitInfo], view: SchedulingView, group: Callable[[UnitInfo], Hashable]
) -> dict[Hashable, int]:
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
