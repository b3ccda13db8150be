"""work.unit_load_cached (the per-process unit load used by scheduling.assign_locked) equals the full
count of work.unit_load after every kind of change, made through another Store (another process's
view of the same database): new assignments, submitted, expired, revived, abandoned, returned."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dialeval import clock
from dialeval.records import Unit
from dialeval.store import Store, work


@pytest.fixture(params=["sqlite", "postgres"])
def two_stores(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'dialeval.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    a, b = Store(url), Store(url)
    yield a, b
    a.close()
    b.close()


def test_cached_load_follows_every_change(two_stores):
    mine, other = two_stores
    sid = mine.ensure_study("load-cache", "acute").id
    work.add_units(mine, sid, "acute", [Unit(id=f"u{i}", kind="acute", conversation_ids=[]) for i in range(3)])
    units = [u.id for u in work.list_units(mine, sid)]
    people = [mine.get_or_create_annotator(sid, f"p{i}").id for i in range(4)]

    def assign(store, unit, person, minutes=30):
        with store.locked(sid) as s:
            return work.create_assignment(
                s, sid, unit, person, shown_order=None, expires_at=clock.now() + timedelta(minutes=minutes)
            ).id

    def check():
        with mine.locked(sid) as s:
            cached = {u: dict(v) for u, v in work.unit_load_cached(s, mine, sid).items() if any(v.values())}
            assert cached == work.unit_load(s, sid)

    check()  # empty
    a0 = assign(other, units[0], people[0])
    a1 = assign(other, units[0], people[1])
    check()
    work.submit_assignment(other, a0)
    check()
    late = assign(other, units[1], people[2], minutes=-1)  # already past its expiry
    check()
    with other.locked(sid) as s:
        assert work.expire_assignments(s, sid) == 1
    check()  # expired: no longer counted
    assert work.revive_assignment(other, sid, late, clock.now() + timedelta(minutes=30))
    check()  # revived: counted again
    assert work.mark_returned(other, sid, people[2]) == 1
    check()
    assign(mine, units[2], people[3])  # this process's own assignment
    work.submit_assignment(other, a1)
    check()
