"""What every worker and host must share lives in the database: the rate-limit buckets and the
study's secrets. Two Store objects on one database stand for two hosts."""

from __future__ import annotations

import pytest

from dialeval.store.store import Store


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    a, b = Store(url), Store(url)
    yield a, b
    a.close()
    b.close()


def test_rate_limit_counts_across_hosts(two_stores):
    a, b = two_stores
    results = [(a if i % 2 else b).take_token("s1:7:send", rate=0.5, burst=3, now=1000.0) for i in range(4)]
    assert [ok for ok, _ in results] == [True, True, True, False]  # 3 in all, not 3 per host
    assert results[-1][1] == pytest.approx(2.0)  # one token per 2 s
    assert a.take_token("s1:7:send", rate=0.5, burst=3, now=1002.0)[0]  # refilled
    assert b.take_token("s1:8:send", rate=0.5, burst=3, now=1000.0)[0]  # another annotator's own bucket


def test_secret_is_made_once_and_shared(two_stores):
    a, b = two_stores
    study = a.ensure_study("s", "acute")
    first = a.study_secret(study.id, "secret", lambda: "made-by-a")
    second = b.study_secret(study.id, "secret", lambda: "made-by-b")
    assert first == second == "made-by-a"
