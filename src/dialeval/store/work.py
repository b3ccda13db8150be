"""Queries of the annotation work: units, assignments, scheduling reads, admin tables.

The web app and the protocols call these; none of them write SQL themselves (house rule).
Functions taking a `session` run inside the caller's transaction (usually `Store.locked`),
the others open their own.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, cast, overload
from weakref import WeakKeyDictionary

from sqlalchemy import (
    ARRAY,
    Connection,
    Integer,
    Select,
    String,
    Table,
    and_,
    any_,
    bindparam,
    case,
    func,
    insert,
    literal,
    literal_column,
    null,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy import cast as sa_cast
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import ColumnElement

from .. import clock
from ..errors import StoreError
from ..records import SIMULATED_PLATFORM, Unit
from .schema import (
    AnnotatorRow,
    AssignmentRow,
    ConversationRow,
    EventRow,
    JudgmentRow,
    TurnRow,
    UnitRow,
)

# Assignment statuses: assigned (open) | submitted | expired (unit back in the pool; the annotator
# gets it back on return if nobody took it) | abandoned (expired, and its unit was given to somebody
# else) | returned (the platform submission was returned or timed out). Judgments made on an
# assignment of the last three kinds are kept but excluded from analysis, with this reason.
EXCLUDED_ASSIGNMENT_STATUSES: dict[str, str] = {
    "expired": "assignment expired unfinished",
    "abandoned": "assignment expired and was given to another annotator",
    "returned": "submission returned or timed out on the platform",
}
RESUMED_NOTICE = "Welcome back: your task is as you left it."
REASSIGNED_NOTICE = (
    "Your earlier task expired and was given to somebody else, so here is a new one. What you did on it is kept."
)


@overload
def _aware(ts: datetime) -> datetime: ...
@overload
def _aware(ts: None) -> None: ...
@overload
def _aware(ts: datetime | None) -> datetime | None: ...
def _aware(ts: datetime | None) -> datetime | None:
    # SQLite gives naive datetimes back; they were stored as UTC.
    if ts is not None and ts.tzinfo is None:
        return ts.replace(tzinfo=UTC)
    return ts


class Transactions(Protocol):
    """What these queries need of a store: its transactions (store.Store; named structurally, as
    store.py imports this module)."""

    @property
    def is_postgres(self) -> bool: ...
    def read(self) -> AbstractContextManager[Session]: ...
    def read_connection(self) -> AbstractContextManager[Connection]: ...
    def session(self) -> AbstractContextManager[Session]: ...
    def single_write(self) -> AbstractContextManager[Connection]: ...
    def locked(self, study_id: int) -> AbstractContextManager[Session]: ...
    def note_read(self, key: Hashable, value: Any) -> None: ...
    def noted_read(self, key: Hashable) -> Any: ...


@dataclass
class AnnotatorInfo:
    """One annotator of the study (a row of `annotators`, detached)."""

    id: int  # database id: what judgments and assignments refer to
    external_id: str  # PROLIFIC_PID / workerId / generated id
    platform: str  # link | prolific | mturk | volunteer | simulated
    status: str = "active"  # active | flagged | blocked
    qc: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    study_id: int | None = None


@dataclass
class AssignmentInfo:
    """One unit given to one annotator, with the unit's content (detached from the database)."""

    id: int
    study_id: int
    annotator_id: int
    unit_id: int
    unit_external_id: str
    unit_kind: str
    conversation_ids: list[str]  # external conversation ids of the unit
    payload: dict[str, Any]  # the unit's payload
    status: str  # assigned | submitted | expired | abandoned | returned
    shown_order: list[Any] | None  # what was shown left-to-right / in order (randomised per assignment)
    state: dict[str, Any]  # per-method progress; survives a page refresh
    started_at: datetime | None = None
    expires_at: datetime | None = None
    submitted_at: datetime | None = None
    notice: str | None = None  # a message for the annotator (e.g. resumed after expiry), not stored

    @property
    def is_open(self) -> bool:
        return self.status == "assigned"


@dataclass
class UnitInfo:
    id: int
    external_id: str
    kind: str
    conversation_ids: list[str]
    payload: dict[str, Any]


def _annotator(row: AnnotatorRow) -> AnnotatorInfo:
    return AnnotatorInfo(
        id=row.id,
        external_id=row.external_id,
        platform=row.platform,
        status=row.status,
        qc=dict(row.qc or {}),
        meta=dict(row.meta or {}),
        study_id=row.study_id,
    )


def _assignment(row: AssignmentRow, unit: UnitRow | UnitInfo) -> AssignmentInfo:
    return AssignmentInfo(
        id=row.id,
        study_id=row.study_id,
        annotator_id=row.annotator_id,
        unit_id=unit.id,
        unit_external_id=unit.external_id,
        unit_kind=unit.kind,
        conversation_ids=list(unit.conversation_ids or []),
        payload=dict(unit.payload or {}),
        status=row.status,
        shown_order=row.shown_order,
        state=dict(row.state or {}),
        started_at=_aware(row.started_at),
        expires_at=_aware(row.expires_at),
        submitted_at=_aware(row.submitted_at),
    )


# -- annotators ----------------------------------------------------------------------------------
# Every request of a signed-in annotator reads their row, a task page or post their assignments: plain
# Core selects of the columns the Info needs (no ORM instance to build and track), ~3x cheaper.
_ANNOTATOR = AnnotatorRow.__table__.c
_ANNOTATOR_COLUMNS = select(
    _ANNOTATOR.id,
    _ANNOTATOR.external_id,
    _ANNOTATOR.platform,
    _ANNOTATOR.status,
    _ANNOTATOR.qc,
    _ANNOTATOR.meta,
    _ANNOTATOR.study_id,
)
_ASSIGNMENT, _UNIT = AssignmentRow.__table__.c, UnitRow.__table__.c
_ASSIGNMENT_WITH_UNIT = select(
    _ASSIGNMENT.id,
    _ASSIGNMENT.study_id,
    _ASSIGNMENT.annotator_id,
    _UNIT.id,
    _UNIT.external_id,
    _UNIT.kind,
    _UNIT.conversation_ids,
    _UNIT.payload,
    _ASSIGNMENT.status,
    _ASSIGNMENT.shown_order,
    _ASSIGNMENT.state,
    _ASSIGNMENT.started_at,
    _ASSIGNMENT.expires_at,
    _ASSIGNMENT.submitted_at,
).join_from(AssignmentRow.__table__, UnitRow.__table__, _UNIT.id == _ASSIGNMENT.unit_id)


_ANNOTATOR_BY_ID = _ANNOTATOR_COLUMNS.where(_ANNOTATOR.id == bindparam("aid"))
_ASSIGNMENT_BY_ID = _ASSIGNMENT_WITH_UNIT.where(_ASSIGNMENT.id == bindparam("asid"))


def annotator_from_columns(row: Any) -> AnnotatorInfo:
    """An AnnotatorInfo from a row of _ANNOTATOR_COLUMNS' columns, in their order."""
    aid, external_id, platform, status, qc, meta, study_id = row
    return AnnotatorInfo(aid, external_id, platform, status, dict(qc or {}), dict(meta or {}), study_id)


def get_annotator(store: Transactions, annotator_id: int) -> AnnotatorInfo | None:
    with store.read_connection() as conn:
        row = conn.execute(_ANNOTATOR_BY_ID, {"aid": annotator_id}).first()
    return annotator_from_columns(row) if row is not None else None


# the annotator and (outer-joined: None when there is no such) the assignment, in one statement
_ANNOTATOR_AND_ASSIGNMENT = (
    select(*_ANNOTATOR_COLUMNS.selected_columns, *_ASSIGNMENT_WITH_UNIT.selected_columns)
    .select_from(
        cast(Table, AnnotatorRow.__table__).outerjoin(
            cast(Table, AssignmentRow.__table__).join(UnitRow.__table__, _UNIT.id == _ASSIGNMENT.unit_id),
            _ASSIGNMENT.id == bindparam("asid"),
        )
    )
    .where(_ANNOTATOR.id == bindparam("aid"))
)
_ANNOTATOR_WIDTH = len(_ANNOTATOR_COLUMNS.selected_columns)


def get_annotator_and_assignment(
    store: Transactions, annotator_id: int, assignment_id: int
) -> tuple[AnnotatorInfo | None, AssignmentInfo | None]:
    """get_annotator and get_assignment in one statement (every post to an assignment needs both;
    they were two round trips of each answer)."""
    with store.read_connection() as conn:
        row = conn.execute(_ANNOTATOR_AND_ASSIGNMENT, {"aid": annotator_id, "asid": assignment_id}).first()
    if row is None:
        return None, None
    return annotator_from_columns(row[:_ANNOTATOR_WIDTH]), _joined_assignment(row)


def _joined_assignment(row: Any) -> AssignmentInfo | None:
    """The assignment columns after the annotator's in an outer-joined row (None: no assignment)."""
    assignment = row[_ANNOTATOR_WIDTH:]
    return _assignment_from_columns(assignment) if assignment[0] is not None else None


def annotator_from_row(row: AnnotatorRow) -> AnnotatorInfo:
    return _annotator(row)


_ANNOTATOR_META = select(_ANNOTATOR.meta).where(_ANNOTATOR.id == bindparam("aid"))
_SET_ANNOTATOR_META = (
    update(cast(Table, AnnotatorRow.__table__))
    .where(_ANNOTATOR.id == bindparam("aid"))
    .values(meta=bindparam("new_meta"))
)


