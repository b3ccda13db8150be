"""Every read and write of dialeval's data goes through Store; nothing else writes SQL."""

from __future__ import annotations

import fcntl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from .. import __version__
from ..errors import StoreBusy, StoreError
from ..records import Annotator, Conversation, Dataset, Judgment, Turn, Unit
from . import migrations
from .engine import READ_ONLY, check_connection, database_url, make_engine
from .schema import (
    AnnotatorRow,
    AssignmentRow,
    BotRow,
    ConversationRow,
    EventRow,
    JudgmentRow,
    RateBucketRow,
    SecretRow,
    Study,
    TurnRow,
    UnitRow,
)

IMPORT_EVENT = "import"  # an events row per imported source: {format, path, sha256, ...}
WRITER_WAIT_S = 30.0
CONVERSATION_CACHE_SIZE = 5000


class Store:
    def __init__(self, url: str):
        self.url = url
        self.engine: Engine = make_engine(url)
        check_connection(self.engine)
        with self.engine.begin() as conn:
            if self.engine.dialect.name == "postgresql":  # workers and hosts start at once: one migrates
                conn.execute(text("SELECT pg_advisory_xact_lock(6999999)"))
            self.migrated_from = migrations.upgrade(conn, __version__)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._writer = threading.RLock() if self.engine.dialect.name == "sqlite" else None
        self._writer_depth = 0
        self._study_turns: dict[int, threading.RLock] = {}
        self._conversations: dict[tuple[int, str], Conversation] = {}  # see get_conversation
        self._writer_file = None
        db_file = self.engine.url.database if self._writer is not None else None
        if db_file and db_file != ":memory:":
            self._writer_file = open(f"{db_file}-writer.lock", "a+b")  # noqa: SIM115 - kept open for flock
        self._read_sessions = sessionmaker(self.engine.execution_options(**{READ_ONLY: True}), expire_on_commit=False)

    @classmethod
    def for_study_dir(cls, study_dir: str | Path, configured_url: str | None = None) -> Store:
        return cls(database_url(study_dir, configured_url))

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def ping(self) -> None:
        """One query on the database (raises when it cannot be reached)."""
        with self.engine.connect() as c:
            c.execute(text("SELECT 1"))

    def close(self) -> None:
        self.engine.dispose()
        if self._writer_file is not None:
            self._writer_file.close()
            self._writer_file = None

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back on an error."""
        with self._writer_turn(), self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def _writer_turn(self) -> Iterator[None]:
        # SQLite lets one writer in at a time and makes the others poll with growing sleeps (its
        # busy handler, up to 100 ms): with many waiting threads and processes the file sits idle
        # between commits and commits per second collapse. Writers therefore queue instead: the
        # threads of a process on a lock (bounded wait -> StoreBusy -> 503), the processes on an
        # flock of a file beside the database (the kernel wakes the next one at once; released
        # when a process dies). Re-entrant: a nested write in one thread behaves as before.
        if self._writer is None:
            yield
            return
        if not self._writer.acquire(timeout=WRITER_WAIT_S):
            raise StoreBusy(f"the database stayed busy for {WRITER_WAIT_S:g} s")
        outer = self._writer_depth == 0
        try:
            if outer and self._writer_file is not None:
                fcntl.flock(self._writer_file, fcntl.LOCK_EX)
            self._writer_depth += 1
            try:
                yield
            finally:
                self._writer_depth -= 1
                if outer and self._writer_file is not None:
                    fcntl.flock(self._writer_file, fcntl.LOCK_UN)
        finally:
            self._writer.release()

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only transaction (one consistent snapshot; on SQLite it takes no write lock)."""
        with self._read_sessions() as session, session.begin():
            yield session

    @contextmanager
    def locked(self, study_id: int) -> Iterator[Session]:
        """A transaction that holds the study's write lock, for read-then-write work like scheduling.

        SQLite takes the whole-file lock at BEGIN IMMEDIATE (see engine.py); PostgreSQL takes a
        transaction-scoped advisory lock keyed by the study, so other studies are not blocked.
        On PostgreSQL the threads of one process first queue on a lock of their own, so that
        waiting for the study costs no pooled connection (other pages keep theirs).
        """
        if not self.is_postgres:
            with self.session() as session:
                yield session
            return
        turn = self._study_turns.setdefault(study_id, threading.RLock())
        if not turn.acquire(timeout=WRITER_WAIT_S):
            raise StoreBusy(f"the study stayed locked for {WRITER_WAIT_S:g} s")
        try:
            with self.session() as session:
                session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 7_000_000 + study_id})
                yield session
        finally:
            turn.release()

    # -- studies and bots -------------------------------------------------------------------
    def ensure_study(
        self, name: str, method: str, config: dict[str, Any] | None = None, uid: str | None = None
    ) -> Study:
        """The study row of that name (made when new). With `uid` (the folder's stable id, kept in the
        row's config as ``study_uid``) the row is found by it first, so a changed `name:` renames the
        study instead of starting an empty one."""
        if uid is not None:
            config = {**(config or {}), "study_uid": uid}
            with self.session() as s:
                by_uid = next(
                    (st for st in s.scalars(select(Study)) if (st.config or {}).get("study_uid") == uid), None
                )
                if by_uid is not None and by_uid.name != name:
                    if s.scalar(select(Study).where(Study.name == name)) is not None:
                        raise StoreError(
                            f"cannot rename study '{by_uid.name}' to '{name}': this database "
                            f"already holds another study of that name"
                        )
                    s.add(EventRow(study_id=by_uid.id, kind="study-renamed", payload={"from": by_uid.name, "to": name}))
                    by_uid.name = name
                elif by_uid is None:
                    other = s.scalar(select(Study).where(Study.name == name))
                    other_uid = (other.config or {}).get("study_uid") if other is not None else None
                    if other_uid and other_uid != uid:
                        raise StoreError(
                            f"this database already holds a study named '{name}' from another "
                            f"study folder; give this one another name"
                        )
        with self.session() as s:
            study = s.scalar(select(Study).where(Study.name == name))
            if study is None:
                study = Study(name=name, method=method, config=config or {})
                s.add(study)
            else:
                if study.method != method:
                    raise StoreError(f"study '{name}' already holds a {study.method} study, not {method}")
                if config is not None:
                    study.config = config
            s.flush()
            return study

    def get_study(self, name: str | None = None) -> Study:
        with self.read() as s:
            if name is None:
                studies = s.scalars(select(Study)).all()
                if len(studies) != 1:
                    raise StoreError(f"the database holds {len(studies)} studies; name one")
                return studies[0]
            study = s.scalar(select(Study).where(Study.name == name))
            if study is None:
                raise StoreError(f"no study named '{name}' in this database")
            return study

    def list_studies(self) -> list[Study]:
        with self.read() as s:
            return list(s.scalars(select(Study).order_by(Study.id)))

    def upsert_bot(self, study_id: int, name: str, type: str, config: dict[str, Any]) -> None:
        with self.session() as s:
            row = s.scalar(select(BotRow).where(BotRow.study_id == study_id, BotRow.name == name))
            if row is None:
                s.add(BotRow(study_id=study_id, name=name, type=type, config=config))
            else:
                row.type, row.config = type, config

    # -- conversations ------------------------------------------------------------------------
    def conversation_status(self, study_id: int) -> dict[str, str | None]:
        """external id -> error (None when the conversation is complete)."""
        with self.read() as s:
            rows = s.execute(
                select(ConversationRow.external_id, ConversationRow.error).where(ConversationRow.study_id == study_id)
            )
            return {ext: err for ext, err in rows}

    def save_conversation(self, study_id: int, conversation: Conversation) -> int:
        """Insert or replace one conversation with its turns; returns its row id."""
        self._conversations.pop((study_id, conversation.id), None)
        with self.session() as s:
            old = s.scalar(
                select(ConversationRow).where(
                    ConversationRow.study_id == study_id, ConversationRow.external_id == conversation.id
                )
            )
            if old is not None:
                s.query(TurnRow).filter(TurnRow.conversation_id == old.id).delete()
                old.bots, old.meta, old.error, old.source = (
                    conversation.bots,
                    conversation.meta,
                    conversation.error,
                    conversation.source,
                )
                row = old
            else:
                row = _conversation_row(study_id, conversation)
                s.add(row)
            s.flush()
            s.add_all(_turn_rows(row.id, conversation.turns))
            return row.id

    def get_conversation(self, study_id: int, external_id: str) -> Conversation:
        """One conversation with its turns. Finished, non-live conversations (what units show) are
        kept per process once read: every task page and answer reads them, and they do not change
        while a study is served (units point at them). Live chats are always read afresh."""
        key = (study_id, external_id)
        cached = self._conversations.get(key)
        if cached is not None:
            return replace(cached, turns=list(cached.turns), bots=list(cached.bots))
        with self.read() as s:
            row = s.scalar(
                select(ConversationRow).where(
                    ConversationRow.study_id == study_id, ConversationRow.external_id == external_id
                )
            )
            if row is None:
                raise StoreError(f"no conversation '{external_id}'")
            turns = s.scalars(select(TurnRow).where(TurnRow.conversation_id == row.id).order_by(TurnRow.idx))
            conversation = _conversation_record(row, list(turns))
        if conversation.source != "live" and conversation.error is None:
            if len(self._conversations) >= CONVERSATION_CACHE_SIZE:
                self._conversations.pop(next(iter(self._conversations)))  # the oldest entry
            self._conversations[key] = conversation
            return replace(conversation, turns=list(conversation.turns), bots=list(conversation.bots))
        return conversation

    def append_turn(self, study_id: int, external_id: str, turn: Turn, at: int | None = None) -> int | None:
        """Add a turn at the end of a (live) conversation; returns its index. With `at`, only when
        the conversation has exactly `at` turns (else None, nothing added): two requests that both
        decide to add the same turn add it once."""
        self._conversations.pop((study_id, external_id), None)
        with self.locked(study_id) as s:
            conv_id = s.scalar(
                select(ConversationRow.id).where(
                    ConversationRow.study_id == study_id, ConversationRow.external_id == external_id
                )
            )
            if conv_id is None:
                raise StoreError(f"no conversation '{external_id}'")
            idx = s.scalar(
                select(func.coalesce(func.max(TurnRow.idx) + 1, 0)).where(TurnRow.conversation_id == conv_id)
            )
            if at is not None and idx != at:
                return None
            s.add(_turn_rows(conv_id, [turn], start=idx)[0])
            return int(idx)

    # -- values shared by every process and host -------------------------------------------------
    def study_secret(self, study_id: int, name: str, make: Callable[[], str]) -> str:
        """The study's secret `name`; the first process to ask stores `make()`, every later one
        (any worker, any host) reads that same value."""
        for _attempt in range(2):
            with self.read() as s:
                row = s.get(SecretRow, (study_id, name))
                if row is not None:
                    return row.value
            try:
                with self.session() as s:
                    if s.get(SecretRow, (study_id, name)) is None:
                        s.add(SecretRow(study_id=study_id, name=name, value=make()))
            except IntegrityError:
                continue  # another process stored it first: read theirs
        with self.read() as s:
            row = s.get(SecretRow, (study_id, name))
            if row is None:
                raise StoreError(f"could not store the study's {name}")
            return row.value

    def take_token(
        self, key: str, rate: float, burst: float, cost: float = 1.0, now: float | None = None
    ) -> tuple[bool, float]:
        """Token bucket `key` in the database (so every worker and host counts the same bucket):
        (allowed, seconds until one more token)."""
        now = time.time() if now is None else now
        for _attempt in range(3):
            try:
                with self.session() as s:
                    q = select(RateBucketRow).where(RateBucketRow.key == key)
                    if self.is_postgres:
                        q = q.with_for_update()
                    row = s.scalar(q)
                    if row is None:
                        row = RateBucketRow(key=key, tokens=float(burst), updated=now)
                        s.add(row)
                    tokens = min(float(burst), row.tokens + max(0.0, now - row.updated) * rate)
                    allowed = tokens >= cost
                    if allowed:
                        tokens -= cost
                    row.tokens, row.updated = tokens, now
                return allowed, (0.0 if allowed else max(0.0, (cost - tokens) / rate))
            except IntegrityError:
                continue  # two first requests of one key raced to insert it
        raise StoreBusy(f"rate limit bucket {key!r} is contended")

    # -- annotators, judgments, events ------------------------------------------------------------
    def get_or_create_annotator(
        self, study_id: int, external_id: str, platform: str = "link", meta: dict | None = None
    ) -> AnnotatorRow:
        for _attempt in range(2):  # a concurrent insert of the same id loses the race once, then finds it
            try:
                with self.session() as s:
                    row = s.scalar(
                        select(AnnotatorRow).where(
                            AnnotatorRow.study_id == study_id, AnnotatorRow.external_id == external_id
                        )
                    )
                    if row is None:
                        row = AnnotatorRow(
                            study_id=study_id, external_id=external_id, platform=platform, meta=meta or {}
                        )
                        s.add(row)
                        s.flush()
                    return row
            except IntegrityError:
                continue
        raise StoreError(f"could not register annotator '{external_id}'")

    def set_annotator_status(self, annotator_id: int, status: str, reasons: list[str] | None = None, **qc: Any) -> None:
        """Flag or block an annotator; their judgments stay. `reasons` and `qc` are kept in annotators.qc."""
        if status not in {"active", "flagged", "blocked"}:
            raise StoreError(f"unknown annotator status {status!r}")
        with self.session() as s:
            row = s.get(AnnotatorRow, annotator_id)
            if row is None:
                raise StoreError(f"no annotator #{annotator_id}")
            row.status = status
            row.qc = {**(row.qc or {}), **qc, "reasons": list(reasons or [])}
            s.add(
                EventRow(
                    study_id=row.study_id,
                    kind=f"annotator-{status}",
                    annotator_id=row.id,
                    payload={"reasons": list(reasons or [])},
                )
            )

    def add_judgment(
        self,
        study_id: int,
        annotator_id: int,
        question: str,
        value: Any,
        *,
        unit_id: int | None = None,
        assignment_id: int | None = None,
        conversation_id: int | None = None,
        justification: str | None = None,
        elapsed_s: float | None = None,
        shown_order: list | None = None,
        client_request_id: str | None = None,
        meta: dict | None = None,
        session: Session | None = None,
    ) -> tuple[int, bool]:
        """Store one judgment; returns (row id, created). A repeated client_request_id returns the first."""

        def existing(s: Session) -> int | None:
            if client_request_id is None:
                return None
            return s.scalar(
                select(JudgmentRow.id).where(
                    JudgmentRow.annotator_id == annotator_id, JudgmentRow.client_request_id == client_request_id
                )
            )

        row = JudgmentRow(
            study_id=study_id,
            annotator_id=annotator_id,
            question=question,
            value=value,
            unit_id=unit_id,
            assignment_id=assignment_id,
            conversation_id=conversation_id,
            justification=justification,
            elapsed_s=elapsed_s,
            shown_order=shown_order,
            client_request_id=client_request_id,
            meta=meta or {},
        )
        if session is not None:
            found = existing(session)
            if found is not None:
                return found, False
            session.add(row)
            session.flush()
            return row.id, True
        try:
            with self.session() as s:
                found = existing(s)
                if found is not None:
                    return found, False
                s.add(row)
                s.flush()
                return row.id, True
        except IntegrityError:
            # Two identical submissions raced; the other one was stored.
            with self.session() as s:
                found = existing(s)
            if found is None:
                raise
            return found, False

    def log_event(self, study_id: int, kind: str, payload: dict | None = None, annotator_id: int | None = None) -> None:
        with self.session() as s:
            s.add(EventRow(study_id=study_id, kind=kind, annotator_id=annotator_id, payload=payload or {}))

    def counts(self, study_id: int) -> dict[str, int]:
        with self.read() as s:

            def n(model) -> int:
                return int(s.scalar(select(func.count()).select_from(model).where(model.study_id == study_id)))

            return {
                "conversations": n(ConversationRow),
                "annotators": n(AnnotatorRow),
                "units": n(UnitRow),
                "judgments": n(JudgmentRow),
            }

    # -- whole data sets ---------------------------------------------------------------------------
    def save_dataset(self, study_id: int, dataset: Dataset, source: dict | None = None) -> dict[str, int]:
        """Store an imported or generated data set in one transaction: all of it, or nothing.

        Records whose external id already exists in the study are kept as they are (an import can
        be re-run to add what is missing); judgments are always added. `source` (an import's file
        name, format and content hash) is recorded in the same transaction, so `imported_sources`
        knows exactly what is in the study.
        """
        with self.session() as s:
            if source is not None:
                s.add(EventRow(study_id=study_id, kind=IMPORT_EVENT, payload=source))
            conv_ids = dict(
                s.execute(
                    select(ConversationRow.external_id, ConversationRow.id).where(ConversationRow.study_id == study_id)
                ).all()
            )
            new_convs = [c for c in dataset.conversations if c.id not in conv_ids]
            rows = [_conversation_row(study_id, c) for c in new_convs]
            s.add_all(rows)
            s.flush()
            for conv, row in zip(new_convs, rows):
                conv_ids[conv.id] = row.id
                s.add_all(_turn_rows(row.id, conv.turns))

            ann_ids = dict(
                s.execute(
                    select(AnnotatorRow.external_id, AnnotatorRow.id).where(AnnotatorRow.study_id == study_id)
                ).all()
            )
            new_anns = [a for a in dataset.annotators if a.id not in ann_ids]
            ann_rows = [
                AnnotatorRow(
                    study_id=study_id,
                    external_id=a.id,
                    platform=a.platform,
                    meta=a.meta,
                    status=a.meta.get("status", "active"),
                    qc=a.meta.get("qc", {}),
                )
                for a in new_anns
            ]
            s.add_all(ann_rows)

            unit_ids = dict(
                s.execute(select(UnitRow.external_id, UnitRow.id).where(UnitRow.study_id == study_id)).all()
            )
            new_units = [u for u in dataset.units if u.id not in unit_ids]
            unit_rows = [
                UnitRow(
                    study_id=study_id,
                    external_id=u.id,
                    kind=u.kind,
                    conversation_ids=u.conversation_ids,
                    payload=u.payload,
                )
                for u in new_units
            ]
            s.add_all(unit_rows)
            s.flush()
            ann_ids.update({a.id: r.id for a, r in zip(new_anns, ann_rows)})
            unit_ids.update({u.id: r.id for u, r in zip(new_units, unit_rows)})

            judgment_rows = []
            for j in dataset.judgments:
                if j.annotator_id not in ann_ids:
                    raise StoreError(f"judgment by unknown annotator '{j.annotator_id}'")
                row = JudgmentRow(
                    study_id=study_id,
                    annotator_id=ann_ids[j.annotator_id],
                    question=j.question,
                    value=j.value,
                    unit_id=unit_ids.get(j.unit_id) if j.unit_id else None,
                    conversation_id=conv_ids.get(j.conversation_id) if j.conversation_id else None,
                    justification=j.justification,
                    elapsed_s=j.elapsed_s,
                    shown_order=j.shown_order,
                    meta=j.meta,
                )
                if j.created_at is not None:
                    row.created_at = j.created_at
                judgment_rows.append(row)
            s.add_all(judgment_rows)
            return {
                "conversations": len(new_convs),
                "annotators": len(new_anns),
                "units": len(new_units),
                "judgments": len(judgment_rows),
            }

    def imported_sources(self, study_id: int) -> list[dict]:
        """The sources imported into a study (as given to save_dataset), oldest first."""
        with self.read() as s:
            rows = (
                s.execute(
                    select(EventRow.payload)
                    .where(EventRow.study_id == study_id, EventRow.kind == IMPORT_EVENT)
                    .order_by(EventRow.id)
                )
                .scalars()
                .all()
            )
        return [dict(r) for r in rows]

    def load_dataset(self, study_id: int) -> Dataset:
        """The whole study as records, the input of analysis and export."""
        with self.read() as s:
            study = s.get(Study, study_id)
            if study is None:
                raise StoreError(f"no study #{study_id}")
            conv_rows = list(
                s.scalars(
                    select(ConversationRow).where(ConversationRow.study_id == study_id).order_by(ConversationRow.id)
                )
            )
            turns_by_conv: dict[int, list[TurnRow]] = {}
            turn_query = (
                select(TurnRow)
                .join(ConversationRow, TurnRow.conversation_id == ConversationRow.id)
                .where(ConversationRow.study_id == study_id)
                .order_by(TurnRow.conversation_id, TurnRow.idx)
            )
            for t in s.scalars(turn_query):
                turns_by_conv.setdefault(t.conversation_id, []).append(t)
            conv_ext = {r.id: r.external_id for r in conv_rows}
            ann_rows = list(
                s.scalars(select(AnnotatorRow).where(AnnotatorRow.study_id == study_id).order_by(AnnotatorRow.id))
            )
            ann_ext = {r.id: r.external_id for r in ann_rows}
            unit_rows = list(s.scalars(select(UnitRow).where(UnitRow.study_id == study_id).order_by(UnitRow.id)))
            unit_ext = {r.id: r.external_id for r in unit_rows}
            from .work import EXCLUDED_ASSIGNMENT_STATUSES  # judgments of unfinished work: kept, not counted

            excluded = {
                aid: EXCLUDED_ASSIGNMENT_STATUSES[status]
                for aid, status in s.execute(
                    select(AssignmentRow.id, AssignmentRow.status).where(
                        AssignmentRow.study_id == study_id,
                        AssignmentRow.status.in_(tuple(EXCLUDED_ASSIGNMENT_STATUSES)),
                    )
                )
            }
            judgments = [
                Judgment(
                    annotator_id=ann_ext[j.annotator_id],
                    unit_id=unit_ext.get(j.unit_id),
                    question=j.question,
                    value=j.value,
                    conversation_id=conv_ext.get(j.conversation_id),
                    justification=j.justification,
                    elapsed_s=j.elapsed_s,
                    created_at=j.created_at,
                    shown_order=j.shown_order,
                    meta={
                        **(j.meta or {}),
                        "judgment_id": j.id,
                        "assignment_id": j.assignment_id,
                        **({"excluded": excluded[j.assignment_id]} if j.assignment_id in excluded else {}),
                    },
                )
                for j in s.scalars(select(JudgmentRow).where(JudgmentRow.study_id == study_id).order_by(JudgmentRow.id))
            ]
            return Dataset(
                method=study.method,
                conversations=[_conversation_record(r, turns_by_conv.get(r.id, [])) for r in conv_rows],
                annotators=[
                    Annotator(
                        id=a.external_id,
                        platform=a.platform,
                        meta={**(a.meta or {}), "status": a.status, "qc": a.qc or {}},
                    )
                    for a in ann_rows
                ],
                units=[
                    Unit(
                        id=u.external_id,
                        kind=u.kind,
                        conversation_ids=list(u.conversation_ids or []),
                        payload=u.payload or {},
                    )
                    for u in unit_rows
                ],
                judgments=judgments,
                meta={"study": study.name, "config": study.config, **_judge_guided(s, study_id)},
            )


