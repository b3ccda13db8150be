"""The store: SQLAlchemy schema, migrations and the Store API (SQLite by default, PostgreSQL by URL)."""

from .engine import DATABASE_URL_ENV, database_url
from .schema import SCHEMA_VERSION
from .store import Store

__all__ = ["DATABASE_URL_ENV", "SCHEMA_VERSION", "Store", "database_url"]