# PostgreSQL merges the keys itself (jsonb's ||, top-level keys as {**meta, **new}): one statement,
# atomic on its own -- no read of the meta first, no transaction around the two, and two tabs
# writing different keys at once both keep theirs.
_MERGE_ANNOTATOR_META_PG = (
    text(
        "UPDATE annotators SET meta = (COALESCE(meta::jsonb, '{}'::jsonb) || CAST(:patch AS jsonb))::json "
        "WHERE id = :aid RETURNING meta"
    )
    .bindparams(bindparam("patch", type_=_ANNOTATOR.meta.type))
    .columns(meta=_ANNOTATOR.meta.type)
)


def update_annotator_meta(store: Transactions, annotator_id: int, **meta: Any) -> dict[str, Any] | None:
    """Merge `meta` into the annotator's meta (plain Core statements: consent, instructions and the
    done page of every annotator write here); returns the merged meta (None: no such annotator). On
    PostgreSQL one statement in autocommit, on SQLite a read and a write in one write transaction
    (which holds the file's write lock)."""
    if store.is_postgres:
        with store.single_write() as conn:
            merged = conn.execute(_MERGE_ANNOTATOR_META_PG, {"aid": annotator_id, "patch": meta}).scalar()
        return None if merged is None else dict(merged)
    with store.session() as s:
        conn = s.connection()
        row = conn.execute(_ANNOTATOR_META, {"aid": annotator_id}).first()
        if row is None:
            return None
        new_meta = {**(row[0] or {}), **meta}
        conn.execute(_SET_ANNOTATOR_META, {"aid": annotator_id, "new_meta": new_meta})
        return new_meta


def mark_simulated(store: Transactions, *annotator_ids: int) -> None:
    """Give `dialeval simulate` annotators the platform `simulated` (records.SIMULATED_PLATFORM),
    keeping the door each came in by under meta["entered_as"]; one transaction."""
    with store.session() as s:
        for annotator_id in annotator_ids:
            row = s.get(AnnotatorRow, annotator_id)
            if row is not None and row.platform != SIMULATED_PLATFORM:
                row.meta = {**(row.meta or {}), "entered_as": row.platform}
                row.platform = SIMULATED_PLATFORM


def list_annotators(store: Transactions, study_id: int) -> list[dict[str, Any]]:
    """The admin table: one dict per annotator with counts, time spent and QC status."""
    with store.read() as s:
        rows = list(s.scalars(select(AnnotatorRow).where(AnnotatorRow.study_id == study_id).order_by(AnnotatorRow.id)))
        stats = {
            a: (n, el, first, last)
            for a, n, el, first, last in s.execute(
                select(
                    JudgmentRow.annotator_id,
                    func.count(),
                    func.sum(JudgmentRow.elapsed_s),
                    func.min(JudgmentRow.created_at),
                    func.max(JudgmentRow.created_at),
                )
                .where(JudgmentRow.study_id == study_id)
                .group_by(JudgmentRow.annotator_id)
            )
        }
        assigned: Counter[tuple[int, str]] = Counter()
        for a, status in s.execute(
            select(AssignmentRow.annotator_id, AssignmentRow.status).where(AssignmentRow.study_id == study_id)
        ):
            assigned[(a, status)] += 1
        out = []
        for r in rows:
            n, elapsed, first, last = stats.get(r.id, (0, None, None, None))
            first, last = _aware(first), _aware(last)
            span = (last - _aware(r.created_at)).total_seconds() if last else 0.0
            out.append(
                {
                    "id": r.id,
                    "external_id": r.external_id,
                    "platform": r.platform,
                    # the door a simulated annotator came in by (link, prolific, volunteer, ...)
                    "entered_as": (r.meta or {}).get("entered_as", r.platform),
                    "status": r.status,
                    "reasons": list((r.qc or {}).get("reasons", [])),
                    "qc": dict(r.qc or {}),
                    "judgments": int(n),
                    "seconds_judging": float(elapsed or 0.0),
                    "seconds_total": max(span, 0.0),
                    "submitted": assigned[(r.id, "submitted")],
                    "open": assigned[(r.id, "assigned")],
                    "expired": assigned[(r.id, "expired")]
                    + assigned[(r.id, "abandoned")]
                    + assigned[(r.id, "returned")],
                    "meta": dict(r.meta or {}),
                    "created_at": _aware(r.created_at),
                }
            )
        return out


_JUDGMENT = JudgmentRow.__table__.c
# read after every answer of a method that checks reasons (Protocol.check_justifications): a Core select
_JUSTIFICATIONS = (
    select(_JUDGMENT.justification)
    .where(
        _JUDGMENT.study_id == bindparam("study_id"),
        _JUDGMENT.annotator_id == bindparam("annotator_id"),
        _JUDGMENT.question != "onboarding",
    )
    .order_by(_JUDGMENT.id)
)


def annotator_justifications(store: Transactions, study_id: int, annotator_id: int) -> list[str | None]:
    """The annotator's justifications in order (onboarding left out)."""
    params = {"study_id": study_id, "annotator_id": annotator_id}
    # a short read (no ORM session; on PostgreSQL no BEGIN and COMMIT round trips): ACUTE reads it
    # after every answer (Protocol.never_justifies) until the annotator's reasons are settled
    with store.read_connection() as conn:
        return list(conn.execute(_JUSTIFICATIONS, params).scalars())


def annotator_live_messages(store: Transactions, study_id: int, annotator_id: int) -> list[list[str]]:
    """The annotator's own messages, one list per live conversation (meta.annotator_id == theirs).

    Seed turns and turns with meta {"fixed": true} (the fixed "Hi!") are left out.
    """
    with store.read() as s:
        convs = [
            c
            for c in s.scalars(
                select(ConversationRow)
                .where(ConversationRow.study_id == study_id, ConversationRow.source == "live")
                .order_by(ConversationRow.id)
            )
            if (c.meta or {}).get("annotator_id") == annotator_id
        ]
        out = []
        for c in convs:
            turns = s.scalars(select(TurnRow).where(TurnRow.conversation_id == c.id).order_by(TurnRow.idx))
            msgs = [t.text for t in turns if t.speaker == "human" and not t.is_seed and not (t.meta or {}).get("fixed")]
            if msgs:
                out.append(msgs)
        return out


# -- what is kept per process ----------------------------------------------------------------------
@dataclass
class StoreCaches:
    """What this module keeps in memory for one Store, rows that never change once stored: a
    conversation's row id (a replace updates the row), and the study's units (only ever added;
    `units_cached` checks the count and highest id before using them). The scheduler keeps its own
    (scheduling/process_state.py)."""

    conversation_ids: dict[tuple[int, str], int] = field(default_factory=dict)
    units: dict[tuple[int, str | None], tuple[tuple[Any, ...], list[UnitInfo]]] = field(default_factory=dict)


_CACHES: WeakKeyDictionary[Any, StoreCaches] = WeakKeyDictionary()


def store_caches(store: Any) -> StoreCaches:
    """The caches of `store` (made on first use; they go with the Store object)."""
    caches = _CACHES.get(store)
    if caches is None:
        caches = _CACHES[store] = StoreCaches()
    return caches


# -- conversations -------------------------------------------------------------------------------
def conversation_row_id(store: Transactions, study_id: int, external_id: str) -> int | None:
    # a conversation keeps its row id for good (a replace updates the row), so found ids are kept
    known = store_caches(store).conversation_ids
    found = known.get((study_id, external_id))
    if found is not None:
        return found
    with store.read() as s:
        found = s.scalar(
            select(ConversationRow.id).where(
                ConversationRow.study_id == study_id, ConversationRow.external_id == external_id
            )
        )
    if found is not None:
        known[(study_id, external_id)] = found
    return found


def list_conversations(store: Transactions, study_id: int, source: str | None = None) -> list[dict[str, Any]]:
    """Id, source, bots, turn count and error of every conversation (the admin browser, unit building)."""
    with store.read() as s:
        counts: dict[int, int] = dict(
            s.execute(
                select(TurnRow.conversation_id, func.count())
                .join(ConversationRow, TurnRow.conversation_id == ConversationRow.id)
                .where(ConversationRow.study_id == study_id)
                .group_by(TurnRow.conversation_id)
            )
            .tuples()
            .all()
        )
        q = select(ConversationRow).where(ConversationRow.study_id == study_id)
        if source is not None:
            q = q.where(ConversationRow.source == source)
        return [
            {
                "id": c.external_id,
                "source": c.source,
                "bots": list(c.bots or []),
                "turns": int(counts.get(c.id, 0)),
                "error": c.error,
                "meta": dict(c.meta or {}),
            }
            for c in s.scalars(q.order_by(ConversationRow.id))
        ]


# -- units ---------------------------------------------------------------------------------------
def add_units(store: Transactions, study_id: int, method: str, units: list[Unit]) -> int:
    """Store units whose external id is new; returns how many were added."""
    if not units:
        return 0
    with store.session() as s:
        have = set(s.scalars(select(UnitRow.external_id).where(UnitRow.study_id == study_id)))
        new = list({u.id: u for u in units if u.id not in have}.values())
        now = clock.now()
        rows = [
            {
                "study_id": study_id,
                "external_id": u.id,
                "kind": u.kind,
                "conversation_ids": list(u.conversation_ids),
                "payload": dict(u.payload),
                "created_at": now,
            }
            for u in new
        ]
        # a bulk insert, not one ORM object per unit: a study of 300 bots has ~180,000 ACUTE units
        for start in range(0, len(rows), 10_000):
            s.execute(insert(UnitRow), rows[start : start + 10_000])
        return len(new)


def list_units(session_or_store: Session | Transactions, study_id: int, kind: str | None = None) -> list[UnitInfo]:
    def run(s: Session) -> list[UnitInfo]:
        q = select(UnitRow).where(UnitRow.study_id == study_id)
        if kind is not None:
            q = q.where(UnitRow.kind == kind)
        return [
            UnitInfo(u.id, u.external_id, u.kind, list(u.conversation_ids or []), dict(u.payload or {}))
            for u in s.scalars(q.order_by(UnitRow.id))
        ]

    if isinstance(session_or_store, Session):
        return run(session_or_store)
    with session_or_store.read() as s:
        return run(s)


