"""The database schema: one set of tables for every method (docs/architecture.md).

Judgments are the pivot. Nothing is ever deleted: filtered annotators get a status and a reason.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .. import clock

# Bump when the tables change, and add a step to migrations.MIGRATIONS.
SCHEMA_VERSION = 2


class Base(DeclarativeBase):
    type_annotation_map = {dict: JSON, list: JSON, datetime: DateTime(timezone=True)}


class SchemaInfo(Base):
    __tablename__ = "dialeval_schema"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    dialeval_version: Mapped[str] = mapped_column(String(32))


class Study(Base):
    __tablename__ = "studies"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    method: Mapped[str] = mapped_column(String(40))
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=clock.now)


class BotRow(Base):
    __tablename__ = "bots"
    __table_args__ = (UniqueConstraint("study_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(40))
    config: Mapped[dict] = mapped_column(JSON, default=dict)


class ConversationRow(Base):
    __tablename__ = "conversations"
    __table_args__ = (UniqueConstraint("study_id", "external_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(40))
    bots: Mapped[list] = mapped_column(JSON, default=list)
    meta: Mapped[dict] = mapped_column(JSON, default=dict)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=clock.now)


class TurnRow(Base):
    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("conversation_id", "idx"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # No index of its own: the unique (conversation_id, idx) index serves every lookup by
    # conversation (its first column), and a second one cost ~1 s of a 2.1M-turn import. Databases
    # made before keep theirs (harmless), so the schema version stays.
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    idx: Mapped[int] = mapped_column(Integer)
    speaker: Mapped[str] = mapped_column(String(40))
    text: Mapped[str] = mapped_column(Text)
    bot: Mapped[str | None] = mapped_column(String(200), nullable=True)
    is_seed: Mapped[bool] = mapped_column(Boolean, default=False)
    # PW-Turn: every bot's reply for this turn, and the index of the one that continued.
    candidates: Mapped[list | None] = mapped_column(JSON, nullable=True)
    chosen: Mapped[int | None] = mapped_column(Integer, nullable=True)
    meta: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=clock.now)


class AnnotatorRow(Base):
    __tablename__ = "annotators"
    __table_args__ = (UniqueConstraint("study_id", "external_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(40), default="link")
    # active | flagged | blocked ; a filtered annotator keeps every judgment, with the reason here.
    status: Mapped[str] = mapped_column(String(20), default="active")
    qc: Mapped[dict] = mapped_column(JSON, default=dict)
    meta: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=clock.now)


class UnitRow(Base):
    __tablename__ = "units"
    __table_args__ = (UniqueConstraint("study_id", "external_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(40))
    conversation_ids: Mapped[list] = mapped_column(JSON, default=list)
    payload: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=clock.now)


class AssignmentRow(Base):
    __tablename__ = "assignments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    unit_id: Mapped[int] = mapped_column(ForeignKey("units.id", ondelete="CASCADE"), index=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    # assigned | submitted | expired
    status: Mapped[str] = mapped_column(String(20), default="assigned")
    shown_order: Mapped[list | None] = mapped_column(JSON, nullable=True)
    state: Mapped[dict] = mapped_column(JSON, default=dict)  # per-method progress (resume after refresh)
    started_at: Mapped[datetime] = mapped_column(default=clock.now)
    expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    submitted_at: Mapped[datetime | None] = mapped_column(nullable=True)


class JudgmentRow(Base):
    __tablename__ = "judgments"
    # A client request id is unique per annotator, so a resubmitted form stores nothing twice.
    __table_args__ = (
        UniqueConstraint("annotator_id", "client_request_id"),
        Index("ix_judgments_study_question", "study_id", "question"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    assignment_id: Mapped[int | None] = mapped_column(ForeignKey("assignments.id"), nullable=True, index=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    unit_id: Mapped[int | None] = mapped_column(ForeignKey("units.id"), nullable=True, index=True)
    conversation_id: Mapped[int | None] = mapped_column(ForeignKey("conversations.id"), nullable=True)
    question: Mapped[str] = mapped_column(String(100))
    value: Mapped[dict | list | None] = mapped_column(JSON, nullable=True)
    justification: Mapped[str | None] = mapped_column(Text, nullable=True)
    elapsed_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    shown_order: Mapped[list | None] = mapped_column(JSON, nullable=True)
    client_request_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    meta: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=clock.now)


class EventRow(Base):
    """Append-only log of what happened (assignment given, expired, bot error, QC decision...)."""

    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(60))
    annotator_id: Mapped[int | None] = mapped_column(ForeignKey("annotators.id"), nullable=True)
    payload: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=clock.now)


# -- tables shared by every serving process and host (created on open when missing; additive) --------
class SecretRow(Base):
    """Values every host serving a study must agree on: the cookie/CSRF signing key, the admin token."""

    __tablename__ = "study_secrets"
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))


class RateBucketRow(Base):
    """A token bucket of the rate limiter (e.g. chat messages per annotator), counted across hosts."""

    __tablename__ = "rate_buckets"
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    updated: Mapped[float] = mapped_column(Float)  # seconds since the epoch


SHARED_TABLES = (SecretRow, RateBucketRow)
