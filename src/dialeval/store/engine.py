"""Opening a database: SQLite (WAL, busy timeout, foreign keys) by default, PostgreSQL by URL."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import OperationalError

from ..errors import StoreError

DEFAULT_DB_NAME = "dialeval.db"
DATABASE_URL_ENV = "DIALEVAL_DATABASE_URL"


def database_url(study_dir: str | Path | None = None, configured: str | None = None) -> str:
    """The database of a study: the study file's URL, else $DIALEVAL_DATABASE_URL, else dialeval.db in the folder."""
    if configured:
        return normalize_url(configured)
    env = os.environ.get(DATABASE_URL_ENV)
    if env:
        return normalize_url(env)
    folder = Path(study_dir or ".")
    return f"sqlite:///{(folder / DEFAULT_DB_NAME).resolve()}"


def normalize_url(url: str) -> str:
    # People paste libpq URLs; SQLAlchemy needs the driver named to use psycopg 3.
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
    cursor.execute("PRAGMA busy_timeout=30000")  # several workers share one file
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


READ_ONLY = "dialeval_read_only"  # execution option of Store.read() sessions


def _sqlite_begin(conn) -> None:
    # A writing transaction takes the write lock at BEGIN so two workers never both read-then-write
    # the same rows (the scheduler relies on it); pysqlite's own deferred BEGIN is switched off
    # below. A read-only one (Store.read) begins deferred: in WAL mode readers never wait for the
    # writer, so page views and lookups do not queue behind every commit.
    if conn.get_execution_options().get(READ_ONLY):
        conn.exec_driver_sql("BEGIN")
    else:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                               pool_size=20, max_overflow=20)
        event.listen(engine, "connect", _sqlite_pragmas)

        @event.listens_for(engine, "connect")
        def _no_pysqlite_begin(dbapi_connection, _record):
            dbapi_connection.isolation_level = None

        event.listen(engine, "begin", _sqlite_begin)
        return engine
    if url.startswith("postgresql"):
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise StoreError("PostgreSQL needs psycopg 3: pip install 'dialeval[postgres]'") from exc
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    raise StoreError(f"unsupported database URL {url!r}: use sqlite:///path.db or postgresql://user@host/db")


def check_connection(engine: Engine) -> None:
    try:
        with engine.connect():
            pass
    except OperationalError as exc:
        raise StoreError(f"cannot open the database {engine.url.render_as_string(hide_password=True)}: "
                         f"{exc.orig}") from exc