_UNITS_MARK = select(func.count(), func.max(_UNIT.id)).where(_UNIT.study_id == bindparam("study"))


def units_mark(session: Session, study_id: int) -> tuple[int, int | None]:
    """(count, highest id) of the study's units: whether a kept copy of them is still complete."""
    count, top = session.connection().execute(_UNITS_MARK, {"study": study_id}).one()
    return int(count), top


def units_cached(
    session: Session,
    store: Transactions,
    study_id: int,
    kind: str | None = None,
    mark: tuple[int, int | None] | None = None,
) -> list[UnitInfo]:
    """The study's units, read once per process and again only when units were added.

    Units are never changed after they are stored (only added: live methods make them on demand),
    so (count, highest id) tells whether the copy kept for the store is still complete; `mark`:
    that pair as the caller read it in this transaction (units_mark), not read again.
    """
    mark = mark if mark is not None else units_mark(session, study_id)
    cache = store_caches(store).units
    hit = cache.get((study_id, kind))
    if hit is not None and hit[0] == mark:
        return hit[1]
    units = list_units(session, study_id, kind)
    cache[(study_id, kind)] = (mark, units)
    return units


def count_units(store: Transactions, study_id: int, kind: str | None = None) -> int:
    with store.read() as s:
        q = select(func.count()).select_from(UnitRow).where(UnitRow.study_id == study_id)
        if kind is not None:
            q = q.where(UnitRow.kind == kind)
        return int(s.scalar(q))


# -- assignments ---------------------------------------------------------------------------------
def expire_assignments(session: Session, study_id: int, now: datetime | None = None) -> int:
    """Mark open assignments past their expiry as expired (their units go back to the pool)."""
    now = now or clock.now()
    ids = list(
        session.scalars(
            select(AssignmentRow.id).where(
                AssignmentRow.study_id == study_id,
                AssignmentRow.status == "assigned",
                AssignmentRow.expires_at.is_not(None),
                AssignmentRow.expires_at < now,
            )
        )
    )
    _expire(session, study_id, ids)
    return len(ids)


def _expire(session: Session, study_id: int, ids: list[int]) -> None:
    if ids:
        session.execute(update(AssignmentRow).where(AssignmentRow.id.in_(ids)).values(status="expired"))
        session.add(EventRow(study_id=study_id, kind="assignments-expired", payload={"assignments": ids}))


def unit_load(session: Session, study_id: int, kind: str | None = None) -> dict[int, dict[str, int]]:
    """unit id -> {"submitted": n, "assigned": m} (expired ones do not count)."""
    q = (
        select(AssignmentRow.unit_id, AssignmentRow.status, func.count())
        .where(AssignmentRow.study_id == study_id, AssignmentRow.status.in_(("assigned", "submitted")))
        .group_by(AssignmentRow.unit_id, AssignmentRow.status)
    )
    if kind is not None:
        q = q.join(UnitRow, UnitRow.id == AssignmentRow.unit_id).where(UnitRow.kind == kind)
    out: dict[int, dict[str, int]] = defaultdict(lambda: {"submitted": 0, "assigned": 0})
    for unit_id, status, n in session.execute(q):
        out[unit_id][status] = int(n)
    return dict(out)


@dataclass
class _LoadCache:
    top: int = 0  # the highest assignment id read
    load: dict[int, dict[str, int]] = field(default_factory=dict)  # as unit_load returns it
    # assignments whose status may still change (assigned, expired): id -> (unit id, status, expiry as
    # last read; an expiry is only ever extended, so the stored one is never later than the real one)
    pending: dict[int, tuple[int, str, datetime | None]] = field(default_factory=dict)
    # every change of a unit's used count (submitted + assigned) as (unit id, +1/-1), from log_base on:
    # what load_totals brings its sums up to date from
    log: list[tuple[int, int]] = field(default_factory=list)
    log_base: int = 0
    totals: dict[str, _Totals] = field(default_factory=dict)


@dataclass
class _Totals:
    token: object  # what keys_of was made from: another one means rebuild
    at: int  # the log position applied
    sums: dict[Any, int]


_LOG_KEPT = 20_000
_COUNTED = ("assigned", "submitted")
_FINAL = ("submitted", "abandoned", "returned")  # statuses an assignment never leaves
_NEW_ASSIGNMENTS = select(_ASSIGNMENT.id, _ASSIGNMENT.unit_id, _ASSIGNMENT.status, _ASSIGNMENT.expires_at).where(
    _ASSIGNMENT.study_id == bindparam("study"), _ASSIGNMENT.id > bindparam("top")
)
_ASSIGNMENT_COLUMNS_NOW = select(_ASSIGNMENT.id, _ASSIGNMENT.status, _ASSIGNMENT.expires_at)
_DIALECTS = ("sqlite", "postgresql")


def _id_among(dialect: str) -> ColumnElement[bool]:
    """assignments.id among the ids of the parameter "ids" (given as _ids_param makes it), as one
    parameter whatever their number: PostgreSQL an array (= ANY), SQLite a JSON array (IN
    json_each). An expanding IN list of the ~200 open ones (one per annotator at work) made
    SQLAlchemy render, and the database parse, a new statement at every answer: 4% of a PostgreSQL
    serve worker's CPU, and on SQLite 200 parameters bound inside the study's write lock."""
    if dialect == "postgresql":
        return _ASSIGNMENT.id == any_(bindparam("ids", type_=ARRAY(Integer)))
    among: Select[Any] = select(literal_column("value")).select_from(func.json_each(bindparam("ids", type_=String)))
    return _ASSIGNMENT.id.in_(among.scalar_subquery())


def _ids_param(conn: Connection, ids: Sequence[int]) -> Any:
    """The "ids" parameter of an _id_among statement on this connection's database."""
    return list(ids) if conn.dialect.name == "postgresql" else json.dumps(list(ids))


_ASSIGNMENT_NOW = {dialect: _ASSIGNMENT_COLUMNS_NOW.where(_id_among(dialect)) for dialect in _DIALECTS}
# the new assignments and the kept open ones no longer open in one statement (on PostgreSQL they were
# two round trips of every assignment given; on SQLite two statements inside the study's write lock).
# A new one's id is above `top`, a kept one's is not.
_NEW_AND_LEFT_OPEN = {
    dialect: union_all(
        _NEW_ASSIGNMENTS,
        select(_ASSIGNMENT.id, _ASSIGNMENT.unit_id, _ASSIGNMENT.status, _ASSIGNMENT.expires_at).where(
            _id_among(dialect), _ASSIGNMENT.status != "assigned"
        ),
    )
    for dialect in _DIALECTS
}


def _count(cache: _LoadCache, unit_id: int, status: str, sign: int) -> None:
    if status in _COUNTED:
        entry = cache.load.setdefault(unit_id, {"submitted": 0, "assigned": 0})
        entry[status] += sign
        cache.log.append((unit_id, sign))


def _move(cache: _LoadCache, aid: int, status: str, expires_at: datetime | None) -> None:
    """A kept pending assignment as read now."""
    unit_id, before, _ = cache.pending[aid]
    if status != before:
        _count(cache, unit_id, before, -1)
        _count(cache, unit_id, status, +1)
    if status in _FINAL:
        del cache.pending[aid]
    else:
        cache.pending[aid] = (unit_id, status, _aware(expires_at))


def _still_open(cache: _LoadCache) -> list[int]:
    """The kept assignments last read as open (unit_load_cached asks which of them closed)."""
    return [aid for aid, (_u, status, _e) in cache.pending.items() if status == "assigned"]


def _read_now(session: Session, ids: list[int]) -> list[Any]:
    """The assignments `ids` as they are now: (id, status, expiry) rows (_ASSIGNMENT_NOW)."""
    if not ids:
        return []
    conn = session.connection()
    return list(conn.execute(_ASSIGNMENT_NOW[conn.dialect.name], {"ids": _ids_param(conn, ids)}).all())


def _load_cache(store: Transactions, study_id: int) -> _LoadCache:
    caches: dict[int, _LoadCache] = store.__dict__.setdefault("_unit_load_cache", {})
    return caches.setdefault(study_id, _LoadCache())


def unit_load_cached(
    session: Session, store: Transactions, study_id: int, read_ahead: LoadRead | None = None
) -> dict[int, dict[str, int]]:
    """unit_load(session, study_id), kept per process on the store and brought up to date from the
    assignments created since (ids above the highest read) and those of the open or expired ones
    whose status changed, instead of counting every assignment of the study at each assignment.

    Sound because assignments are created only under the study lock (scheduling.assign_locked),
    so they commit in id order, and a status leaves `assigned`/`expired` only for a final one
    (submitted, abandoned, returned) or back to `assigned` (a revival): reading the open ones that
    are no longer open and every expired one each time sees every change. Call it under the study
    lock. `read_ahead`: those changes as annotator_assignments_and_load read them in this
    transaction, used when the kept load is still as it was then."""
    cache = _load_cache(store, study_id)
    session.flush()  # the caller's own changes first (a plain Core read does not autoflush)
    conn = session.connection()
    still_open = _still_open(cache)
    expired = [aid for aid, (_u, status, _e) in cache.pending.items() if status != "assigned"]
    top = cache.top  # every kept one was read as new before: its id is not above top
    ahead = read_ahead is not None and read_ahead.top == top and read_ahead.still_open == tuple(still_open)
    if ahead or still_open:
        rows: Sequence[Any] = (
            cast(LoadRead, read_ahead).rows
            if ahead
            else conn.execute(
                _NEW_AND_LEFT_OPEN[conn.dialect.name],
                {"study": study_id, "top": top, "ids": _ids_param(conn, still_open)},
            ).all()
        )
        new: Sequence[Any] = [row for row in rows if row[0] > top]
        left_open = [(aid, status, expires_at) for aid, _unit, status, expires_at in rows if aid <= top]
    else:
        new = conn.execute(_NEW_ASSIGNMENTS, {"study": study_id, "top": cache.top}).all()
        left_open = []
    for aid, status, expires_at in left_open + _read_now(session, expired):
        _move(cache, aid, status, expires_at)
    for aid, unit_id, status, expires_at in new:
        _count(cache, unit_id, status, +1)
        if status not in _FINAL:
            cache.pending[aid] = (unit_id, status, _aware(expires_at))
        cache.top = max(cache.top, aid)
    if len(cache.log) > _LOG_KEPT:  # the totals rebuild from the load instead
        cache.log_base += len(cache.log)
        cache.log.clear()
    return cache.load


