"""Shared fixtures: the published data in ../shared/data and the PostgreSQL test server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("DIALEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


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


@pytest.fixture
def pg_url():
    url = postgres_url()
    if not url:
        if in_ci():
            pytest.fail("DIALEVAL_TEST_POSTGRES_URL is not set; .ci/run sets it to the local server")
        pytest.skip("DIALEVAL_TEST_POSTGRES_URL not set")
    return url