def _judge_guided(s, study_id: int) -> dict[str, Any]:
    """{"judge_guided": the pools the scheduler froze (guided.py)} when the study has them, else {}."""
    from .work import GUIDED_POOLS_EVENT

    row = s.scalars(
        select(EventRow).where(EventRow.study_id == study_id, EventRow.kind == GUIDED_POOLS_EVENT).order_by(EventRow.id)
    ).first()
    return {"judge_guided": dict(row.payload)} if row is not None else {}


def _conversation_row(study_id: int, c: Conversation) -> ConversationRow:
    return ConversationRow(
        study_id=study_id, external_id=c.id, source=c.source, bots=list(c.bots), meta=c.meta, error=c.error
    )


def _turn_rows(conversation_id: int, turns: list[Turn], start: int = 0) -> list[TurnRow]:
    return [
        TurnRow(
            conversation_id=conversation_id,
            idx=start + i,
            speaker=t.speaker,
            text=t.text,
            bot=t.bot,
            is_seed=t.is_seed,
            candidates=t.candidates,
            chosen=t.chosen,
            meta=t.meta,
        )
        for i, t in enumerate(turns)
    ]


def _conversation_record(row: ConversationRow, turns: list[TurnRow]) -> Conversation:
    return Conversation(
        id=row.external_id,
        bots=list(row.bots or []),
        source=row.source,
        meta=row.meta or {},
        error=row.error,
        turns=[
            Turn(
                speaker=t.speaker,
                text=t.text,
                bot=t.bot,
                is_seed=t.is_seed,
                candidates=t.candidates,
                chosen=t.chosen,
                meta=t.meta or {},
            )
            for t in turns
        ],
    )