def load_totals(
    store: Transactions, study_id: int, name: str, keys_of: Callable[[int], Iterable[Any]], token: object
) -> dict[Any, int]:
    """Used assignments (submitted + open) summed per key over the study's units, as unit_load_cached
    last read them (e.g. per bot pair): `keys_of(unit id)` gives a unit's keys, the same for as long
    as `token` is the same object. Kept per process under `name` and brought up to date from the
    changes since, not summed over every unit at each assignment. Read-only for the caller."""
    cache = _load_cache(store, study_id)
    kept = cache.totals.get(name)
    if kept is None or kept.token is not token or kept.at < cache.log_base:
        sums: dict[Any, int] = {}
        for unit_id, entry in cache.load.items():
            n = entry["submitted"] + entry["assigned"]
            if n:
                for key in keys_of(unit_id):
                    sums[key] = sums.get(key, 0) + n
        kept = cache.totals[name] = _Totals(token, cache.log_base + len(cache.log), sums)
        return sums
    sums = kept.sums
    for unit_id, sign in cache.log[kept.at - cache.log_base :]:
        for key in keys_of(unit_id):
            sums[key] = sums.get(key, 0) + sign
    kept.at = cache.log_base + len(cache.log)
    return sums


def expire_due(session: Session, store: Transactions, study_id: int, *, recheck: bool = False) -> int:
    """expire_assignments for the open assignments unit_load_cached keeps (every open one of the
    study; call it just after, in the same transaction): only those whose expiry as last read has
    passed are read again, not every assignment of the study. `recheck`: read every open one's
    expiry (one set back by hand, which nothing in the app does)."""
    cache = _load_cache(store, study_id)
    now = clock.now()
    due = [
        aid
        for aid, (_u, status, expires_at) in cache.pending.items()
        if status == "assigned" and (recheck or (expires_at is not None and expires_at < now))
    ]
    if not due:
        return 0
    ids = []
    for aid, status, expires_at in _read_now(session, due):
        expires_at = _aware(expires_at)
        if status == "assigned" and expires_at is not None and expires_at < now:
            ids.append(aid)
            status = "expired"
        _move(cache, aid, status, expires_at)  # a rollback is undone by the next read of expired ones
    _expire(session, study_id, ids)
    return len(ids)


def annotator_assignments(
    session_or_store: Session | Transactions, study_id: int, annotator_id: int, include_expired: bool = False
) -> list[AssignmentInfo]:
    query = _ANNOTATOR_ASSIGNMENTS_ALL if include_expired else _ANNOTATOR_ASSIGNMENTS
    params = {"study_id": study_id, "annotator_id": annotator_id}
    if isinstance(session_or_store, Session):
        session_or_store.flush()  # the caller's own pending changes first (a plain Core read does not autoflush)
        return [_assignment_from_columns(row) for row in session_or_store.connection().execute(query, params)]
    with session_or_store.read_connection() as conn:
        return [_assignment_from_columns(row) for row in conn.execute(query, params)]


# built once, with bound parameters (as _SUBMITTED_COUNT below)
_ANNOTATOR_ASSIGNMENTS_ALL = _ASSIGNMENT_WITH_UNIT.where(
    _ASSIGNMENT.study_id == bindparam("study_id"), _ASSIGNMENT.annotator_id == bindparam("annotator_id")
).order_by(_ASSIGNMENT.id)
# _ANNOTATOR_ASSIGNMENTS_ALL with the study's units mark (units_mark) in the same statement: the
# mark's one row outer-joined to the annotator's assignments (their columns NULL when they have
# none). The scheduler reads both at every choice under the study lock: one round trip, not two.
_MARK = (
    select(func.count().label("units"), func.max(_UNIT.id).label("top_unit"))
    .where(_UNIT.study_id == bindparam("study_id"))
    .subquery("units_mark")
)
_ANNOTATOR_ASSIGNMENTS_MARKED = (
    select(_MARK.c.units, _MARK.c.top_unit, *_ASSIGNMENT_WITH_UNIT.selected_columns)
    .select_from(
        _MARK.outerjoin(
            cast(Table, AssignmentRow.__table__).join(UnitRow.__table__, _UNIT.id == _ASSIGNMENT.unit_id),
            and_(_ASSIGNMENT.study_id == bindparam("study_id"), _ASSIGNMENT.annotator_id == bindparam("annotator_id")),
        )
    )
    .order_by(_ASSIGNMENT.id)
)


def _load_changes_shaped(where: Any) -> Any:
    """The assignments `where` selects as unit_load_cached reads them (id, unit id, status,
    expiry), in the columns of _ANNOTATOR_ASSIGNMENTS_MARKED (the others NULL), part 1."""
    kept = [(_ASSIGNMENT.id, _ASSIGNMENT.id), (_UNIT.id, _ASSIGNMENT.unit_id), (_ASSIGNMENT.status, _ASSIGNMENT.status)]
    kept.append((_ASSIGNMENT.expires_at, _ASSIGNMENT.expires_at))
    columns: list[Any] = [literal_column("1"), sa_cast(null(), Integer), sa_cast(null(), Integer)]
    for column in _ASSIGNMENT_WITH_UNIT.selected_columns:
        read = [value for place, value in kept if place is column]
        columns.append(read[0] if read else sa_cast(null(), column.type))
    return select(*columns).where(where)


# Under the study lock at each choice: the annotator's assignments with the units mark (part 0) and
# the kept load's changes -- the assignments created since it last read and those of its open ones
# that closed (part 1) -- in one statement (annotator_assignments_and_load). On PostgreSQL they were
# two round trips of every assignment given; on SQLite three statements inside the write lock. Under
# load the lock's holder waits after each statement (for the GIL, for a core), and the others wait
# for the lock: it bounded ACUTE's judgments/s ("limit: write lock", benchmarks/load.py).
_MARKED_AND_LOAD = {
    dialect: union_all(
        select(literal_column("0"), *_ANNOTATOR_ASSIGNMENTS_MARKED.selected_columns).select_from(
            *_ANNOTATOR_ASSIGNMENTS_MARKED.get_final_froms()
        ),
        _load_changes_shaped(and_(_ASSIGNMENT.study_id == bindparam("study_id"), _ASSIGNMENT.id > bindparam("top"))),
        _load_changes_shaped(and_(_id_among(dialect), _ASSIGNMENT.status != "assigned")),
    ).order_by(text("1"), text("4"))
    for dialect in _DIALECTS
}
# positions in a row of _MARKED_AND_LOAD
_PART, _MARK_AT, _ASSIGNMENT_AT = 0, 1, 3
_LOAD_AT = tuple(
    _ASSIGNMENT_AT + n
    for n, column in enumerate(_ASSIGNMENT_WITH_UNIT.selected_columns)
    if any(column is c for c in (_ASSIGNMENT.id, _UNIT.id, _ASSIGNMENT.status, _ASSIGNMENT.expires_at))
)


@dataclass
class LoadRead:
    """The kept load's changes read ahead with the annotator's assignments, for unit_load_cached to
    apply instead of reading them: valid while the kept load is as it was then (`top`, the open
    ones it asked about)."""

    top: int
    still_open: tuple[int, ...]
    rows: list[tuple[int, int, str, datetime | None]]  # id, unit id, status, expiry


def annotator_assignments_and_load(
    session: Session, store: Transactions, study_id: int, annotator_id: int
) -> tuple[list[AssignmentInfo], tuple[int, int | None], LoadRead]:
    """The annotator's assignments (expired ones too), the units mark and the kept load's changes,
    in one statement (_MARKED_AND_LOAD)."""
    cache = _load_cache(store, study_id)
    still_open = tuple(_still_open(cache))
    session.flush()  # the caller's own pending changes first (a plain Core read does not autoflush)
    conn = session.connection()
    params = {"study_id": study_id, "annotator_id": annotator_id, "top": cache.top, "ids": _ids_param(conn, still_open)}
    rows = conn.execute(_MARKED_AND_LOAD[conn.dialect.name], params).all()
    mine = [row for row in rows if row[_PART] == 0]
    mark = (int(mine[0][_MARK_AT]), mine[0][_MARK_AT + 1])
    everything = [_assignment_from_columns(row[_ASSIGNMENT_AT:]) for row in mine if row[_ASSIGNMENT_AT] is not None]
    changes = [cast(Any, tuple(row[n] for n in _LOAD_AT)) for row in rows if row[_PART] == 1]
    return everything, mark, LoadRead(cache.top, still_open, changes)


_ANNOTATOR_ASSIGNMENTS = (
    _ASSIGNMENT_WITH_UNIT.where(
        _ASSIGNMENT.study_id == bindparam("study_id"),
        _ASSIGNMENT.annotator_id == bindparam("annotator_id"),
        _ASSIGNMENT.status.not_in(tuple(EXCLUDED_ASSIGNMENT_STATUSES)),
    )
).order_by(_ASSIGNMENT.id)


