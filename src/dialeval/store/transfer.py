"""Backup, restore and move of a study's rows, every id kept (the CLI's backup/restore/migrate).

A backup is a SQLite file. From a SQLite study it is made with SQLite's online backup API (a
consistent copy while workers keep writing, WAL included); from PostgreSQL the study's rows are
read in one REPEATABLE READ transaction (one snapshot of every table) and written to the file.
`copy_study` moves rows between any two databases in table order, keeping primary keys, and sets
PostgreSQL's id sequences past the copied ids so new rows do not collide.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, MetaData, Table, func, inspect, select, text

from ..errors import StoreError
from . import migrations
from .engine import make_engine
from .schema import Base

BATCH = 2000


def _url_path(engine: Engine) -> str | None:
    return engine.url.database if engine.dialect.name == "sqlite" else None


# A study as prepared (`copy_study(prepared_only=True)`, for `dialeval simulate --copy`)
PREPARED_TABLES = frozenset({"studies", "bots", "conversations", "turns"})


def _study_filter(table: Table, study_id: int, conversations: Table, prepared_only: bool = False):
    """The WHERE clause selecting `study_id`'s rows of `table` (None: copy the table whole)."""
    cols = table.c
    own = conversations.c.study_id == study_id
    if prepared_only:  # live chats are annotators' data, not part of the prepared study
        own = own & (conversations.c.source != "live")
    if table.name == "studies":
        return cols.id == study_id
    if table.name == "conversations":
        return own
    if "study_id" in cols:
        return cols.study_id == study_id
    if table.name == "turns":
        return cols.conversation_id.in_(select(conversations.c.id).where(own))
    if table.name == "rate_buckets":
        return cols.key.like(f"study{study_id}:%")
    return None


def _aware(row: dict) -> dict:
    # SQLite hands back naive datetimes that were stored as UTC; say so before PostgreSQL reads them
    return {k: (v.replace(tzinfo=UTC) if isinstance(v, datetime) and v.tzinfo is None else v) for k, v in row.items()}


def target_is_empty(engine: Engine, study_name: str) -> None:
    """Refuse to write into a database that already holds this study (nothing is ever merged)."""
    with engine.connect() as c:
        if "studies" not in inspect(c).get_table_names():
            return
        found = c.execute(text("SELECT id FROM studies WHERE name = :n"), {"n": study_name}).first()
    if found is not None:
        raise StoreError(
            f"the target database already holds a study named '{study_name}'; "
            "restore into an empty database (or drop that study first)"
        )


def copy_study(source: Engine, target: Engine, study_id: int, prepared_only: bool = False) -> dict[str, int]:
    """Copy every row of one study from `source` to `target` (whose schema is created or
    migrated first), ids kept; returns rows per table. One snapshot of the source.
    `prepared_only`: the study as made before collection -- its row, bots and the conversations
    generated or imported beforehand, never an annotator, a live chat or a judgment (units are
    built again when the copy is served)."""
    with target.begin() as conn:
        migrations.upgrade(conn, _dialeval_version())
    counts: dict[str, int] = {}
    with source.connect() as src:
        if source.dialect.name == "postgresql":  # one snapshot of every table, writers go on
            src = src.execution_options(isolation_level="REPEATABLE READ")
        with src.begin():
            meta = MetaData()
            meta.reflect(src)
            conversations = meta.tables["conversations"]
            name = src.execute(
                select(meta.tables["studies"].c.name).where(meta.tables["studies"].c.id == study_id)
            ).scalar()
            if name is None:
                raise StoreError(f"no study #{study_id} in the source database")
            target_is_empty(target, name)
            with target.begin() as dst:
                for model_table in Base.metadata.sorted_tables:
                    if model_table.name == "dialeval_schema" or model_table.name not in meta.tables:
                        continue
                    if prepared_only and model_table.name not in PREPARED_TABLES:
                        continue
                    table = meta.tables[model_table.name]
                    where = _study_filter(table, study_id, conversations, prepared_only)
                    q = select(table)
                    if where is not None:
                        q = q.where(where)
                    pk = list(table.primary_key.columns)
                    if pk:
                        q = q.order_by(*pk)
                    n = 0
                    result = src.execute(q)
                    target_columns = set(model_table.c.keys())
                    while batch := result.fetchmany(BATCH):
                        rows = [_aware({k: v for k, v in r._mapping.items() if k in target_columns}) for r in batch]
                        dst.execute(model_table.insert(), rows)
                        n += len(rows)
                    counts[model_table.name] = n
                if target.dialect.name == "postgresql":
                    _advance_sequences(dst)
    return counts


def _advance_sequences(conn) -> None:
    for table in Base.metadata.sorted_tables:
        if "id" not in table.c or not table.c.id.primary_key:
            continue
        seq = conn.execute(text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table.name}).scalar()
        if seq:
            top = conn.execute(select(func.max(table.c.id))).scalar()
            if top:
                conn.execute(text("SELECT setval(:s, :v)"), {"s": seq, "v": int(top)})


def _dialeval_version() -> str:
    from .. import __version__

    return __version__


def backup(source_url: str, study_id: int, dest: Path) -> dict[str, int]:
    """Write a consistent copy of the study to the SQLite file `dest` (which must not exist)."""
    dest = Path(dest)
    if dest.exists():
        raise StoreError(f"{dest} already exists; choose a new file for the backup")
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = make_engine(source_url)
    try:
        path = _url_path(source)
        if path:
            # SQLite's online backup: pages copied under a read snapshot, committed WAL included
            src = sqlite3.connect(path, timeout=30)
            dst = sqlite3.connect(str(dest))
            try:
                with dst:
                    src.backup(dst)
            finally:
                src.close()
                dst.close()
            copied = make_engine(f"sqlite:///{dest}")
            try:
                with copied.connect() as c:
                    return {
                        t: int(c.execute(text(f"SELECT count(*) FROM {t}")).scalar_one())
                        for t in ("studies", "annotators", "assignments", "judgments")
                    }
            finally:
                copied.dispose()
        target = make_engine(f"sqlite:///{dest}")
        try:
            return copy_study(source, target, study_id)
        finally:
            target.dispose()
    finally:
        source.dispose()


def study_id_in(url: str, name: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as c:
            found = c.execute(text("SELECT id FROM studies WHERE name = :n"), {"n": name}).scalar()
    finally:
        engine.dispose()
    if found is None:
        raise StoreError(f"no study named '{name}' in {url.split('?')[0]}")
    return int(found)


def study_uid_in(url: str, name: str) -> str | None:
    """The stable folder id (config `study_uid`) stored with the study, if any."""
    from sqlalchemy.orm import Session

    from .schema import Study

    engine = make_engine(url)
    try:
        with Session(engine) as s:
            row = s.scalar(select(Study).where(Study.name == name))
            return (row.config or {}).get("study_uid") if row is not None else None
    finally:
        engine.dispose()


def copy_between(source_url: str, target_url: str, study_name: str, prepared_only: bool = False) -> dict[str, int]:
    """Copy the study named `study_name` from one database URL to another (restore, migrate)."""
    sid = study_id_in(source_url, study_name)
    source, target = make_engine(source_url), make_engine(target_url)
    try:
        return copy_study(source, target, sid, prepared_only)
    finally:
        source.dispose()
        target.dispose()
