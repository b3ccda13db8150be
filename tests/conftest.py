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
def statements_seen(engine):
    """The SQL statements `engine` sends to the database in the block (a list filled as they go)."""
    from sqlalchemy import event

    seen: list[str] = []

    def record(_conn, _cursor, statement, *_):
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def first_words(statements: list[str]) -> list[str]:
    """Each statement's first word, upper case (SELECT, INSERT, WITH, BEGIN ...)."""
    return [statement.split(None, 1)[0].upper() for statement in statements]


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


# `dialeval demo --simulate N --no-serve`: every method's demo study made and completed by a simulated
# crowd into reports, as a user runs it. Several test files read such a demo (the reports for people,
# the simulated seconds, the judges, the demo command itself); it takes about two minutes, so a test
# run makes it once. scripts/run_tests.py gives its parts (separate pytest processes) one folder,
# DIALEVAL_TEST_SHARED; the first part to ask makes the demo there under a file lock, the others wait
# for it and read it. In `make test` that first one is scripts/check_wheel.py (queued first), whose
# check of the installed wheel runs the same command with the installed `dialeval`
# (check_wheel.simulated_demo, the same lock and folder). A plain pytest run makes it in its own
# temporary folder.
COMPLETED_DEMO_ANNOTATORS = 8  # check_wheel.COMPLETED_DEMO_ANNOTATORS too


@pytest.fixture(scope="session")
def completed_demo(tmp_path_factory) -> Path:
    """The folder of a completed demo (one study folder per method, each with report/). Shared: read
    it, or copy it (shutil.copytree) before anything that writes, such as opening its database."""
    import fcntl
    import shutil
    import subprocess
    import sys

    shared = os.environ.get("DIALEVAL_TEST_SHARED")
    root = Path(shared) if shared else tmp_path_factory.mktemp("shared")
    root.mkdir(parents=True, exist_ok=True)
    out, done = root / "completed-demo", root / "completed-demo.done"
    with (root / "completed-demo.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # a run that died half-way
            made = subprocess.run(
                [sys.executable, "-m", "dialeval.cli", "demo", "--simulate", str(COMPLETED_DEMO_ANNOTATORS)]
                + ["--no-serve", "--out", str(out)],
                capture_output=True,
                text=True,
                timeout=1200,
            )
            assert made.returncode == 0, made.stdout + made.stderr
            done.write_text(made.stdout, encoding="utf-8")
    return out