def submitted_count(store: Transactions, study_id: int, annotator_id: int, kind: str) -> int:
    """How many units of this kind the annotator has finished (a count, not their whole history:
    every task page's progress header asks). Within Store.shared_reads, the count the page's session
    read brought (get_annotator_and_resume_rows' `count_kind`) when it is of this kind."""
    noted = store.noted_read(_submitted_key(annotator_id, kind))
    if noted is not None:
        return int(noted)
    with store.read_connection() as conn:
        return int(
            conn.execute(
                _SUBMITTED_COUNT, {"study_id": study_id, "annotator_id": annotator_id, "kind": kind}
            ).scalar_one()
        )


# built once, with bound parameters: a statement made per call cost as much again in building and
# in the cache key SQLAlchemy computes for it
_SUBMITTED_COUNT = (
    select(func.count())
    .select_from(AssignmentRow.__table__.join(UnitRow.__table__, _UNIT.id == _ASSIGNMENT.unit_id))
    .where(
        _ASSIGNMENT.study_id == bindparam("study_id"),
        _ASSIGNMENT.annotator_id == bindparam("annotator_id"),
        _ASSIGNMENT.status == "submitted",
        _UNIT.kind == bindparam("kind"),
    )
)


def create_assignment(
    session: Session,
    study_id: int,
    unit_id: int,
    annotator_id: int,
    *,
    shown_order: list[Any] | None,
    state: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    unit: UnitInfo | None = None,
) -> AssignmentInfo:
    """Store an open assignment; `unit`: the unit as the caller already holds it (else it is read)."""
    if unit is None or unit.id != unit_id:
        stored = session.get(UnitRow, unit_id)
        if stored is None:  # the caller chose an existing unit inside this transaction
            raise StoreError(f"unit {unit_id} does not exist")
        unit = UnitInfo(stored.id, stored.external_id, stored.kind, stored.conversation_ids, stored.payload)
    # Core inserts, not ORM objects to flush: one per assignment, under the study lock (the
    # caller's pending rows first, so the events keep their order)
    session.flush()
    started_at, state = clock.now(), dict(state or {})
    conn = session.connection()
    values = {
        "study_id": study_id,
        "unit_id": unit_id,
        "annotator_id": annotator_id,
        "status": "assigned",
        "shown_order": shown_order,
        "state": state,
        "started_at": started_at,
        "expires_at": expires_at,
        "submitted_at": None,
    }
    if conn.dialect.name == "postgresql":  # the assignment and its event in one statement
        aid = int(conn.execute(_GIVE_ASSIGNMENT_PG, {**values, "event_at": clock.now()}).scalar_one())
    else:
        key = conn.execute(_INSERT_ASSIGNMENT, values).inserted_primary_key
        assert key is not None  # an insert of one row
        aid = int(key[0])
        conn.execute(
            _INSERT_EVENT,
            {
                "study_id": study_id,
                "kind": "assignment-given",
                "annotator_id": annotator_id,
                "payload": {"assignment": aid, "unit": unit_id},
                "created_at": clock.now(),
            },
        )
    return AssignmentInfo(
        id=aid,
        study_id=study_id,
        annotator_id=annotator_id,
        unit_id=unit.id,
        unit_external_id=unit.external_id,
        unit_kind=unit.kind,
        conversation_ids=list(unit.conversation_ids or []),
        payload=dict(unit.payload or {}),
        status="assigned",
        shown_order=shown_order,
        state=dict(state),
        started_at=started_at,
        expires_at=_aware(expires_at),
    )


_INSERT_ASSIGNMENT = insert(AssignmentRow)
_INSERT_EVENT = insert(EventRow)
_EVENT = EventRow.__table__.c
_EVENT_COLUMNS = ["study_id", "kind", "annotator_id", "payload", "created_at"]


def _typed(name: str, column: Any) -> Any:
    return bindparam(name, type_=column.type)


# PostgreSQL writes a row and its event in one statement, a data-modifying CTE (one round trip
# instead of two, twice per answer: the closed assignment and the next one given). SQLite has no
# such CTE and keeps two statements; the rows and the events' values are the same.
_GIVEN_COLUMNS = (
    "study_id",
    "unit_id",
    "annotator_id",
    "status",
    "shown_order",
    "state",
    "started_at",
    "expires_at",
    "submitted_at",
)
_GIVEN = (
    insert(AssignmentRow)
    .values({name: _typed(name, _ASSIGNMENT[name]) for name in _GIVEN_COLUMNS})
    .returning(_ASSIGNMENT.id)
    .cte("given")
)
_GIVE_ASSIGNMENT_PG = select(_GIVEN.c.id).add_cte(
    insert(EventRow)
    .from_select(
        _EVENT_COLUMNS,
        select(
            _typed("study_id", _EVENT.study_id),
            literal("assignment-given"),
            _typed("annotator_id", _EVENT.annotator_id),
            func.json_build_object("assignment", _GIVEN.c.id, "unit", _typed("unit_id", _ASSIGNMENT.unit_id)),
            _typed("event_at", _EVENT.created_at),
        ).select_from(_GIVEN),
    )
    .cte("given_logged")
)


def _submitted_with_event_pg(closing: Any) -> Any:
    """`closing` (an UPDATE ... RETURNING study_id, annotator_id of a still open assignment) and its
    assignment-submitted event in one statement; a row back when it closed one."""
    closed = closing.cte("closed")
    return (
        insert(EventRow)
        .from_select(
            _EVENT_COLUMNS,
            select(
                closed.c.study_id,
                literal("assignment-submitted"),
                closed.c.annotator_id,
                _typed("event_payload", _EVENT.payload),
                _typed("at", _EVENT.created_at),
            ),
        )
        .returning(_EVENT.study_id, _EVENT.annotator_id)
    )


def get_assignment(store: Transactions, assignment_id: int) -> AssignmentInfo | None:
    with store.read_connection() as conn:
        row = conn.execute(_ASSIGNMENT_BY_ID, {"asid": assignment_id}).first()
    return _assignment_from_columns(row) if row is not None else None


def _assignment_from_columns(row: Any) -> AssignmentInfo:
    """The AssignmentInfo of a row of _ASSIGNMENT_WITH_UNIT."""
    aid, study_id, annotator_id, unit_id, unit_external_id, kind, conversation_ids, payload = row[:8]
    status, shown_order, state, started_at, expires_at, submitted_at = row[8:]
    return AssignmentInfo(
        id=aid,
        study_id=study_id,
        annotator_id=annotator_id,
        unit_id=unit_id,
        unit_external_id=unit_external_id,
        unit_kind=kind,
        conversation_ids=list(conversation_ids or []),
        payload=dict(payload or {}),
        status=status,
        shown_order=shown_order,
        state=dict(state or {}),
        started_at=_aware(started_at),
        expires_at=_aware(expires_at),
        submitted_at=_aware(submitted_at),
    )


def open_assignment(
    store: Transactions, study_id: int, annotator_id: int, now: datetime | None = None
) -> AssignmentInfo | None:
    """The annotator's unfinished, unexpired assignment (the oldest), if any."""
    now = now or clock.now()
    with store.read() as s:
        q = (
            select(AssignmentRow, UnitRow)
            .join(UnitRow, UnitRow.id == AssignmentRow.unit_id)
            .where(
                AssignmentRow.study_id == study_id,
                AssignmentRow.annotator_id == annotator_id,
                AssignmentRow.status == "assigned",
            )
            .order_by(AssignmentRow.id)
        )
        for a, u in s.execute(q):
            exp = _aware(a.expires_at)
            if exp is None or exp > now:
                return _assignment(a, u)
        return None


def open_assignments_holding(store: Transactions, study_id: int, key: str) -> list[AssignmentInfo]:
    """The study's unfinished assignments (expired by time or not) whose state holds `key`."""
    with store.read() as s:
        q = (
            select(AssignmentRow, UnitRow)
            .join(UnitRow, UnitRow.id == AssignmentRow.unit_id)
            .where(
                AssignmentRow.study_id == study_id,
                AssignmentRow.status == "assigned",
                # the database leaves out the states without the key (an arena study asks at every
                # assignment: most open states hold no vote, and each one decoded here cost CPU)
                AssignmentRow.state[key].is_not(None),
            )
            .order_by(AssignmentRow.id)
        )
        return [_assignment(a, u) for a, u in s.execute(q) if key in (a.state or {})]


def update_state(
    session_or_store: Session | Transactions,
    assignment_id: int,
    state: dict[str, Any],
    expires_at: datetime | None = None,
) -> None:
    """Store an assignment's progress (and, while it is open, a new expiry); in the caller's
    transaction when given a Session. One Core UPDATE: the ORM's read of the row and its flushed
    update were two statements at every step of a multi-step unit (each Spot The Bot segment)."""

    def run(s: Session) -> None:
        s.flush()  # the caller's pending rows first (a Core statement does not autoflush)
        params: dict[str, Any] = {"asid": assignment_id, "new_state": dict(state)}
        if expires_at is None:
            s.connection().execute(_SET_ASSIGNMENT_STATE, params)
        else:
            s.connection().execute(_SET_STATE_AND_EXPIRY, {**params, "expires_at": expires_at})
        _expire_held(s, assignment_id)

    if isinstance(session_or_store, Session):
        return run(session_or_store)
    with session_or_store.session() as s:
        return run(s)


def advance_state(
    store: Transactions,
    assignment_id: int,
    key: str,
    expected: tuple[Any, ...],
    state: dict[str, Any],
    expires_at: datetime | None = None,
) -> bool:
    """Store `state` only if the stored state's `key` is still one of `expected` (compare-and-set):
    of concurrent copies of one step (a double click, a retried request) exactly one goes through."""
    with store.session() as s:  # SQLite: the write lock at BEGIN; PostgreSQL: the row lock below
        row = s.get(AssignmentRow, assignment_id, with_for_update=store.is_postgres)
        if row is None or (row.state or {}).get(key) not in expected:
            return False
        row.state = dict(state)
        if expires_at is not None and row.status == "assigned":
            row.expires_at = expires_at
        return True


