"""work.unit_load_cached (the per-process unit load used by scheduling.assign_locked) equals the full
count of work.unit_load after every kind of change, made through another Store (another process's
view of the same database): new assignments, submitted, expired, revived, abandoned, returned; and so
do the sums per key kept from it (work.load_totals) and the expiry of the open ones it keeps (expire_due)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dialeval import clock
from dialeval.records import Unit
from dialeval.store import Store, work
from tests.conftest import statements_seen


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


def assign(store: Store, sid: int, unit: int, person: int, minutes: float = 30) -> int:
    """A new assignment through `store` (another process's view), expiring `minutes` from now."""
    with store.locked(sid) as s:
        return work.create_assignment(
            s, sid, unit, person, shown_order=None, expires_at=clock.now() + timedelta(minutes=minutes)
        ).id


def test_cached_load_follows_every_change(two_stores):
    mine, other = two_stores
    sid = mine.ensure_study("load-cache", "acute").id
    work.add_units(mine, sid, "acute", [Unit(id=f"u{i}", kind="acute", conversation_ids=[]) for i in range(3)])
    units = [u.id for u in work.list_units(mine, sid)]
    people = [mine.get_or_create_annotator(sid, f"p{i}").id for i in range(4)]

    def check():
        with mine.locked(sid) as s:
            cached = {u: dict(v) for u, v in work.unit_load_cached(s, mine, sid).items() if any(v.values())}
            full = work.unit_load(s, sid)
            assert cached == full
            # the kept sums per key follow the same changes
            sums = work.load_totals(mine, sid, "parity", lambda u: [u % 2], token=check)
            expected: dict[int, int] = {}
            for u, v in full.items():
                expected[u % 2] = expected.get(u % 2, 0) + v["submitted"] + v["assigned"]
            assert {k: n for k, n in sums.items() if n} == {k: n for k, n in expected.items() if n}

    check()  # empty
    a0 = assign(other, sid, units[0], people[0])
    a1 = assign(other, sid, units[0], people[1])
    check()
    work.submit_assignment(other, a0)
    check()
    late = assign(other, sid, units[1], people[2], minutes=-1)  # already past its expiry
    check()
    with other.locked(sid) as s:
        assert work.expire_assignments(s, sid) == 1
    check()  # expired: no longer counted
    assert work.revive_assignment(other, sid, late, clock.now() + timedelta(minutes=30))
    check()  # revived: counted again
    assert work.mark_returned(other, sid, people[2]) == 1
    check()
    assign(mine, sid, units[2], people[3])  # this process's own assignment
    work.submit_assignment(other, a1)
    check()


def test_expire_due_reads_only_the_overdue_and_rechecks_on_demand(two_stores):
    mine, other = two_stores
    sid = mine.ensure_study("expire-due", "acute").id
    work.add_units(mine, sid, "acute", [Unit(id=f"u{i}", kind="acute", conversation_ids=[]) for i in range(2)])
    units = [u.id for u in work.list_units(mine, sid)]
    people = [mine.get_or_create_annotator(sid, f"p{i}").id for i in range(2)]
    # another process: one already overdue, one for 30 minutes
    late = assign(other, sid, units[0], people[0], minutes=-1)
    fresh = assign(other, sid, units[1], people[1])
    with mine.locked(sid) as s:
        work.unit_load_cached(s, mine, sid)
        assert work.expire_due(s, mine, sid) == 1
    with mine.locked(sid) as s:
        load = work.unit_load_cached(s, mine, sid)
        assert load[units[0]]["assigned"] == 0 and load[units[1]]["assigned"] == 1
        assert work.expire_due(s, mine, sid) == 0
    # an expiry set back by hand: not in the kept expiries, found by a recheck
    with other.session() as s:
        from dialeval.store.schema import AssignmentRow

        s.get(AssignmentRow, fresh).expires_at = clock.now() - timedelta(minutes=1)
    with mine.locked(sid) as s:
        work.unit_load_cached(s, mine, sid)
        assert work.expire_due(s, mine, sid) == 0
        assert work.expire_due(s, mine, sid, recheck=True) == 1
    with mine.locked(sid) as s:
        assert {u: dict(v) for u, v in work.unit_load_cached(s, mine, sid).items() if any(v.values())} == {}
        assert work.unit_load(s, sid) == {}
    statuses = {a.id: a.status for a in work.annotator_assignments(mine, sid, people[0], include_expired=True)}
    assert statuses == {late: "expired"}


def test_annotator_assignments_and_units_mark_in_one_read(two_stores):
    """annotator_assignments_and_load (what the scheduler reads under the lock) gives the
    assignments and mark that annotator_assignments(include_expired=True) and units_mark give apart,
    with or without assignments, and a mark that sees a unit another process added."""
    mine, other = two_stores
    sid = mine.ensure_study("marked", "acute").id
    work.add_units(mine, sid, "acute", [Unit(id=f"u{i}", kind="acute", conversation_ids=[]) for i in range(3)])
    units = [u.id for u in work.list_units(mine, sid)]
    person, stranger = (mine.get_or_create_annotator(sid, name).id for name in ("p", "q"))

    def both_ways(annotator: int):
        with mine.locked(sid) as s:
            apart = (work.annotator_assignments(s, sid, annotator, include_expired=True), work.units_mark(s, sid))
            assert work.annotator_assignments_and_load(s, mine, sid, annotator)[:2] == apart
            return apart

    assert both_ways(person) == ([], (3, max(units)))
    first = assign(other, sid, units[0], person)
    late = assign(other, sid, units[1], person, minutes=-1)
    assign(other, sid, units[2], stranger)
    with other.locked(sid) as s:
        assert work.expire_assignments(s, sid) == 1
    work.submit_assignment(other, first)
    work.add_units(other, sid, "acute", [Unit(id="u9", kind="acute", conversation_ids=[])])
    history, mark = both_ways(person)
    assert [(a.id, a.status) for a in history] == [(first, "submitted"), (late, "expired")]
    assert mark == (4, max(u.id for u in work.list_units(mine, sid)))


def kept_open_then_closed(mine: Store, other: Store, name: str, n: int) -> tuple[int, list[int], list[int]]:
    """A study of `n` units and `n` annotators; an assignment of the first unit that `mine` keeps
    as open, then submitted through `other`. (study id, unit ids, annotator ids)"""
    sid = mine.ensure_study(name, "acute").id
    work.add_units(mine, sid, "acute", [Unit(id=f"u{i}", kind="acute", conversation_ids=[]) for i in range(n)])
    units = [u.id for u in work.list_units(mine, sid)]
    people = [mine.get_or_create_annotator(sid, f"p{i}").id for i in range(n)]
    first = assign(other, sid, units[0], people[0])
    with mine.locked(sid) as s:
        work.unit_load_cached(s, mine, sid)  # keeps `first` as open
    work.submit_assignment(other, first)
    return sid, units, people


def selects_of(statements: list[str]) -> list[str]:
    return [s for s in statements if s.lstrip().upper().startswith(("SELECT", "(SELECT"))]


def test_new_and_closed_assignments_are_one_read(two_stores):
    """Bringing the kept load up to date reads the new assignments and the kept open ones that
    closed in one statement (on SQLite too: each statement inside the write lock is a wait for the
    GIL), and finds both: the submitted one moves, the new one counts."""
    mine, other = two_stores
    sid, units, people = kept_open_then_closed(mine, other, "load-one-read", 2)
    assign(other, sid, units[1], people[1])
    with mine.locked(sid) as s, statements_seen(mine.engine) as sent:
        load = work.unit_load_cached(s, mine, sid)
    selects = selects_of(sent)
    assert load[units[0]] == {"submitted": 1, "assigned": 0}
    assert load[units[1]] == {"submitted": 0, "assigned": 1}
    assert len(selects) == 1, selects


def test_the_load_changes_read_with_the_annotator_s_assignments_are_applied_without_a_read(two_stores):
    """annotator_assignments_and_load reads the annotator's assignments, the units mark and the
    kept load's changes in one statement; unit_load_cached then applies those
    changes without a statement of its own and gives the full count. Changes read ahead but no
    longer matching the kept load (another call brought it up to date meanwhile) are not used."""
    mine, other = two_stores
    sid, units, people = kept_open_then_closed(mine, other, "load-ahead", 3)
    mine_open = assign(other, sid, units[1], people[1])
    with mine.locked(sid) as s:
        with statements_seen(mine.engine) as sent:
            everything, mark, ahead = work.annotator_assignments_and_load(s, mine, sid, people[1])
            load = work.unit_load_cached(s, mine, sid, read_ahead=ahead)
        selects = selects_of(sent)
        assert {u: dict(v) for u, v in load.items() if any(v.values())} == work.unit_load(s, sid)
    assert [a.id for a in everything] == [mine_open] and mark == (3, max(units))
    assert ahead is not None and len(selects) == 1, selects  # the one statement, nothing after it
    # read ahead, then the kept load moves on before it is used: the stale changes are not applied
    assign(other, sid, units[2], people[2])
    with mine.locked(sid) as s:
        _, _, stale = work.annotator_assignments_and_load(s, mine, sid, people[2])
        work.unit_load_cached(s, mine, sid)  # brings the kept load up to date first
    assign(other, sid, units[2], people[0])  # a change the stale read never saw
    with mine.locked(sid) as s:
        load = work.unit_load_cached(s, mine, sid, read_ahead=stale)
        assert {u: dict(v) for u, v in load.items() if any(v.values())} == work.unit_load(s, sid)
