"""Every read and write of dialeval's data goes through Store; nothing else writes SQL."""

from __future__ import annotations

import fcntl
import gc
import itertools
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import JSON, Connection, Engine, Table, bindparam, func, insert, select, text, update
from sqlalchemy import types as sa_types
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from .. import __version__, clock, json_text
from ..errors import StoreBusy, StoreError
from ..gc_pause import cyclic_gc_paused
from ..records import (
    Annotator,
    Conversation,
    Dataset,
    Judgment,
    RecordBatch,
    Turn,
    Unit,
    is_judge_annotator,
    plain_turns,
)
from . import migrations, work
from .engine import READ_ONLY, check_connection, database_url, make_engine
from .lock_time import LOCK_TIME
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
_JUDGMENT_BY_REQUEST = select(JudgmentRow.__table__.c.id).where(
    JudgmentRow.__table__.c.annotator_id == bindparam("annotator_id"),
    JudgmentRow.__table__.c.client_request_id == bindparam("client_request_id"),
)
CONVERSATION_CACHE_SIZE = 5000
CONVERSATION_CHUNK = 500  # new conversations stored at once by a streamed import (_stream_items)


def _stored_conversation(session: Any, study_id: int, external_id: str) -> ConversationRow:
    """A study's conversation by its external id; StoreError when there is none."""
    row = session.scalar(
        select(ConversationRow).where(ConversationRow.study_id == study_id, ConversationRow.external_id == external_id)
    )
    if row is None:
        raise StoreError(f"no conversation '{external_id}'")
    return row


# built once (a statement made per answer cost as much again in building and in its cache key)
_INSERT_JUDGMENT = insert(cast(Table, JudgmentRow.__table__))


def _insert_once(table: Table, keys: str, returned: tuple[str, ...] = ("id",)) -> Any:
    """INSERT ... ON CONFLICT (keys) DO NOTHING RETURNING `returned` (SQLite and PostgreSQL both have
    it): a row that is there already inserts nothing and returns no row, so a new row is one
    statement, not a look-up and then the insert. `keys`: the table's UniqueConstraint.

    Written as text() over the table's own columns and types, not with the dialects' insert():
    SQLAlchemy 2.0's dialect Insert has no cache key (`inherit_cache = False`), so that statement was
    compiled again on every answer, about 0.5 ms of a PostgreSQL ACUTE judgment's 10 ms of server
    CPU. A text() clause is compiled once and cached; the result columns are typed, so JSON ones
    come back decoded. The columns' Python-side defaults do not apply to text(): the caller passes
    every column, created_at included."""
    columns = [c for c in table.c if not c.primary_key]
    names = ", ".join(c.name for c in columns)
    params = ", ".join(f":{c.name}" for c in columns)
    sql = (
        f"INSERT INTO {table.name} ({names}) VALUES ({params}) "
        f"ON CONFLICT ({keys}) DO NOTHING RETURNING {', '.join(returned)}"
    )
    return (
        text(sql)
        .bindparams(*(bindparam(c.name, type_=c.type) for c in columns))
        .columns(*(table.c[name] for name in returned))
    )


# a repeated request id of an annotator (a double submit) inserts no second judgment
_INSERT_JUDGMENT_ONCE = _insert_once(cast(Table, JudgmentRow.__table__), "annotator_id, client_request_id")
_ANNOTATOR_TABLE = cast(Table, AnnotatorRow.__table__)
# the columns work.annotator_from_columns reads, in its order
_ANNOTATOR_INFO_COLUMNS = ("id", "external_id", "platform", "status", "qc", "meta", "study_id")
# a session's first write (get_or_create_annotator), returning the AnnotatorInfo columns
_INSERT_ANNOTATOR_ONCE = _insert_once(_ANNOTATOR_TABLE, "study_id, external_id", _ANNOTATOR_INFO_COLUMNS)
# a live chat's first page (add_conversation); another request's chat of the same id is kept
_INSERT_CONVERSATION_ONCE = _insert_once(cast(Table, ConversationRow.__table__), "study_id, external_id")
_ANNOTATOR_BY_EXTERNAL_ID = select(*(_ANNOTATOR_TABLE.c[name] for name in _ANNOTATOR_INFO_COLUMNS)).where(
    _ANNOTATOR_TABLE.c.study_id == bindparam("study_id"), _ANNOTATOR_TABLE.c.external_id == bindparam("external_id")
)
_STUDY_WRITE_LOCK = text("SELECT pg_advisory_xact_lock(:k)")  # Store.locked on PostgreSQL