def submit_assignment(
    session_or_store: Session | Transactions, assignment_id: int, state: dict[str, Any] | None = None
) -> None:
    """Close an assignment as submitted; in the caller's transaction when given a Session. Core
    statements: every answer closes one. On PostgreSQL the update and its assignment-submitted
    event are one statement (a data-modifying CTE); on SQLite an UPDATE ... RETURNING what the
    event needs, then the event's insert. A submitted one is not closed again (no second event);
    its `state`, when given, is still set."""

    def run(s: Session) -> None:
        s.flush()  # the caller's pending rows first (the events keep their order)
        conn = s.connection()
        params: dict[str, Any] = {"asid": assignment_id, "at": clock.now()}
        if state is not None:
            params["new_state"] = dict(state)
        if conn.dialect.name == "postgresql":  # the update and its event in one statement
            statement = _SUBMIT_PG[state is not None]
            row = conn.execute(statement, {**params, "event_payload": {"assignment": assignment_id}}).first()
        else:
            row = conn.execute(
                _SUBMIT_ASSIGNMENT_WITH_STATE if state is not None else _SUBMIT_ASSIGNMENT, params
            ).first()
            if row is not None:  # it was open (or expired): now submitted
                study_id, annotator_id = row
                conn.execute(
                    _INSERT_EVENT,
                    {
                        "study_id": study_id,
                        "kind": "assignment-submitted",
                        "annotator_id": annotator_id,
                        "payload": {"assignment": assignment_id},
                        "created_at": clock.now(),
                    },
                )
        _after_submit(s, assignment_id, closed=row is not None, state=state)

    if isinstance(session_or_store, Session):
        return run(session_or_store)
    with session_or_store.session() as s:
        return run(s)


def _expire_held(s: Session, assignment_id: int) -> None:
    """After a Core statement changed the assignment: an ORM copy of its row this transaction holds
    is read again on its next use."""
    held = s.identity_map.get(s.identity_key(AssignmentRow, assignment_id))
    if held is not None:
        s.expire(held)


def _after_submit(s: Session, assignment_id: int, *, closed: bool, state: dict[str, Any] | None) -> None:
    """After the statement that closes an assignment: the `state` of one submitted before (nothing
    was closed now) set, and the held ORM copy expired (_expire_held)."""
    if not closed and state is not None:
        s.connection().execute(_SET_ASSIGNMENT_STATE, {"asid": assignment_id, "new_state": dict(state)})
    _expire_held(s, assignment_id)


def judged_and_updated(
    s: Session,
    judgment: dict[str, Any],
    assignment_id: int,
    *,
    submit: bool,
    state: dict[str, Any] | None,
    expires_at: datetime | None = None,
) -> int | None:
    """PostgreSQL: an answer's judgment row (`judgment`: every column, as Store.add_judgment gives
    them; inserted unless its request id was stored before) and its assignment's update in one
    statement (data-modifying CTEs), where they were two round trips of every answer: with
    `submit`, closed as submit_assignment closes it (its event; `state` set); else its progress
    `state` stored as update_state stores it (`expires_at` while it is open). The new judgment's
    id, or None for a repeated request id."""
    params: dict[str, Any] = {**judgment, "asid": assignment_id}
    if state is not None:
        params["new_state"] = dict(state)
    if submit:
        statement = _JUDGED_AND_SUBMITTED_PG[state is not None]
        params.update(at=clock.now(), event_payload={"assignment": assignment_id})
    else:
        assert state is not None, "a judgment's assignment update is a submit or a state"
        statement = _JUDGED_AND_PROGRESSED_PG[expires_at is not None]
        if expires_at is not None:
            params["expires_at"] = expires_at
    made, updated = s.connection().execute(statement, params).one()
    if submit:
        _after_submit(s, assignment_id, closed=bool(updated), state=state)
    else:
        _expire_held(s, assignment_id)
    return int(made) if made is not None else None


def _judged_and(update_cte: str, binds: list[Any]) -> Any:
    """judged_and_updated's statement: the judgment's insert, `update_cte` (named `updated`, a row
    back per row it changed) and the count of its rows. Text over the tables' own columns and
    types, as store._insert_once (PostgreSQL's INSERT ... ON CONFLICT as a Core construct
    has no cache key: it was compiled again on every answer)."""
    judgments = cast(Table, JudgmentRow.__table__)
    columns = [c for c in judgments.c if not c.primary_key]
    names = ", ".join(c.name for c in columns)
    values = ", ".join(f":{c.name}" for c in columns)
    sql = (
        f"WITH made AS (INSERT INTO {judgments.name} ({names}) VALUES ({values}) "
        "ON CONFLICT (annotator_id, client_request_id) DO NOTHING RETURNING id), "
        f"{update_cte} "
        "SELECT (SELECT id FROM made), (SELECT count(*) FROM updated)"
    )
    typed = [bindparam(c.name, type_=c.type) for c in columns] + [bindparam("asid", type_=Integer())]
    return text(sql).bindparams(*typed, *binds)


def _judged_and_submitted_pg(with_state: bool) -> Any:
    """The judgment with submit_assignment's UPDATE and event (_SUBMIT_PG): `updated` counts the
    events, one when the assignment closed now."""
    assignments, events = AssignmentRow.__tablename__, EventRow.__tablename__
    new_state = ", state = :new_state" if with_state else ""
    closing = (
        f"closed AS (UPDATE {assignments} SET status = 'submitted', submitted_at = :at{new_state} "
        "WHERE id = :asid AND status != 'submitted' RETURNING study_id, annotator_id), "
        f"updated AS (INSERT INTO {events} (study_id, kind, annotator_id, payload, created_at) "
        "SELECT study_id, 'assignment-submitted', annotator_id, CAST(:event_payload AS JSON), :at FROM closed "
        "RETURNING id)"
    )
    binds = [
        bindparam("at", type_=_ASSIGNMENT.submitted_at.type),
        bindparam("event_payload", type_=_EVENT.payload.type),
    ]
    if with_state:
        binds.append(bindparam("new_state", type_=_ASSIGNMENT.state.type))
    return _judged_and(closing, binds)


def _judged_and_progressed_pg(with_expiry: bool) -> Any:
    """The judgment with update_state's UPDATE (_SET_ASSIGNMENT_STATE, _SET_STATE_AND_EXPIRY)."""
    expiry = ", expires_at = CASE WHEN status = 'assigned' THEN :expires_at ELSE expires_at END" if with_expiry else ""
    progressing = (
        f"updated AS (UPDATE {AssignmentRow.__tablename__} SET state = :new_state{expiry} "
        "WHERE id = :asid RETURNING id)"
    )
    binds = [bindparam("new_state", type_=_ASSIGNMENT.state.type)]
    if with_expiry:
        binds.append(bindparam("expires_at", type_=_ASSIGNMENT.expires_at.type))
    return _judged_and(progressing, binds)


_UPDATE_ASSIGNMENT = update(cast(Table, AssignmentRow.__table__)).where(_ASSIGNMENT.id == bindparam("asid"))
# a row back only when the assignment was not submitted already (a repeated answer changes nothing)
_SUBMIT_ASSIGNMENT = (
    _UPDATE_ASSIGNMENT.where(_ASSIGNMENT.status != "submitted")
    .values(status="submitted", submitted_at=bindparam("at", type_=_ASSIGNMENT.submitted_at.type))
    .returning(_ASSIGNMENT.study_id, _ASSIGNMENT.annotator_id)
)
_SUBMIT_ASSIGNMENT_WITH_STATE = _SUBMIT_ASSIGNMENT.values(state=bindparam("new_state", type_=_ASSIGNMENT.state.type))
_SET_ASSIGNMENT_STATE = _UPDATE_ASSIGNMENT.values(state=bindparam("new_state", type_=_ASSIGNMENT.state.type))
# the expiry moves only while the assignment is open (as update_state's ORM version did)
_SET_STATE_AND_EXPIRY = _SET_ASSIGNMENT_STATE.values(
    expires_at=case(
        (_ASSIGNMENT.status == "assigned", bindparam("expires_at", type_=_ASSIGNMENT.expires_at.type)),
        else_=_ASSIGNMENT.expires_at,
    )
)
_SUBMIT_PG = {
    False: _submitted_with_event_pg(_SUBMIT_ASSIGNMENT),
    True: _submitted_with_event_pg(_SUBMIT_ASSIGNMENT_WITH_STATE),
}
_JUDGED_AND_SUBMITTED_PG = {False: _judged_and_submitted_pg(False), True: _judged_and_submitted_pg(True)}
_JUDGED_AND_PROGRESSED_PG = {False: _judged_and_progressed_pg(False), True: _judged_and_progressed_pg(True)}


def assignment_status_counts(store: Transactions, study_id: int) -> dict[str, int]:
    with store.read() as s:
        return {
            status: int(n)
            for status, n in s.execute(
                select(AssignmentRow.status, func.count())
                .where(AssignmentRow.study_id == study_id)
                .group_by(AssignmentRow.status)
            )
        }


# -- judgments -----------------------------------------------------------------------------------
def judgment_exists(store: Transactions, annotator_id: int, request_id: str) -> bool:
    with store.read() as s:
        return (
            s.scalar(
                select(JudgmentRow.id).where(
                    JudgmentRow.annotator_id == annotator_id, JudgmentRow.client_request_id == request_id
                )
            )
            is not None
        )


@dataclass
class JudgmentLite:
    id: int
    annotator_id: int
    annotator_status: str
    assignment_id: int | None
    unit_id: int | None
    question: str
    value: Any
    justification: str | None
    elapsed_s: float | None
    meta: dict[str, Any]
    created_at: datetime | None


