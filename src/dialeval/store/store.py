"""Every read and write of dialeval's data goes through Store; nothing else writes SQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from .. import __version__
from ..errors import StoreError
from ..records import Annotator, Conversation, Dataset, Judgment, Turn, Unit
from . import migrations
from .engine import check_connection, database_url, make_engine
from .schema import (
    AnnotatorRow,
    AssignmentRow,
    BotRow,
    ConversationRow,
    EventRow,
    JudgmentRow,
    Study,
    TurnRow,
    UnitRow,
)

IMPORT_EVENT = "import"  # an events row per imported source: {format, path, sha256, ...}

class Store:
    def __init__(self, url: str):
        self.url = url
        self.engine: Engine = make_engine(url)
        check_connection(self.engine)
        with self.engine.begin() as conn:
            self.migrated_from = migrations.upgrade(conn, __version__)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @classmethod
    def for_study_dir(cls, study_dir: str | Path, configured_url: str | None = None) -> Store:
        return cls(database_url(study_dir, configured_url))

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back on an error."""
        with self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def locked(self, study_id: int) -> Iterator[Session]:
        """A transaction that holds the study's write lock, for read-then-write work like scheduling.

        SQLite takes the whole-file lock at BEGIN IMMEDIATE (see engine.py); PostgreSQL takes a
        transaction-scoped advisory lock keyed by the study, so other studies are not blocked.
        """
        with self.session() as session:
            if self.is_postgres:
                session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 7_000_000 + study_id})
            yield session

    # -- studies and bots -------------------------------------------------------------------
    def ensure_study(self, name: str, method: str, config: dict[str, Any] | None = None,
                     uid: str | None = None) -> Study:
        """The study row of that name (made when new). With `uid` (the folder's stable id, kept in the
        row's config as ``study_uid``) the row is found by it first, so a changed `name:` renames the
        study instead of starting an empty one."""
        if uid is not None:
            config = {**(config or {}), "study_uid": uid}
            with self.session() as s:
                by_uid = next((st for st in s.scalars(select(Study)) if (st.config or {}).get("study_uid") == uid),
                              None)
                if by_uid is not None and by_uid.name != name:
                    if s.scalar(select(Study).where(Study.name == name)) is not None:
                        raise StoreError(f"cannot rename study '{by_uid.name}' to '{name}': this database "
                                         f"already holds another study of that name")
                    s.add(EventRow(study_id=by_uid.id, kind="study-renamed",
                                   payload={"from": by_uid.name, "to": name}))
                    by_uid.name = name
                elif by_uid is None:
                    other = s.scalar(select(Study).where(Study.name == name))
                    other_uid = (other.config or {}).get("study_uid") if other is not None else None
                    if other_uid and other_uid != uid:
                        raise StoreError(f"this database already holds a study named '{name}' from another "
                                         f"study folder; give this one another name")
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
        with self.session() as s:
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
        with self.session() as s:
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
        with self.session() as s:
            rows = s.execute(
                select(ConversationRow.external_id, ConversationRow.error).where(ConversationRow.study_id == study_id)
            )
            return {ext: err for ext, err in rows}

    def save_conversation(self, study_id: int, conversation: Conversation) -> int:
        """Insert or replace one conversation with its turns; returns its row id."""
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
        with self.session() as s:
            row = s.scalar(
                select(ConversationRow).where(
                    ConversationRow.study_id == study_id, ConversationRow.external_id == external_id
                )
            )
            if row is None:
                raise StoreError(f"no conversation '{external_id}'")
            turns = s.scalars(select(TurnRow).where(TurnRow.conversation_id == row.id).order_by(TurnRow.idx))
            return _conversation_record(row, list(turns))

    def append_turn(self, study_id: int, external_id: str, turn: Turn) -> int:
        """Add a turn at the end of a (live) conversation; returns its index."""
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
            s.add(_turn_rows(conv_id, [turn], start=idx)[0])
            return int(idx)

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
        with self.session() as s:

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
        with self.session() as s:
            rows = s.execute(
                select(EventRow.payload).where(EventRow.study_id == study_id, EventRow.kind == IMPORT_EVENT)
                .order_by(EventRow.id)
            ).scalars().all()
        return [dict(r) for r in rows]

    def load_dataset(self, study_id: int) -> Dataset:
        """The whole study as records, the input of analysis and export."""
        with self.session() as s:
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
                    meta={**(j.meta or {}), "judgment_id": j.id, "assignment_id": j.assignment_id,
                          **({"excluded": excluded[j.assignment_id]} if j.assignment_id in excluded else {})},
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
                meta={"study": study.name, "config": study.config},
            )


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