class _SharedRead:
    """The read connection of Store.shared_reads: opened at the first read, closed at a write or at
    the block's end (a read transaction on SQLite; on PostgreSQL a connection in autocommit, each
    read its own snapshot)."""

    def __init__(self) -> None:
        self._conn: Connection | None = None
        # what a read of this block learnt besides its own answer, for a later read of the block
        # (Store.note_read): dropped with the connection, so never seen after a write
        self.noted: dict[Hashable, Any] = {}

    def connection(self, engine: Engine) -> Connection:
        if self._conn is None:
            conn = engine.connect()
            conn.begin()
            self._conn = conn
        return self._conn

    def close(self) -> None:
        self.noted.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()  # rolls the read-only transaction back: nothing was written in it


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
        self._read_engine = self.engine.execution_options(**{READ_ONLY: True})
        # read_connection's short reads on PostgreSQL run without a transaction (autocommit): at its
        # READ COMMITTED level each statement sees its own snapshot inside a transaction too, so the
        # BEGIN and ROLLBACK were two round trips that bought nothing (four per ACUTE answer and task
        # page). Store.read keeps its transaction: a report streams through a server-side cursor,
        # which lives only in one. SQLite keeps it everywhere: there it is the block's one snapshot.
        self._short_read_engine = (
            self.engine.execution_options(**{READ_ONLY: True}, isolation_level="AUTOCOMMIT")
            if self.is_postgres
            else self._read_engine
        )
        self._autocommit_engine = (
            self.engine.execution_options(isolation_level="AUTOCOMMIT") if self.is_postgres else None
        )
        self._shared = threading.local()  # .read: the thread's _SharedRead within shared_reads()
        self._read_sessions = sessionmaker(self._read_engine, expire_on_commit=False)

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
        self._end_shared_read()  # a read after this write must see it (see shared_reads)
        with self._writer_turn(), self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def single_write(self) -> Iterator[Connection]:
        """A connection for one write statement that stands alone (e.g. a merge of an annotator's
        meta done by the statement itself): on PostgreSQL in autocommit, the statement its own
        transaction (the BEGIN and COMMIT were two of an annotator's session's round trips at
        each consent, instructions and done page); on SQLite a write transaction (its writer queue)."""
        self._end_shared_read()
        if self._autocommit_engine is None:
            with self.session() as session:
                yield session.connection()
            return
        with self._autocommit_engine.connect() as conn:
            yield conn

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
        asked_at = time.monotonic()
        if not self._writer.acquire(timeout=WRITER_WAIT_S):
            raise StoreBusy(f"the database stayed busy for {WRITER_WAIT_S:g} s")
        outer = self._writer_depth == 0
        try:
            if outer and self._writer_file is not None:
                fcntl.flock(self._writer_file, fcntl.LOCK_EX)
            self._writer_depth += 1
            try:
                with LOCK_TIME.turn(asked_at) if outer else nullcontext():
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
    def read_connection(self) -> Iterator[Connection]:
        """Store.read for short Core reads: a plain connection without an ORM Session (whose set-up
        and tear-down cost about as much again as a short query: every page's session lookup and
        task read go through here), in a read-only transaction on SQLite and in autocommit on
        PostgreSQL (see __init__). Within shared_reads, the thread's reads share one connection."""
        shared: _SharedRead | None = getattr(self._shared, "read", None)
        if shared is None:
            with self._short_read_engine.connect() as conn, conn.begin():
                yield conn
            return
        conn = shared.connection(self._short_read_engine)
        try:
            yield conn
        except BaseException:
            shared.close()  # a failed statement ends the transaction (PostgreSQL refuses the next one)
            raise

    @contextmanager
    def shared_reads(self) -> Iterator[None]:
        """The reads (read_connection) this thread makes in the block share one read transaction,
        opened at the first read: a task page made 3 (session, assignment, progress), each a pooled
        connection, a BEGIN and a COMMIT (about 0.15 ms each here). A write (session, locked) ends it
        first, so a read after the write opens another and sees what was written. Re-entrant."""
        if getattr(self._shared, "read", None) is not None:
            yield
            return
        shared = self._shared.read = _SharedRead()
        try:
            yield
        finally:
            self._shared.read = None
            shared.close()

    def note_read(self, key: Hashable, value: Any) -> None:
        """Within shared_reads: keep a value one read learnt on the way (e.g. the progress count the
        task page's session read brings) for a later read of the same block (noted_read). Outside
        it, nothing is kept."""
        shared: _SharedRead | None = getattr(self._shared, "read", None)
        if shared is not None:
            shared.noted[key] = value

    def noted_read(self, key: Hashable) -> Any:
        """The value note_read kept in this thread's shared reads, or None (none kept, no shared
        reads, or a write since)."""
        shared: _SharedRead | None = getattr(self._shared, "read", None)
        return shared.noted.get(key) if shared is not None else None

    def _end_shared_read(self) -> None:
        shared: _SharedRead | None = getattr(self._shared, "read", None)
        if shared is not None:
            shared.close()

    @contextmanager
    def locked(self, study_id: int) -> Iterator[Session]:
        """A transaction that holds the study's write lock, for read-then-write work like scheduling.

        SQLite takes the whole-file lock at BEGIN IMMEDIATE (see engine.py); PostgreSQL takes a
        transaction-scoped advisory lock keyed by the study, so other studies are not blocked.
        On PostgreSQL the threads of one process first queue on a lock of their own, so that
        waiting for the study costs no pooled connection (other pages keep theirs).
        """
        self._end_shared_read()  # before the queue: a thread waiting for the study holds no connection
        if not self.is_postgres:
            with self.session() as session:
                yield session
            return
        turn = self._study_turns.setdefault(study_id, threading.RLock())
        asked_at = time.monotonic()
        if not turn.acquire(timeout=WRITER_WAIT_S):
            raise StoreBusy(f"the study stayed locked for {WRITER_WAIT_S:g} s")
        try:
            with ExitStack() as held, self.session() as session:
                # on the session's connection, a statement built once: Session.execute's ORM path
                # cost about 3% of a PostgreSQL ACUTE answer's server CPU (py-spy) for this one line
                session.connection().execute(_STUDY_WRITE_LOCK, {"k": 7_000_000 + study_id})
                held.enter_context(LOCK_TIME.turn(asked_at))  # ends after the commit that releases it
                yield session
        finally:
            turn.release()

    @contextmanager
    def preparing(self, study_id: int) -> Iterator[None]:
        """Held while a study's units are built (Protocol.prepare), across processes and hosts.

        Two hosts started together on a fresh database both found no units and both inserted them;
        one then failed on the unique key (units_study_id_external_id_key). The build is many
        transactions, so the study's write lock cannot be held through it: PostgreSQL takes a
        session-level advisory lock on a connection of its own, SQLite an flock of a file beside the
        database. The second process waits, then finds the units built and leaves them.
        """
        if self.is_postgres:
            with self.engine.connect() as conn:
                key = {"k": 8_000_000 + study_id}
                conn.execute(text("SELECT pg_advisory_lock(:k)"), key)
                conn.commit()
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), key)
                    conn.commit()
            return
        db_file = self.engine.url.database
        if not db_file or db_file == ":memory:":
            yield
            return
        with open(f"{db_file}-prepare.lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the process dies
            yield

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

    def add_conversation(self, study_id: int, conversation: Conversation) -> bool:
        """Store a new conversation with its turns; False (nothing written) when the study already has
        one with this id, e.g. stored by a concurrent request. One INSERT ... ON CONFLICT DO NOTHING
        (a live chat's first page: save_conversation looks up the id first)."""
        values = {
            "study_id": study_id,
            "external_id": conversation.id,
            "source": conversation.source,
            "bots": list(conversation.bots),
            "meta": conversation.meta,
            "error": conversation.error,
            "created_at": clock.now(),
        }
        self._conversations.pop((study_id, conversation.id), None)
        with self.session() as s:
            row_id = s.connection().execute(_INSERT_CONVERSATION_ONCE, values).scalar()
            if row_id is None:
                return False
            s.add_all(_turn_rows(row_id, conversation.turns))
        return True

    def set_conversation_meta(
        self, study_id: int, external_id: str, meta: dict[str, Any], also: Callable[[Session], None] | None = None
    ) -> None:
        """Replace a conversation's meta, its turns untouched (save_conversation rewrites every turn);
        `also(session)` runs in the same transaction."""
        self._conversations.pop((study_id, external_id), None)
        with self.session() as s:
            row = _stored_conversation(s, study_id, external_id)
            row.meta = dict(meta)
            if also is not None:
                also(s)

    def get_conversation(self, study_id: int, external_id: str) -> Conversation:
        """One conversation with its turns. Finished, non-live conversations (what units show) are
        kept per process once read: every task page and answer reads them, and they do not change
        while a study is served (units point at them). Live chats are always read afresh."""
        key = (study_id, external_id)
        cached = self._conversations.get(key)
        if cached is not None:
            return replace(cached, turns=list(cached.turns), bots=list(cached.bots))
        with self.read() as s:
            row = _stored_conversation(s, study_id, external_id)
            turns = s.scalars(select(TurnRow).where(TurnRow.conversation_id == row.id).order_by(TurnRow.idx))
            conversation = _conversation_record(row, list(turns))
        if conversation.source != "live" and conversation.error is None:
            if len(self._conversations) >= CONVERSATION_CACHE_SIZE:
                self._conversations.pop(next(iter(self._conversations)))  # the oldest entry
            self._conversations[key] = conversation
            return replace(conversation, turns=list(conversation.turns), bots=list(conversation.bots))
        return conversation

    def append_turn(
        self,
        study_id: int,
        external_id: str,
        turn: Turn,
        at: int | None = None,
        also: Callable[[Session], None] | None = None,
        create: Conversation | None = None,
    ) -> int | None:
        """Add a turn at the end of a (live) conversation; returns its index. With `at`, only when
        the conversation has exactly `at` turns (else None, nothing added): two requests that both
        decide to add the same turn add it once. `also(session)` runs in the same transaction
        whether or not the turn was added (the judgment and assignment state that go with it: one
        commit instead of several, and no crash window between them). `create`: the conversation,
        stored first (with its turns) when it is not yet, in the same transaction."""
        self._conversations.pop((study_id, external_id), None)
        # Appends to one conversation queue on its row (PostgreSQL: FOR UPDATE; SQLite has one writer
        # anyway), not on the whole study: other annotators' turns, votes and assignments go on.
        # Storing a new conversation takes the study's lock (there is no row to lock yet).
        row_lock = self.is_postgres and create is None
        with self.session() if row_lock else self.locked(study_id) as s:
            if row_lock:
                s.execute(
                    select(ConversationRow.id)
                    .where(ConversationRow.study_id == study_id, ConversationRow.external_id == external_id)
                    .with_for_update()
                )
            if create is not None and conversation_row_id_in(s, study_id, external_id) is None:
                row = _conversation_row(study_id, create)
                s.add(row)
                s.flush()
                s.add_all(_turn_rows(row.id, create.turns))
                s.flush()
            idx = self._append_turn_in(s, study_id, external_id, turn, at)
            if also is not None:
                also(s)
            return idx

    @staticmethod
    def _append_turn_in(s: Session, study_id: int, external_id: str, turn: Turn, at: int | None) -> int | None:
        conv_id = conversation_row_id_in(s, study_id, external_id)
        if conv_id is None:
            raise StoreError(f"no conversation '{external_id}'")
        idx = s.scalar(select(func.coalesce(func.max(TurnRow.idx) + 1, 0)).where(TurnRow.conversation_id == conv_id))
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
        now = clock.timestamp() if now is None else now
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
    ) -> work.AnnotatorInfo:
        """The study's annotator with this external id, registered now (with `platform` and `meta`)
        when there is none. A new one is one statement, INSERT ... ON CONFLICT DO NOTHING RETURNING
        (it was a look-up, then an ORM insert: every session's first write); an existing one, or
        one a concurrent request registered first, is then read."""
        values = {
            "study_id": study_id,
            "external_id": external_id,
            "platform": platform,
            "status": "active",
            "qc": {},
            "meta": meta or {},
            "created_at": clock.now(),
        }
        with self.session() as s:
            conn = s.connection()
            row = conn.execute(_INSERT_ANNOTATOR_ONCE, values).first()
            if row is None:  # registered before (or by a concurrent request, now committed)
                row = conn.execute(
                    _ANNOTATOR_BY_EXTERNAL_ID, {"study_id": study_id, "external_id": external_id}
                ).first()
        if row is None:
            raise StoreError(f"could not register annotator '{external_id}'")
        return work.annotator_from_columns(row)

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
        submit: bool = False,
        state: dict | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[int, bool]:
        """Store one judgment; returns (row id, created). A repeated client_request_id returns the first.

        Plain Core statements on the transaction's connection (no ORM row to build, track and flush:
        every answer of every method comes here). Its assignment is updated in the same
        transaction: with `submit`, closed as submitted (work.submit_assignment: a repeated answer
        closes nothing again; `state` set when given); else with a `state`, its progress stored
        (work.update_state; `expires_at` while it is open). On PostgreSQL, for an answer with a
        request id, in the judgment's own statement (work.judged_and_updated)."""
        values = {
            "study_id": study_id,
            "annotator_id": annotator_id,
            "question": question,
            "value": value,
            "unit_id": unit_id,
            "assignment_id": assignment_id,
            "conversation_id": conversation_id,
            "justification": justification,
            "elapsed_s": elapsed_s,
            "shown_order": shown_order,
            "client_request_id": client_request_id,
            "meta": meta or {},
        }
        updates = submit or state is not None
        if updates and assignment_id is None:
            raise ValueError("updating the judgment's assignment needs its id")

        def update(s: Session) -> None:
            if submit:
                work.submit_assignment(s, cast(int, assignment_id), state=state)
            elif state is not None:
                work.update_state(s, cast(int, assignment_id), state, expires_at=expires_at)

        def existing(s: Session) -> int | None:
            if client_request_id is None:
                return None
            return (
                s.connection()
                .execute(_JUDGMENT_BY_REQUEST, {"annotator_id": annotator_id, "client_request_id": client_request_id})
                .scalar()
            )

        def inserted(s: Session) -> int | None:
            """The new row's id, or None when the request id was answered before."""
            conn = s.connection()
            if client_request_id is None:
                result = conn.execute(_INSERT_JUDGMENT, values)
                update(s)
                return int(cast(Any, result.inserted_primary_key)[0])
            row = {**values, "created_at": clock.now()}
            if updates and conn.dialect.name == "postgresql":
                return work.judged_and_updated(
                    s, row, cast(int, assignment_id), submit=submit, state=state, expires_at=expires_at
                )
            made = conn.execute(_INSERT_JUDGMENT_ONCE, row).first()
            update(s)
            return int(made[0]) if made is not None else None

        def store_in(s: Session) -> tuple[int, bool]:
            s.flush()  # the caller's pending ORM changes first (a Core statement does not autoflush)
            made = inserted(s)
            if made is not None:
                return made, True
            found = existing(s)  # the request id was answered before: its first judgment
            assert found is not None  # the conflict was on this very key
            return found, False

        if session is not None:
            return store_in(session)
        try:
            with self.session() as s:
                return store_in(s)
        except IntegrityError:
            # Two identical submissions raced; the other one was stored (and closes nothing again).
            with self.session() as s:
                found = existing(s)
                if found is not None:
                    update(s)
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
        knows exactly what is in the study. The rows go in as save_batches' do (one batch of
        plain rows through _BulkInsert, never ORM objects: 100,000 Spot The Bot segments' ORM
        rows took half of their import's time and most of its memory).
        """
        turns = plain_turns(dataset.conversations)
        batch = RecordBatch(
            conversations=dataset.conversations,
            turns=turns or [],
            annotators=dataset.annotators,
            units=dataset.units,
            judgments=dataset.judgments,
        )
        counts = {"conversations": 0, "annotators": 0, "units": 0, "judgments": 0}
        with (
            self.session() as s,
            _bulk_cache(s.connection()),
            _indexes_at_the_end(s.connection(), TurnRow.__tablename__),
        ):
            if source is not None:
                s.add(EventRow(study_id=study_id, kind=IMPORT_EVENT, payload=source))
            self._save_batches(s, study_id, [batch], counts, plain_turns=turns is not None)
        return counts

    def save_stream(
        self,
        study_id: int,
        items: Iterable[tuple[Annotator, Judgment, list[Conversation]]],
        finish: Callable[[dict[str, int]], dict | None],
        batch: int = 20_000,
    ) -> dict[str, int] | None:
        """Store judgments as a reader yields them (with their annotator and conversations), in one
        transaction like save_dataset: all of it, or nothing. Memory stays flat in the number of
        judgments: rows go in batches through SQLAlchemy Core executemany (psycopg 3 pipelines it on
        PostgreSQL), never as ORM objects. Annotators and conversations already in the study are
        kept as they are. `finish(counts)` returns the import's source record, written in the same
        transaction, or None to roll everything back (the records were imported before)."""
        counts = {"conversations": 0, "annotators": 0, "units": 0, "judgments": 0}
        try:
            return self._save_stream(study_id, items, finish, batch, counts)
        except _Undo:
            return None

    def _save_stream(self, study_id, items, finish, batch, counts) -> dict[str, int]:
        table = JudgmentRow.__table__
        with self.session() as s:
            bulk = _BulkInsert(s, table, _STREAM_COLUMNS)
            with _bulk_cache(bulk.connection), _indexes_at_the_end(bulk.connection, JudgmentRow.__tablename__):
                return self._save_stream_in(s, bulk, study_id, items, finish, batch, counts)

    def _save_stream_in(self, s, bulk, study_id, items, finish, batch, counts) -> dict[str, int]:
        ann_ids: dict[str, int] = {
            name: ident
            for name, ident in s.execute(
                select(AnnotatorRow.external_id, AnnotatorRow.id).where(AnnotatorRow.study_id == study_id)
            )
        }
        conv_ids = set(s.scalars(select(ConversationRow.external_id).where(ConversationRow.study_id == study_id)))
        pending: list[Judgment] = []
        new_anns: dict[str, Annotator] = {}

        def flush() -> None:
            if new_anns:
                created = clock.now()
                s.execute(
                    insert(cast(Table, AnnotatorRow.__table__)),
                    [
                        {
                            "study_id": study_id,
                            "external_id": a.id,
                            "platform": a.platform,
                            "status": a.meta.get("status", "active"),
                            "qc": a.meta.get("qc", {}),
                            "meta": a.meta,
                            "created_at": created,
                        }
                        for a in new_anns.values()
                    ],
                )
                names = list(new_anns)
                for k in range(0, len(names), 500):  # under SQLite's limit of bound variables
                    ann_ids.update(
                        (name, ident)
                        for name, ident in s.execute(
                            select(AnnotatorRow.external_id, AnnotatorRow.id).where(
                                AnnotatorRow.study_id == study_id, AnnotatorRow.external_id.in_(names[k : k + 500])
                            )
                        ).all()
                    )
                counts["annotators"] += len(new_anns)
                new_anns.clear()
            if pending:
                now, n = clock.now(), len(pending)
                # column by column (_STREAM_COLUMNS), never a tuple per row to take apart again
                bulk.run_columns(
                    [
                        itertools.repeat(study_id, n),
                        [ann_ids[j.annotator_id] for j in pending],
                        [j.question for j in pending],
                        [j.value for j in pending],
                        [j.justification for j in pending],
                        [j.elapsed_s for j in pending],
                        [j.shown_order for j in pending],
                        [j.meta for j in pending],
                        [j.created_at or now for j in pending],
                    ]
                )
                counts["judgments"] += n
                pending.clear()

        # A batch's records are tens of thousands of new containers that live until it is stored:
        # the cyclic collector would walk each of them and every older object again and again (a
        # tenth of a million battles). They hold no cycle and are freed by reference counting;
        # the young generations are collected once a batch, so any cyclic garbage stays bounded.
        with cyclic_gc_paused():
            self._stream_items(s, items, ann_ids, conv_ids, new_anns, pending, flush, study_id, batch, counts)
        flush()
        source = finish(dict(counts))
        if source is None:
            raise _Undo
        s.add(EventRow(study_id=study_id, kind=IMPORT_EVENT, payload=source))
        return counts

    @staticmethod
    def _stream_items(s, items, ann_ids, conv_ids, new_anns, pending, flush, study_id, batch, counts) -> None:
        # battles with their text (an arena export's conversation_a/_b: every battle in some files):
        # the new conversations are stored CONVERSATION_CHUNK at a time, one flush each, then their
        # turns; a flush per battle was most of such an import's time (4,500 battles: 5 of 9 s)
        waiting: dict[str, Conversation] = {}

        def store_conversations() -> None:
            if waiting:
                new = list(waiting.values())
                rows = [_conversation_row(study_id, c) for c in new]
                s.add_all(rows)
                s.flush()
                for conv, row in zip(new, rows):
                    s.add_all(_turn_rows(row.id, conv.turns))
                conv_ids.update(waiting)
                counts["conversations"] += len(new)
                waiting.clear()

        for annotator, judgment, conversations in items:
            if judgment.unit_id is not None or judgment.conversation_id is not None:
                raise StoreError("a streamed judgment cannot refer to a unit or conversation")
            if annotator.id not in ann_ids and annotator.id not in new_anns:
                new_anns[annotator.id] = annotator
            for c in conversations or ():
                if c.id not in conv_ids and c.id not in waiting:
                    waiting[c.id] = c
            if len(waiting) >= CONVERSATION_CHUNK:
                store_conversations()
            pending.append(judgment)
            if len(pending) >= batch:
                store_conversations()
                flush()
                gc.collect(1)
        store_conversations()

    def save_batches(
        self, study_id: int, batches: Iterable[RecordBatch], finish: Callable[[dict[str, int]], dict | None]
    ) -> dict[str, int] | None:
        """save_dataset of records read a batch at a time (RecordBatch), in one transaction: all of
        it or nothing, the same rows. Memory stays flat in the number of records: each batch goes
        in as plain rows through _BulkInsert (never ORM objects) and is dropped. Records whose
        external id is already in the study are kept as they are; judgments are always added. The
        annotators this import adds are stored with their meta as it is once every batch is read.
        `finish(counts)` returns the import's source record, written in the same transaction, or
        None to roll everything back (the records were imported before)."""
        counts = {"conversations": 0, "annotators": 0, "units": 0, "judgments": 0}
        try:
            # no cyclic collection while the batches are read and stored (as in save_stream): their
            # records hold no cycles; the young generations are collected once a batch
            with (
                cyclic_gc_paused(),
                self.session() as s,
                _bulk_cache(s.connection()),
                _indexes_at_the_end(s.connection(), TurnRow.__tablename__),
            ):
                self._save_batches(s, study_id, batches, counts)
                source = finish(dict(counts))
                if source is None:
                    raise _Undo
                s.add(EventRow(study_id=study_id, kind=IMPORT_EVENT, payload=source))
                return counts
        except _Undo:
            return None

    def _save_batches(
        self, s: Session, study_id: int, batches: Iterable[RecordBatch], counts: dict, plain_turns: bool = True
    ) -> None:
        # plain_turns: each conversation's turns are the batch's plain tuples (RecordBatch.turns);
        # else its own Turns (save_dataset)
        C, A, U, J = ConversationRow, AnnotatorRow, UnitRow, JudgmentRow

        def held(model) -> dict[str, int]:
            query = select(model.external_id, model.id).where(model.study_id == study_id)
            return {external: ident for external, ident in s.execute(query)}

        conv_ids, ann_ids, unit_ids = held(C), held(A), held(U)
        # the study id and the creation time (the same for a batch) go last: converted once a batch
        conversations = _BulkInsert(
            s, C.__table__, ("external_id", "source", "bots", "meta", "error", "study_id", "created_at")
        )
        annotators = _BulkInsert(
            s, A.__table__, ("external_id", "platform", "status", "qc", "meta", "study_id", "created_at")
        )
        units = _BulkInsert(
            s, U.__table__, ("external_id", "kind", "conversation_ids", "payload", "study_id", "created_at")
        )
        judgment_columns = (
            "annotator_id", "unit_id", "conversation_id", "question", "value", "justification", "elapsed_s",
            "shown_order", "meta", "study_id", "created_at",
        )  # fmt: skip
        judgments = _BulkInsert(s, J.__table__, judgment_columns)
        turns = _TurnInsert(s, plain=plain_turns)
        add_turns: Callable[[int, Any], None] = turns.add_plain if plain_turns else turns.add
        added: dict[str, tuple[int, Annotator, str]] = {}  # the annotators added: row id, record, its repr then

        def insert_new(bulk: _BulkInsert, model: Any, rows: list[tuple], ids: dict[str, int], now: Any) -> None:
            # the new rows' ids: those of the study above the highest id before (ids only grow)
            connection = s.connection()  # Core rows: no ORM result machinery for 100,000 ids
            before = connection.execute(select(func.max(model.id))).scalar() or 0
            bulk.run(rows, study_id, now)
            query = select(model.external_id, model.id).where(model.study_id == study_id, model.id > before)
            ids.update((external, ident) for external, ident in connection.execute(query))

        rows: list[tuple]
        for batch in batches:
            now = clock.now()
            pairs: Iterable[tuple[Conversation, Any]] = (
                zip(batch.conversations, batch.turns) if plain_turns else ((c, c.turns) for c in batch.conversations)
            )
            new = [(c, t) for c, t in pairs if c.id not in conv_ids]
            if new:
                rows = [(c.id, c.source, list(c.bots), c.meta, c.error) for c, _ in new]
                insert_new(conversations, C, rows, conv_ids, now)
                for c, t in new:
                    add_turns(conv_ids[c.id], t)
                turns.flush()
                counts["conversations"] += len(new)
            new_anns = [a for a in batch.annotators if a.id not in ann_ids]
            if new_anns:
                rows = [
                    (a.id, a.platform, a.meta.get("status", "active"), a.meta.get("qc", {}), a.meta) for a in new_anns
                ]
                insert_new(annotators, A, rows, ann_ids, now)
                added.update((a.id, (ann_ids[a.id], a, repr(a))) for a in new_anns)
                counts["annotators"] += len(new_anns)
            new_units = [u for u in batch.units if u.id not in unit_ids]
            if new_units:
                rows = [(u.id, u.kind, u.conversation_ids, u.payload) for u in new_units]
                insert_new(units, U, rows, unit_ids, now)
                counts["units"] += len(new_units)
            if batch.judgments:
                rows = []
                for j in batch.judgments:
                    if j.annotator_id not in ann_ids:
                        raise StoreError(f"judgment by unknown annotator '{j.annotator_id}'")
                    unit = unit_ids.get(j.unit_id) if j.unit_id else None
                    conv = conv_ids.get(j.conversation_id) if j.conversation_id else None
                    rows.append(
                        (ann_ids[j.annotator_id], unit, conv, j.question, j.value, j.justification, j.elapsed_s,
                         j.shown_order, j.meta, study_id, j.created_at or now)
                    )  # fmt: skip
                if all(j.created_at is None for j in batch.judgments):  # the time converted once
                    judgments.run([row[:-2] for row in rows], study_id, now)
                else:
                    judgments.run(rows)
                counts["judgments"] += len(rows)
            gc.collect(1)
        # what the reader added to an annotator after storing it (a worker's later assignments)
        changed = [
            {"row": row, "p": a.platform, "s": a.meta.get("status", "active"), "q": a.meta.get("qc", {}), "m": a.meta}
            for row, a, then in added.values()
            if repr(a) != then
        ]
        if changed:
            T = cast(Table, A.__table__)
            s.execute(
                update(T)
                .where(T.c.id == bindparam("row"))
                .values(platform=bindparam("p"), status=bindparam("s"), qc=bindparam("q"), meta=bindparam("m")),
                changed,
            )

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

    def load_dataset(self, study_id: int, columns: dict[str, Any] | None = None, all_turns: bool = True) -> Dataset:
        """The whole study as records, the input of analysis and export. With `columns` (a method's
        report_columns) and every judgment of its question, the judgments come as JudgmentColumns:
        only the fields the analysis reads, as a column each (_judgment_columns). With
        `all_turns=False` (a report whose analysis reads no turn: Method.report_reads_turns) each
        conversation holds only the turns the report's other sections read (_report_turns)."""
        with self.read() as s:
            study = s.get(Study, study_id)
            if study is None:
                raise StoreError(f"no study #{study_id}")
            C = ConversationRow
            # Core rows, not ORM objects: 100,000 conversations are read in a second, not ten
            conv_rows = list(
                s.connection().execute(
                    select(C.id, C.external_id, C.source, C.bots, C.meta, C.error)
                    .where(C.study_id == study_id)
                    .order_by(C.id)
                )
            )
            A = AnnotatorRow  # Core rows too: a million battles' crowd is tens of thousands of annotators
            ann_rows = list(
                s.connection().execute(
                    select(A.id, A.external_id, A.platform, A.status, A.qc, A.meta)
                    .where(A.study_id == study_id)
                    .order_by(A.id)
                )
            )
            has_judges = any(is_judge_annotator(Annotator(r.external_id, r.platform)) for r in ann_rows)
            # the judge audit reads whole conversations
            turn_where = None if all_turns or has_judges else _report_turns(s, study_id)
            turns_by_conv: dict[int, list[TurnRow]] = {}
            turn_query = (
                select(TurnRow)
                .join(ConversationRow, TurnRow.conversation_id == ConversationRow.id)
                .where(ConversationRow.study_id == study_id)
                .order_by(TurnRow.conversation_id, TurnRow.idx)
            )
            if turn_where is not None:
                turn_query = turn_query.where(turn_where)
            for t in s.scalars(turn_query):
                turns_by_conv.setdefault(t.conversation_id, []).append(t)
            conv_ext = {r.id: r.external_id for r in conv_rows}
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
            judgments: Any = None
            # an LLM judge's judgments go to the judge audit, which reads whole Judgment objects
            if columns is not None and not has_judges:
                judgments = _judgment_columns(s, study_id, columns, ann_ext, unit_ext, conv_ext, excluded)
            if judgments is None:
                judgments = self._judgment_objects(s, study_id, ann_ext, unit_ext, conv_ext, excluded)
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

    @staticmethod
    def _judgment_objects(s, study_id, ann_ext, unit_ext, conv_ext, excluded) -> list[Judgment]:
        J = JudgmentRow.__table__.c
        return [
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
            # Core rows (the ORM's identity map and instance state would double the time)
            for j in s.connection().execute(select(*J).where(J.study_id == study_id).order_by(J.id))
        ]