def list_judgments(
    session_or_store: Session | Transactions,
    study_id: int,
    *,
    assignment_id: int | None = None,
    annotator_id: int | None = None,
    question: str | None = None,
    include_excluded: bool = False,
) -> list[JudgmentLite]:
    """Judgments of the study; those of expired/abandoned/returned assignments only with
    `include_excluded` (they are kept, never counted: see EXCLUDED_ASSIGNMENT_STATUSES)."""

    def run(s: Session) -> list[JudgmentLite]:
        q = (
            select(JudgmentRow, AnnotatorRow.status)
            .join(AnnotatorRow, AnnotatorRow.id == JudgmentRow.annotator_id)
            .where(JudgmentRow.study_id == study_id)
        )
        if not include_excluded:
            q = q.where(_counted(JudgmentRow.assignment_id))
        if assignment_id is not None:
            q = q.where(JudgmentRow.assignment_id == assignment_id)
        if annotator_id is not None:
            q = q.where(JudgmentRow.annotator_id == annotator_id)
        if question is not None:
            q = q.where(JudgmentRow.question == question)
        return [
            JudgmentLite(
                j.id,
                j.annotator_id,
                status,
                j.assignment_id,
                j.unit_id,
                j.question,
                j.value,
                j.justification,
                j.elapsed_s,
                dict(j.meta or {}),
                _aware(j.created_at),
            )
            for j, status in s.execute(q.order_by(JudgmentRow.id))
        ]

    if isinstance(session_or_store, Session):
        return run(session_or_store)
    with session_or_store.read() as s:
        return run(s)


def add_event(
    session: Session, study_id: int, kind: str, payload: dict[str, Any] | None = None, annotator_id: int | None = None
) -> None:
    session.add(EventRow(study_id=study_id, kind=kind, annotator_id=annotator_id, payload=payload or {}))


def create_unit(
    session: Session,
    study_id: int,
    external_id: str,
    kind: str,
    conversation_ids: list[str],
    payload: dict[str, Any] | None = None,
) -> UnitInfo:
    """Get or create a unit inside the caller's (locked) transaction (live methods make units on demand)."""
    row = session.scalar(select(UnitRow).where(UnitRow.study_id == study_id, UnitRow.external_id == external_id))
    if row is None:
        row = UnitRow(
            study_id=study_id,
            external_id=external_id,
            kind=kind,
            conversation_ids=list(conversation_ids),
            payload=payload or {},
        )
        session.add(row)
        session.flush()
    return UnitInfo(row.id, row.external_id, row.kind, list(row.conversation_ids or []), dict(row.payload or {}))


# -- adaptive collection (scheduling/plan.py) -----------------------------------------------------
@dataclass
class ScoredJudgment:
    """A judgment as the adaptive scheduler replays it, with its annotator's status."""

    id: int
    question: str
    value: Any
    meta: dict[str, Any]
    annotator_status: str
    annotator_meta: dict[str, Any]
    annotator: int | None = None  # the annotator's row id: the adaptive test counts per annotator


def scheduling_judgments(
    session: Session, study_id: int, exclude_questions: tuple[str, ...] = (), after_id: int = 0
) -> list[ScoredJudgment]:
    """The study's judgments in the order they were made (judgment id), without the texts;
    with `after_id`, only those stored after that judgment (the scheduler feeds them incrementally)."""
    q = (
        select(
            JudgmentRow.id,
            JudgmentRow.question,
            JudgmentRow.value,
            JudgmentRow.meta,
            AnnotatorRow.status,
            AnnotatorRow.meta,
            JudgmentRow.annotator_id,
        )
        .join(AnnotatorRow, AnnotatorRow.id == JudgmentRow.annotator_id)
        .where(JudgmentRow.study_id == study_id, JudgmentRow.id > after_id)
    )
    if exclude_questions:
        q = q.where(JudgmentRow.question.not_in(exclude_questions))
    q = q.where(_counted(JudgmentRow.assignment_id))
    return [
        ScoredJudgment(jid, question, value, dict(meta or {}), status, dict(ameta or {}), aid)
        for jid, question, value, meta, status, ameta, aid in session.execute(q.order_by(JudgmentRow.id))
    ]


def annotator_status_mark(session: Session, study_id: int) -> tuple[tuple[str, int], ...]:
    """How many annotators of the study have each status: changes when anyone is flagged or blocked."""
    return tuple(
        sorted(
            (status, int(n))
            for status, n in session.execute(
                select(AnnotatorRow.status, func.count())
                .where(AnnotatorRow.study_id == study_id)
                .group_by(AnnotatorRow.status)
            )
        )
    )


def count_assignments(session: Session, study_id: int) -> int:
    """Every assignment ever made in the study (expired included): a counter that only grows."""
    return int(
        session.scalar(select(func.count()).select_from(AssignmentRow).where(AssignmentRow.study_id == study_id))
    )


def bot_incidents(store: Transactions, study_id: int) -> list[dict[str, Any]]:
    """Per bot, what went wrong in live chats (for the admin page): failed replies (the `bot-error`
    events, with each distinct reason and how often) and replies cut at limits.bot_reply_chars
    (`bot-reply-cut`). Bots with neither are left out."""
    rows: dict[str, dict[str, Any]] = {}

    def row(bot: str) -> dict[str, Any]:
        return rows.setdefault(bot, {"bot": bot, "failures": 0, "reasons": {}, "shortened": 0})

    for e in list_events(store, study_id, "bot-error"):
        p = e["payload"]
        if "bot" not in p:  # written before failures were recorded per bot
            continue
        r = row(str(p["bot"]))
        r["failures"] += 1
        reason = f"{p.get('kind', 'error')}: {p.get('reason', '')}"
        r["reasons"][reason] = r["reasons"].get(reason, 0) + 1
    for e in list_events(store, study_id, "bot-reply-cut"):
        row(str(e["payload"].get("bot")))["shortened"] += 1
    return [rows[b] for b in sorted(rows)]


def list_events(
    session_or_store: Session | Transactions, study_id: int, kind: str | None = None
) -> list[dict[str, Any]]:
    """Events of the study (oldest first): {id, kind, annotator_id, payload, created_at}."""

    def run(s: Session) -> list[dict[str, Any]]:
        q = select(EventRow).where(EventRow.study_id == study_id)
        if kind is not None:
            q = q.where(EventRow.kind == kind)
        return [
            {
                "id": e.id,
                "kind": e.kind,
                "annotator_id": e.annotator_id,
                "payload": dict(e.payload or {}),
                "created_at": _aware(e.created_at),
            }
            for e in s.scalars(q.order_by(EventRow.id))
        ]

    if isinstance(session_or_store, Session):
        return run(session_or_store)
    with session_or_store.read() as s:
        return run(s)


# -- expiry, resumption, returns (issue 8) --------------------------------------------------------
def _counted(assignment_column: InstrumentedAttribute[int | None]) -> ColumnElement[bool]:
    """SQL condition: the judgment has no assignment, or its assignment is not expired/abandoned/returned."""
    excluded = select(AssignmentRow.id).where(AssignmentRow.status.in_(tuple(EXCLUDED_ASSIGNMENT_STATUSES)))
    return assignment_column.is_(None) | assignment_column.not_in(excluded)


def excluded_assignments(store: Transactions, study_id: int) -> dict[int, str]:
    """assignment id -> why its judgments are not counted (expired, abandoned, returned)."""
    with store.session() as s:
        return {
            aid: EXCLUDED_ASSIGNMENT_STATUSES[status]
            for aid, status in s.execute(
                select(AssignmentRow.id, AssignmentRow.status).where(
                    AssignmentRow.study_id == study_id,
                    AssignmentRow.status.in_(tuple(EXCLUDED_ASSIGNMENT_STATUSES)),
                )
            )
        }


def _superseded(session: Session, row: AssignmentRow) -> bool:
    """True when another annotator was given the same unit after this assignment expired."""
    since = _aware(row.expires_at)
    for other_start in session.scalars(
        select(AssignmentRow.started_at).where(
            AssignmentRow.unit_id == row.unit_id,
            AssignmentRow.id > row.id,
            AssignmentRow.annotator_id != row.annotator_id,
        )
    ):
        if since is None or _aware(other_start) >= since:
            return True
    return False


def _revive(session: Session, row: AssignmentRow, expires_at: datetime | None) -> None:
    row.status = "assigned"
    row.expires_at = expires_at
    session.add(
        EventRow(
            study_id=row.study_id,
            kind="assignment-revived",
            annotator_id=row.annotator_id,
            payload={"assignment": row.id},
        )
    )


_LATEST = AssignmentRow.__table__.alias("latest")
# An annotator's open assignments and their latest one (whatever its status), in id order: what
# resume_assignment decides from.
_RESUME_ROWS = _ASSIGNMENT_WITH_UNIT.where(
    _ASSIGNMENT.study_id == bindparam("study_id"),
    _ASSIGNMENT.annotator_id == bindparam("annotator_id"),
    (_ASSIGNMENT.status == "assigned")
    | (
        _ASSIGNMENT.id
        == select(func.max(_LATEST.c.id))
        .where(_LATEST.c.study_id == bindparam("study_id"), _LATEST.c.annotator_id == bindparam("annotator_id"))
        .scalar_subquery()
    ),
).order_by(_ASSIGNMENT.id)


_RESUME = _RESUME_ROWS.subquery("resume")
# the annotator and (outer-joined) the rows resume_assignment decides from, in one statement: a task
# page needs both (they were two round trips of every task page)
_ANNOTATOR_AND_RESUME_ROWS = (
    select(*_ANNOTATOR_COLUMNS.selected_columns, *_RESUME.c)
    .select_from(cast(Table, AnnotatorRow.__table__).outerjoin(_RESUME, true()))
    .where(_ANNOTATOR.id == bindparam("annotator_id"))
    .order_by(_RESUME.c.id)
)


