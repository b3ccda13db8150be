"""Opening a database: SQLite (WAL, busy timeout, foreign keys) by default, PostgreSQL by URL."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from .. import json_text
from ..errors import StoreBusy, StoreError

DEFAULT_DB_NAME = "dialeval.db"
DATABASE_URL_ENV = "DIALEVAL_DATABASE_URL"
POOL_SIZE_ENV = "DIALEVAL_DB_POOL_SIZE"  # connections per process (serve sets it from --db-connections)
POOL_TIMEOUT_ENV = "DIALEVAL_DB_POOL_TIMEOUT"  # seconds a request waits for a free one (then 503)
DEFAULT_POOL_SIZE = 10
MAX_POOL_SIZE = 20  # a worker runs at most ~40 blocking calls at once; more connections do not help
RESERVED_CONNECTIONS = 10  # left to psql, backups, migrations and other clients

# The database is busy, not wrong: no pooled connection free in time (PoolTimeoutError), a lock held
# too long (StoreBusy), the server unreachable or out of connections (OperationalError). Repeating the
# request is safe; the web app answers these with 503 + Retry-After, so it needs no SQLAlchemy import.
BUSY_ERRORS: tuple[type[Exception], ...] = (StoreBusy, PoolTimeoutError, OperationalError)


def pool_settings() -> tuple[int, float]:
    """(connections per process, seconds to wait for one) from the environment."""
    try:
        size = int(os.environ.get(POOL_SIZE_ENV) or DEFAULT_POOL_SIZE)
        timeout = float(os.environ.get(POOL_TIMEOUT_ENV) or 10)
    except ValueError as exc:
        raise StoreError(f"{POOL_SIZE_ENV} / {POOL_TIMEOUT_ENV} must be numbers: {exc}") from exc
    return max(1, size), max(0.1, timeout)


def connection_budget(engine: Engine, workers: int, total: int | None = None) -> int:
    """Connections per worker process: `total` (serve --db-connections) divided over the workers;
    by default the server's max_connections minus its superuser reserve, the connections already
    open (other clients) and RESERVED_CONNECTIONS. SQLite has no such limit."""
    workers = max(1, workers)
    if total is None:
        if engine.dialect.name != "postgresql":
            return MAX_POOL_SIZE
        with engine.connect() as c:
            max_conn = int(c.exec_driver_sql("SHOW max_connections").scalar_one())
            reserved = int(c.exec_driver_sql("SHOW superuser_reserved_connections").scalar_one())
            in_use = int(
                c.exec_driver_sql(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                ).scalar_one()
            )
        total = max_conn - reserved - in_use - RESERVED_CONNECTIONS
    if total < workers:
        raise StoreError(
            f"a connection budget of {total} cannot give each of {workers} workers one "
            f"connection; lower --workers or raise the server's max_connections"
        )
    return max(1, min(MAX_POOL_SIZE, total // workers))


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
            return "postgresql+psycopg://" + url[len(prefix) :]
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


# JSON columns written and read through msgspec (json_text): the same values as the standard
# library's json, at a few times its speed (a million judgments' value and meta in an import or a
# report; every answer a serve worker stores)
_JSON_CODEC = {"json_serializer": json_text.dumps, "json_deserializer": json_text.loads}


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=20,
            max_overflow=20,
            **_JSON_CODEC,
        )
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
        size, timeout = pool_settings()
        # A fixed pool (no overflow): the process never opens more than its share of the budget;
        # a request that finds none free waits `timeout` s, then gets 503 + Retry-After.
        engine = create_engine(url, pool_size=size, max_overflow=0, pool_timeout=timeout, **_JSON_CODEC)
        _ping_when_idle(engine)
        return engine
    raise StoreError(f"unsupported database URL {url!r}: use sqlite:///path.db or postgresql://user@host/db")


# A pooled PostgreSQL connection idle this long is pinged before use. SQLAlchemy's pool_pre_ping
# pings at every checkout: a round trip per transaction, three per ACUTE answer and task page under
# load, where every connection is a few milliseconds old. A connection that idled (a restarted
# server, a firewall's or idle_session_timeout's cut) is still checked before a request uses it; one
# the server drops while busy fails that request with a 503 the client may repeat (BUSY_ERRORS) and
# SQLAlchemy replaces the pool's connections.
PING_AFTER_IDLE_S = 5.0


def _ping_when_idle(engine: Engine) -> None:
    """Pessimistic disconnect handling for idle connections only (SQLAlchemy's documented pool
    events: a DisconnectionError raised at checkout makes the pool discard the connection and take
    another)."""

    @event.listens_for(engine, "checkin")
    def _idle_from_now(_dbapi_connection, record) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection, record, _proxy) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return  # new, or in use a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # noqa: BLE001 - any failure means: not usable
            raise DisconnectionError(f"a pooled connection idle for {time.monotonic() - since:.0f} s is gone") from exc


def check_connection(engine: Engine) -> None:
    try:
        with engine.connect():
            pass
    except OperationalError as exc:
        raise StoreError(
            f"cannot open the database {engine.url.render_as_string(hide_password=True)}: {exc.orig}"
        ) from exc