def _report_turns(s, study_id: int) -> Any:
    """The WHERE clause of the turns a report reads besides its analysis, or None for every turn.
    Those sections: automatic_metrics reads turns with a meta "reference" (analysis/metrics.py),
    shortened_replies the bot replies cut at limits.bot_reply_chars (textclean.was_cut), and the
    typing summary (quality/typing.py) every bot text once any turn or judgment carries typed-input
    signals (meta "input"): then every turn. The test is a superset on the JSON text (LIKE, in the
    database: imported Direct Assessment studies hold millions of turns, none of them needed); the
    sections apply the exact test to what it lets through."""
    from sqlalchemy import String, cast, or_

    from ..textclean import CUT_MARKER

    def mentions(col: Any, word: str) -> Any:
        return cast(col, String).like(f"%{word}%")

    C, T, J = ConversationRow, TurnRow, JudgmentRow
    in_study = select(T.id).join(C, T.conversation_id == C.id).where(C.study_id == study_id)
    typed = s.scalar(in_study.where(mentions(T.meta, '"input"')).limit(1)) is not None or (
        s.scalar(select(J.id).where(J.study_id == study_id, mentions(J.meta, '"input"')).limit(1)) is not None
    )
    if typed:
        return None
    cut = CUT_MARKER.strip(" …")  # ASCII: the JSON text of candidates may escape the ellipsis
    return or_(mentions(T.meta, '"reference"'), mentions(T.text, cut), mentions(T.candidates, cut))