# ... and, in the last column, the annotator's submitted assignments of one kind: what the task
# page's progress header counts (submitted_count), a statement of its own on every task page before
_ANNOTATOR_RESUME_ROWS_AND_COUNT = _ANNOTATOR_AND_RESUME_ROWS.add_columns(
    _SUBMITTED_COUNT.scalar_subquery().label("submitted")
)


def _submitted_key(annotator_id: int, kind: str) -> tuple[str, int, str]:
    return ("submitted", annotator_id, kind)


def get_annotator_and_resume_rows(
    store: Transactions, annotator_id: int, study_id: int, count_kind: str | None = None
) -> tuple[AnnotatorInfo | None, list[AssignmentInfo]]:
    """get_annotator and the rows resume_assignment reads (its `rows`), in one statement; with
    `count_kind`, the same statement counts the annotator's submitted units of that kind, and
    submitted_count answers from it for the rest of the thread's shared reads (Store.note_read)."""
    params: dict[str, Any] = {"annotator_id": annotator_id, "study_id": study_id}
    with store.read_connection() as conn:
        found: Sequence[Any]
        if count_kind is None:
            found = conn.execute(_ANNOTATOR_AND_RESUME_ROWS, params).all()
        else:
            found = conn.execute(_ANNOTATOR_RESUME_ROWS_AND_COUNT, {**params, "kind": count_kind}).all()
    if not found:
        return None, []
    if count_kind is not None:
        store.note_read(_submitted_key(annotator_id, count_kind), int(found[0][-1]))
        found = [row[:-1] for row in found]
    rows = [a for a in map(_joined_assignment, found) if a is not None]
    return annotator_from_columns(found[0][:_ANNOTATOR_WIDTH]), rows


def resume_assignment(
    store: Transactions,
    study_id: int,
    annotator_id: int,
    expires_at: datetime | None,
    now: datetime | None = None,
    rows: list[AssignmentInfo] | None = None,
) -> tuple[AssignmentInfo | None, str | None]:
    """The assignment the annotator should continue, and a notice for them.

    An open assignment comes back as it is (past its expiry too: nobody can have taken it while it
    was still open, so its expiry is extended). When the annotator's latest assignment expired and
    nobody was given its unit since, it is revived; when somebody was, it becomes `abandoned` and the
    notice says so (the caller then assigns fresh work). Locks only when an expired one is found.
    `rows`: what it reads first, when the caller read them already (get_annotator_and_resume_rows).
    """
    now = now or clock.now()
    # Read first, in a read transaction: every task page comes here, and on SQLite a write
    # transaction waits its turn behind every other writer of the study (Store._writer_turn).
    # Only an open assignment past its expiry is written (its expiry extended). A Core read, no ORM
    # rows, and only the rows looked at below: the open ones and the latest (not the whole history,
    # each row's JSON decoded, at every task page).
    if rows is None:
        with store.read_connection() as conn:
            rows = [
                _assignment_from_columns(row)
                for row in conn.execute(_RESUME_ROWS, {"study_id": study_id, "annotator_id": annotator_id})
            ]
    overdue = None
    for info in rows:
        if info.status == "assigned":
            if info.expires_at is None or info.expires_at > now:
                return info, None
            overdue = info.id
            break
    latest = rows[-1] if rows else None
    latest_id = latest.id if latest is not None else None
    latest_expired = latest is not None and latest.status == "expired"
    if overdue is not None:
        with store.session() as s:
            a = s.get(AssignmentRow, overdue)
            if a is not None and a.status == "assigned":
                a.expires_at = expires_at
                return _assignment(a, s.get_one(UnitRow, a.unit_id)), RESUMED_NOTICE
        # expired by another request meanwhile: look again from the start
        return resume_assignment(store, study_id, annotator_id, expires_at, now)
    if not latest_expired:
        return None, None
    with store.locked(study_id) as s:
        row = s.get(AssignmentRow, latest_id)
        if row is None or row.status != "expired":  # changed meanwhile: let the caller look again
            return None, None
        if _superseded(s, row):
            row.status = "abandoned"
            s.add(
                EventRow(
                    study_id=study_id,
                    kind="assignment-abandoned",
                    annotator_id=annotator_id,
                    payload={"assignment": row.id},
                )
            )
            return None, REASSIGNED_NOTICE
        _revive(s, row, expires_at)
        info = _assignment(row, s.get_one(UnitRow, row.unit_id))
        info.notice = RESUMED_NOTICE
        return info, RESUMED_NOTICE


def revive_assignment(store: Transactions, study_id: int, assignment_id: int, expires_at: datetime | None) -> bool:
    """Reopen an expired assignment whose unit nobody took since (a late answer still counts)."""
    with store.locked(study_id) as s:
        row = s.get(AssignmentRow, assignment_id)
        if row is None or row.status != "expired" or _superseded(s, row):
            return False
        later = s.scalar(
            select(func.count())
            .select_from(AssignmentRow)
            .where(AssignmentRow.annotator_id == row.annotator_id, AssignmentRow.id > row.id)
        )
        if later:  # the annotator has moved on to other work
            return False
        _revive(s, row, expires_at)
        return True


def mark_returned(store: Transactions, study_id: int, annotator_id: int, reason: str = "returned") -> int:
    """The annotator's platform submission was returned or timed out: free their unfinished work
    (open and expired assignments become `returned`) and record it. Returns how many were freed."""
    with store.locked(study_id) as s:
        rows = list(
            s.scalars(
                select(AssignmentRow).where(
                    AssignmentRow.study_id == study_id,
                    AssignmentRow.annotator_id == annotator_id,
                    AssignmentRow.status.in_(("assigned", "expired")),
                )
            )
        )
        for row in rows:
            row.status = "returned"
        ann = s.get(AnnotatorRow, annotator_id)
        if ann is not None:
            ann.meta = {**(ann.meta or {}), "returned_at": clock.now().isoformat(), "returned_reason": reason}
        s.add(
            EventRow(
                study_id=study_id,
                kind="submission-returned",
                annotator_id=annotator_id,
                payload={"assignments": [r.id for r in rows], "reason": reason},
            )
        )
        return len(rows)


def find_annotator(store: Transactions, study_id: int, external_id: str) -> AnnotatorInfo | None:
    with store.session() as s:
        row = s.scalar(
            select(AnnotatorRow).where(AnnotatorRow.study_id == study_id, AnnotatorRow.external_id == external_id)
        )
        return _annotator(row) if row is not None else None


# -- judge-guided collection (scheduling/tickets.py) ---------------------------------------------------
GUIDED_POOLS_EVENT = "judge-guided-pools"  # the pools the scheduler froze at the first assignment


def annotator_unit_judgments(
    session: Session, study_id: int, annotator_external_id: str
) -> list[tuple[str, Any, dict[str, Any]]]:
    """(unit external id, value, meta) of every judgment one annotator (e.g. a judge) gave on a unit."""
    q = (
        select(UnitRow.external_id, JudgmentRow.value, JudgmentRow.meta)
        .join(JudgmentRow, JudgmentRow.unit_id == UnitRow.id)
        .join(AnnotatorRow, AnnotatorRow.id == JudgmentRow.annotator_id)
        .where(JudgmentRow.study_id == study_id, AnnotatorRow.external_id == annotator_external_id)
        .order_by(JudgmentRow.id)
    )
    return [(ext, value, dict(meta or {})) for ext, value, meta in session.execute(q)]


def assignment_states(session: Session, study_id: int, kind: str) -> list[tuple[str, dict[str, Any]]]:
    """(status, state) of every assignment of the study on units of one kind, oldest first."""
    q = (
        select(AssignmentRow.status, AssignmentRow.state)
        .join(UnitRow, UnitRow.id == AssignmentRow.unit_id)
        .where(AssignmentRow.study_id == study_id, UnitRow.kind == kind)
        .order_by(AssignmentRow.id)
    )
    return [(status, dict(state or {})) for status, state in session.execute(q)]


# Bot replies read for the admin page's bot-echo similarity (quality/typing.py); enough for a study's
# replies, bounded for one page load.
ECHO_BOT_TURNS = 20_000


def typed_inputs(store: Transactions, study_id: int) -> tuple[dict[str, list[tuple[str, dict[str, Any]]]], list[str]]:
    """For the admin page: {annotator external id: [(text, input counts)]} of every justification and
    chat message that carries the page's counts (meta ``input``), and the study's bot replies (at
    most ECHO_BOT_TURNS) for the echo similarity."""
    texts: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    bots: list[str] = []
    with store.read() as s:
        judged = s.execute(
            select(AnnotatorRow.external_id, JudgmentRow.justification, JudgmentRow.meta)
            .join(AnnotatorRow, AnnotatorRow.id == JudgmentRow.annotator_id)
            .where(JudgmentRow.study_id == study_id)
        )
        for annotator, justification, meta in judged:
            signals = (meta or {}).get("input")
            if isinstance(signals, dict):
                texts.setdefault(str(annotator), []).append((justification or "", signals))
        turns = s.execute(
            select(ConversationRow.meta, TurnRow.text, TurnRow.meta, TurnRow.bot)
            .join(ConversationRow, ConversationRow.id == TurnRow.conversation_id)
            .where(ConversationRow.study_id == study_id)
            .order_by(TurnRow.id.desc())
        )
        for conv_meta, text, meta, bot in turns:
            if bot is not None:
                if len(bots) < ECHO_BOT_TURNS:
                    bots.append(text)
                continue
            signals = (meta or {}).get("input")
            owner = (conv_meta or {}).get("annotator")
            if isinstance(signals, dict) and owner:
                texts.setdefault(str(owner), []).append((text, signals))
    return texts, bots
