"""Shared fixtures: the published data in ../shared/data and the PostgreSQL test server."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from dialeval import clock

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Tests (and the CLIs they start) write dialeval's disk cache to a temporary folder, never to
    the user's cache (dialeval.cache)."""
    if "DIALEVAL_CACHE_DIR" not in os.environ:
        os.environ["DIALEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("dialeval-cache"))
    yield


@pytest.fixture(autouse=True)
def _real_clock():
    """A test that moved dialeval's clock (clock.advance, instead of sleeping) leaves it as it was."""
    yield
    clock.reset()


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_shared(relative: str) -> Path:
    """The path of a published data file; missing data fails in CI and skips elsewhere."""
    path = SHARED_DATA / relative
    if not path.exists():
        message = f"published data missing: {path} (set DIALEVAL_SHARED_DATA or put shared/ beside the repo)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def shared_data():
    """Call with a path relative to ../shared/data, e.g. shared_data('spot-the-bot')."""
    return require_shared


def postgres_url() -> str | None:
    return os.environ.get("DIALEVAL_TEST_POSTGRES_URL")


@contextmanager
def fresh_schema():
    """A PostgreSQL URL whose search_path is a fresh schema, dropped on leaving.

    Tests (and parallel test runs) never see each other's tables.
    """
    url = postgres_url()
    if not url:
        if in_ci():
            pytest.fail("DIALEVAL_TEST_POSTGRES_URL is not set; .ci/run sets it to the local server")
        pytest.skip("DIALEVAL_TEST_POSTGRES_URL not set")
    import uuid

    import psycopg

    plain = url.replace("postgresql+psycopg://", "postgresql://")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in plain else "?"
    try:
        yield f"{plain}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL schema for one test (fresh_schema)."""
    with fresh_schema() as url:
        yield url


def _no_nan(constant: str):
    raise ValueError(f"{constant} in JSON: a report must hold no NaN or infinity (use null)")


def strict_json_loads(text: str):
    """json.loads that refuses NaN / Infinity, which json.dumps writes by default and json.loads
    accepts by default: a report read back with this cannot hide a NaN."""
    import json

    return json.loads(text, parse_constant=_no_nan)