_COLUMN_BATCH = 100_000  # rows per batch of _judgment_columns


def _row_batches(connection: Any, stmt: Any, size: int) -> Any:
    """The rows of a SELECT as lists of tuples, `size` at a time, on the session's connection. On
    SQLite straight from the DBAPI cursor: SQLAlchemy's Row objects and their processing were a third
    of reading a million judgments' columns (the only result processor of _judgment_columns', a
    Boolean's 0/1 -> bool, is the 0/1 map it applies anyway). Elsewhere SQLAlchemy's Core rows,
    streamed (PostgreSQL: a server-side cursor)."""
    if connection.dialect.name == "sqlite":
        result = connection.execute(stmt)  # no server-side cursor, no row prefetched
        try:
            while part := result.cursor.fetchmany(size):
                yield part
        finally:
            result.close()
        return
    yield from connection.execution_options(yield_per=size).execute(stmt).partitions()


def _judgment_columns(s, study_id, columns, ann_ext, unit_ext, conv_ext, excluded) -> Any:
    """The judgments as records.JudgmentColumns, reading only the wanted JSON fields, each batch of
    rows as pyarrow arrays, then one pandas DataFrame (kept libraries, no engine of ours). On SQLite
    with pyarrow each row's value and meta come as their JSON text and pyarrow's JSON reader parses
    a batch of them column-wise (_json_field_arrays); elsewhere, and for a batch that reader does not
    take exactly, the database extracts the fields (SQLAlchemy's JSON index: JSON_EXTRACT on SQLite,
    ->> on PostgreSQL). None when some judgment is of another question (the analysis then takes
    objects). Without pyarrow (the base install has it only with the extra 'parquet') pandas builds
    the frame from the extracted fields."""
    import pandas as pd

    try:
        import pyarrow as pa
    except ImportError:
        pa = None

    from ..records import JudgmentColumns

    J = JudgmentRow
    question = columns["question"]
    other = s.scalar(select(func.count()).where(J.study_id == study_id, (J.question != question) | J.value.is_(None)))
    if other:
        return None
    value_keys, meta_keys = list(columns.get("value", {})), list(columns.get("meta", {}))
    plain: list[Any] = [
        J.id.label("judgment_id"),
        J.annotator_id.label("annotator"),
        J.unit_id.label("unit"),
        J.conversation_id.label("conversation"),
        J.elapsed_s.label("elapsed_s"),
        J.assignment_id.label("assignment_id"),
    ]
    extracted: list[Any] = []
    for name, kind in columns.get("value", {}).items():
        extracted.append(getattr(J.value[name], f"as_{kind}")().label(f"value.{name}"))
    for name, kind in columns.get("meta", {}).items():
        extracted.append(getattr(J.meta[name], f"as_{kind}")().label(f"meta.{name}"))
    names = [str(f.name) for f in plain + extracted]
    extract_stmt = select(*plain, *extracted).where(J.study_id == study_id).order_by(J.id)
    connection = s.connection()
    parse_json = pa is not None and connection.dialect.name == "sqlite" and _json_reader() is not None
    stmt = select(*plain, J.value, J.meta).where(J.study_id == study_id).order_by(J.id) if parse_json else extract_stmt
    # the rows' tuples are millions of new container objects: the cyclic collector would walk every
    # live one again and again as they pile up (a fifth of reading a million judgments); they hold
    # no cycle, and are freed by reference counting
    with cyclic_gc_paused():
        batches = []
        for part in _row_batches(connection, stmt, _COLUMN_BATCH):
            if pa is None:
                batches.append(pd.DataFrame.from_records([tuple(r) for r in part], columns=names))
                continue
            cols = list(zip(*part))
            if parse_json:
                fields = _json_field_arrays(cols[-2], columns.get("value", {}))
                if fields is not None:
                    fields = _json_field_arrays(cols[-1], columns.get("meta", {}), fields)
                if fields is None:  # the database's own extraction, for these rows (ids ascend in a batch)
                    between = extract_stmt.where(J.id.between(part[0][0], part[-1][0]))
                    again = [row for rows in _row_batches(connection, between, _COLUMN_BATCH) for row in rows]
                    cols = list(zip(*again))
                else:
                    cols = cols[:-2] + fields
            batches.append(pa.record_batch([c if isinstance(c, pa.Array) else pa.array(c) for c in cols], names=names))
        if batches and pa is not None:
            # a field missing from every row of one batch is a null column there, a string or number
            # column in another: the batches' types are unified (null -> the other's), as one batch reads
            tables = [pa.Table.from_batches([batch]) for batch in batches]
            frame = pa.concat_tables(tables, promote_options="default").to_pandas()
        elif batches:
            frame = pd.concat(batches, ignore_index=True)
        else:
            frame = pd.DataFrame({n: [] for n in names})
    frame["annotator"] = frame["annotator"].map(ann_ext)
    frame["unit"] = frame["unit"].map(unit_ext)
    frame["conversation"] = frame["conversation"].map(conv_ext)
    frame["question"] = question
    frame["excluded"] = frame["assignment_id"].map(excluded)
    for name, kind in columns.get("value", {}).items():
        if kind == "boolean":  # SQLite gives 0/1
            frame[f"value.{name}"] = frame[f"value.{name}"].map({0: False, 1: True})  # (True == 1, False == 0)
    return JudgmentColumns(frame, value_keys, meta_keys)


