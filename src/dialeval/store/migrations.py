"""Schema versions and the steps between them, so a study made by an older dialeval still opens.

Each step takes a connection inside a transaction and moves the schema up by one version.
Version 1 (dialeval 0.0.x pre-releases) had no events table and no assignments.state column.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, inspect, text

from ..errors import StoreError
from .schema import SCHEMA_VERSION, SHARED_TABLES, Base, EventRow


def _v1_to_v2(conn: Connection) -> None:
    EventRow.__table__.create(conn, checkfirst=True)
    columns = {c["name"] for c in inspect(conn).get_columns("assignments")}
    if "state" not in columns:
        conn.execute(text("ALTER TABLE assignments ADD COLUMN state JSON"))
        conn.execute(text("UPDATE assignments SET state = '{}'"))


# MIGRATIONS[v] moves a database from version v to v + 1.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2}


def current_version(conn: Connection) -> int | None:
    """The stored schema version, or None for an empty database."""
    tables = set(inspect(conn).get_table_names())
    if "dialeval_schema" not in tables:
        if "studies" in tables:
            raise StoreError("this database has dialeval tables but no schema version; it was not made by dialeval")
        return None
    row = conn.execute(text("SELECT version FROM dialeval_schema WHERE id = 1")).first()
    return int(row[0]) if row else None


def add_shared_tables(conn: Connection) -> None:
    """Create the tables of schema.SHARED_TABLES that a database lacks (new tables only, never a
    change to an existing one, so no version step is needed and older dialevals ignore them)."""
    tables = [Base.metadata.tables[model.__tablename__] for model in SHARED_TABLES]
    Base.metadata.create_all(conn, tables=tables, checkfirst=True)


def upgrade(conn: Connection, dialeval_version: str) -> int:
    """Create or migrate the schema to SCHEMA_VERSION; returns the version found before."""
    found = current_version(conn)
    if found is None:
        Base.metadata.create_all(conn)
        conn.execute(
            text("INSERT INTO dialeval_schema (id, version, dialeval_version) VALUES (1, :v, :d)"),
            {"v": SCHEMA_VERSION, "d": dialeval_version},
        )
        return 0
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"this database has schema version {found}, newer than this dialeval understands "
            f"({SCHEMA_VERSION}); upgrade dialeval (pip install -U dialeval)"
        )
    for version in range(found, SCHEMA_VERSION):
        MIGRATIONS[version](conn)
    if found < SCHEMA_VERSION:
        conn.execute(
            text("UPDATE dialeval_schema SET version = :v, dialeval_version = :d WHERE id = 1"),
            {"v": SCHEMA_VERSION, "d": dialeval_version},
        )
    add_shared_tables(conn)
    return found