def _json_reader() -> Any:
    try:
        import pyarrow.json as pa_json
    except ImportError:
        return None
    return pa_json


def _json_field_arrays(texts: Any, kinds: dict[str, str], into: list[Any] | None = None) -> list[Any] | None:
    """The fields `kinds` ({key: "string" | "integer" | "boolean"}) of JSON objects `texts`, as one
    pyarrow array each, the arrays JSON_EXTRACT's values would make (appended to `into`), or None
    when some value is not what its kind's type holds exactly. SQLite 3.40 parses a document once
    per JSON_EXTRACT call, ten times a row; pyarrow's reader parses each once, into columns. Its
    typed columns take only JSON strings, integers in int64, or true/false: a number in a string
    field, a float or string in an integer one, a nested value, a key given twice, all raise, and
    the caller has the database extract those rows (its values: 1/0 for true/false, a nested
    value's JSON text, mixed types). A line that is not an object is never given to the reader
    (pyarrow 22 crashes on a first line `null`)."""
    import io

    import pyarrow as pa

    pa_json = _json_reader()
    types = {"string": pa.string(), "integer": pa.int64(), "boolean": pa.bool_()}
    if not kinds:
        return list(into or [])
    if any(kind not in types for kind in kinds.values()):
        return None
    try:
        lines = "\n".join(texts)
    except TypeError:  # not text
        return None
    if not lines.startswith("{") or lines.count("\n") != lines.count("\n{"):  # some line not an object
        return None
    schema = pa.schema([(key, types[kind]) for key, kind in kinds.items()])
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pa_json.read_json(io.BytesIO(lines.encode()), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(texts):  # a document over several lines, or several on one
        return None
    arrays = list(into or [])
    for key, kind in kinds.items():
        array = table.column(key).combine_chunks()
        if array.null_count == len(array):  # as pa.array of Nones: the null type
            array = pa.nulls(len(array))
        elif kind == "boolean":  # as SQLite's 1/0
            array = array.cast(pa.int64())
        arrays.append(array)
    return arrays


def _judge_guided(s, study_id: int) -> dict[str, Any]:
    """{"judge_guided": the pools the scheduler froze (scheduling/tickets.py)} when the study has them, else {}."""
    from .work import GUIDED_POOLS_EVENT

    row = s.scalars(
        select(EventRow).where(EventRow.study_id == study_id, EventRow.kind == GUIDED_POOLS_EVENT).order_by(EventRow.id)
    ).first()
    return {"judge_guided": dict(row.payload)} if row is not None else {}


_STREAM_COLUMNS = (
    "study_id",
    "annotator_id",
    "question",
    "value",
    "justification",
    "elapsed_s",
    "shown_order",
    "meta",
    "created_at",
)


class _BulkInsert:
    """One INSERT statement run on many rows through the DBAPI's executemany: each value is turned
    into what the database takes by the column type's own SQLAlchemy bind processor (JSON text, the
    SQLite datetime format), so rows read back exactly as the ORM's would, without the per-row cost
    of building them through the ORM or Core's parameter handling."""

    def __init__(self, session: Session, table: Any, columns: tuple[str, ...]):
        self.connection = session.connection()
        dialect = self.connection.dialect
        compiled = insert(table).compile(dialect=dialect, column_keys=list(columns))
        self.sql = str(compiled)
        self.columns = columns
        # positional (SQLite's ?) or named (psycopg's %(name)s) parameters, in the statement's order
        self.positions = [columns.index(k) for k in compiled.positiontup] if compiled.positiontup else None
        self.processors = [table.c[c].type.dialect_impl(dialect).bind_processor(dialect) for c in columns]
        # PostgreSQL through psycopg 3: the rows go by COPY (one stream, no statement per row),
        # each value dumped by the same adapters as the INSERT's parameters
        self.copy_sql = None
        if dialect.name == "postgresql" and dialect.driver == "psycopg":
            quote = dialect.identifier_preparer
            names = ", ".join(quote.quote(c) for c in columns)
            self.copy_sql = f"COPY {quote.format_table(table)} ({names}) FROM STDIN"
        # positional parameters in the columns' order: rows can go to the driver as they are
        self.in_order = self.copy_sql is None and self.positions == list(range(len(columns)))
        if dialect.name == "sqlite":
            # JSON on SQLite: the processor calls the engine's serializer (json_text.dumps, see
            # store/engine.py) behind a wrapper; the serializer itself, one call less a value
            self.processors = [
                json_text.dumps if isinstance(table.c[c].type, JSON) else p for c, p in zip(columns, self.processors)
            ]
        if dialect.name == "sqlite":
            impls = [table.c[c].type.dialect_impl(dialect) for c in columns]
            self.processors = [_fast_sqlite_datetime(impl, p) for impl, p in zip(impls, self.processors)]

    def run(self, rows: list[tuple], *same: Any) -> None:
        """Insert `rows` (not empty); `same` gives the last columns one value for every row, so
        that `rows` hold only the others (a value converted once, not once a row)."""
        # column by column: each converter mapped over its column, rows rebuilt by zip (C loops,
        # not a Python call per value)
        k = len(self.columns) - len(same)
        if self.in_order and not any(self.processors[:k]):  # rows as they are (e.g. turns on SQLite)
            tail = tuple(v if p is None else p(v) for p, v in zip(self.processors[k:], same))
            self.connection.exec_driver_sql(self.sql, [row + tail for row in rows] if tail else rows)
            return
        converted: list[Any] = [
            column if p is None else list(map(p, column)) for p, column in zip(self.processors[:k], zip(*rows))
        ]
        converted += [itertools.repeat(v if p is None else p(v), len(rows)) for p, v in zip(self.processors[k:], same)]
        self._send(converted)

    def run_columns(self, columns: list[Iterable[Any]]) -> None:
        """Insert the rows whose values are given column by column (one iterable per column, all
        of one length; a column may be an itertools.repeat when another is sized)."""
        self._send([column if p is None else list(map(p, column)) for p, column in zip(self.processors, columns)])

    def _send(self, converted: list[Any]) -> None:
        """The rows of the converted columns to the database."""
        if self.copy_sql is not None:
            raw: Any = self.connection.connection.dbapi_connection  # psycopg's, in the session's transaction
            with raw.cursor() as cursor, cursor.copy(self.copy_sql) as copy:
                for row in zip(*converted):
                    copy.write_row(row)
            return
        if self.positions is not None:
            params: list[Any] = list(zip(*(converted[k] for k in self.positions)))
        else:
            params = [dict(zip(self.columns, row)) for row in zip(*converted)]
        self.connection.exec_driver_sql(self.sql, params)


# SQLAlchemy's default SQLite DATETIME text (its storage format): the date and time with
# microseconds, the zone left out
_SQLITE_DATETIME_FORMAT = "%(year)04d-%(month)02d-%(day)02d %(hour)02d:%(minute)02d:%(second)02d.%(microsecond)06d"


def _fast_sqlite_datetime(impl: Any, processor: Any) -> Any:
    """`processor` (a column's bind processor), or for a SQLite DATETIME of the default storage
    format the same text from datetime.isoformat, a C call (a million imported battles)."""
    if processor is None or getattr(impl, "_storage_format", None) != _SQLITE_DATETIME_FORMAT:
        return processor
    if not isinstance(impl, sa_types.DateTime):
        return processor

    def process(value: Any) -> Any:
        if type(value) is datetime:  # "YYYY-MM-DD HH:MM:SS.ffffff" and the zone's offset, cut off
            return value.isoformat(" ", "microseconds")[:26]
        return processor(value)

    return process


# SQLite's page cache during a bulk load: each judgment goes into the table and its five indexes
# (annotator, study, question, ...), and with the default 2 MB cache the index pages of a million
# rows are evicted and read back between inserts (a third of the insert time on 1M battles).
# 256 MB holds the indexes of several million judgments; the default is back after the load.
BULK_CACHE_KB = 256 * 1024


@contextmanager
def _bulk_cache(connection: Any) -> Iterator[None]:
    if connection.dialect.name != "sqlite":
        yield
        return
    before = connection.exec_driver_sql("PRAGMA cache_size").scalar()
    connection.exec_driver_sql(f"PRAGMA cache_size=-{BULK_CACHE_KB}")
    try:
        yield
    finally:
        try:
            connection.exec_driver_sql(f"PRAGMA cache_size={int(before)}")
        except Exception:  # a connection broken by the error being raised: it is discarded anyway
            pass


@contextmanager
def _indexes_at_the_end(connection: Any, table: str) -> Iterator[None]:
    """SQLite, loading an empty table (a new study's first import): its secondary indexes are
    dropped for the load and built once at the end, from their own CREATE statements, in the same
    transaction (SQLite's DDL is transactional: an error or Ctrl-C rolls the drop back with the
    rows, and readers of the WAL snapshot never see the table without them). Building an index
    over sorted keys once costs less than a million random inserts into it. Not on PostgreSQL,
    where DROP INDEX would lock the table that other studies share."""
    if connection.dialect.name != "sqlite" or connection.exec_driver_sql(f'SELECT 1 FROM "{table}" LIMIT 1').first():
        yield
        return
    indexes = connection.exec_driver_sql(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (table,)
    ).all()
    for name, _ in indexes:
        connection.exec_driver_sql(f'DROP INDEX "{name}"')
    yield
    for _, sql in indexes:
        connection.exec_driver_sql(sql)


class _Undo(Exception):
    """Roll back a streamed import (save_stream's `finish` found it imported before)."""


def _conversation_row(study_id: int, c: Conversation) -> ConversationRow:
    return ConversationRow(
        study_id=study_id, external_id=c.id, source=c.source, bots=list(c.bots), meta=c.meta, error=c.error
    )


class _TurnInsert:
    """The turns of many new conversations, inserted in batches through _BulkInsert: an import of
    100,000 rated dialogues holds millions of turns, too many to build as ORM objects (gigabytes,
    minutes). The rows are those _turn_rows would give (created_at: one clock reading a batch)."""

    COLUMNS = (
        "conversation_id",
        "idx",
        "speaker",
        "text",
        "bot",
        "is_seed",
        "candidates",
        "chosen",
        "meta",
        "created_at",
    )
    BATCH = 20_000

    def __init__(self, session: Session, plain: bool = False):
        # plain: turns given as RecordBatch's (speaker, text, bot), the other fields at their defaults
        self.bulk = _BulkInsert(session, TurnRow.__table__, self.COLUMNS)
        self.plain = plain
        self.rows: list[tuple] = []

    def add(self, conversation_id: int, turns: list[Turn], start: int = 0) -> None:
        self.rows += [
            (conversation_id, start + i, t.speaker, t.text, t.bot, t.is_seed, t.candidates, t.chosen, t.meta)
            for i, t in enumerate(turns)
        ]
        if len(self.rows) >= self.BATCH:
            self.flush()

    def add_plain(self, conversation_id: int, turns: list[tuple[str, str, str | None]]) -> None:
        self.rows += [(conversation_id, i, *turn) for i, turn in enumerate(turns)]
        if len(self.rows) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            if self.plain:  # is_seed, candidates, chosen, meta as Turn's defaults
                self.bulk.run(self.rows, False, None, None, {}, clock.now())
            else:
                self.bulk.run(self.rows, clock.now())
            self.rows = []


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


def _conversation_record(row: Any, turns: list[TurnRow]) -> Conversation:
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


def conversation_row_id_in(s: Session, study_id: int, external_id: str) -> int | None:
    """The row id of a study's conversation, in the caller's transaction (None when there is none)."""
    return s.scalar(
        select(ConversationRow.id).where(
            ConversationRow.study_id == study_id, ConversationRow.external_id == external_id
        )
    )
