"""work.get_annotator_and_resume_rows (the task page's one statement) reads what get_annotator and
resume_assignment's own read give, for every state an annotator's assignments can be in, on SQLite
and PostgreSQL; resume_assignment decides the same from either."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dialeval import clock
from dialeval.records import Unit
from dialeval.store import Store, work
from tests.conftest import first_words, statements_seen


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'dialeval.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = Store(url)
    yield s
    s.close()


def test_one_statement_reads_what_the_two_reads_read(store):
    sid = store.ensure_study("resume", "acute").id
    other_sid = store.ensure_study("resume-other", "acute").id
    for study in (sid, other_sid):
        work.add_units(store, study, "acute", [Unit(id=f"u{i}", kind="acute", conversation_ids=[]) for i in range(4)])
    units = [u.id for u in work.list_units(store, sid)]
    other_unit = work.list_units(store, other_sid)[0].id
    people = {name: store.get_or_create_annotator(sid, name).id for name in ("none", "open", "done+open", "expired")}

    def assign(person: int, unit: int, study: int = sid, minutes: float = 30) -> int:
        with store.locked(study) as s:
            return work.create_assignment(
                s, study, unit, person, shown_order=["b", "a"], expires_at=clock.now() + timedelta(minutes=minutes)
            ).id

    assign(people["open"], units[0])
    work.submit_assignment(store, assign(people["done+open"], units[1]))
    assign(people["done+open"], units[2])
    assign(people["done+open"], other_unit, study=other_sid)  # another study's: never resumed here
    assign(people["expired"], units[3], minutes=-5)
    with store.locked(sid) as s:
        assert work.expire_assignments(s, sid) == 1

    def two_reads(person: int):
        with store.read_connection() as conn:
            rows = [
                work._assignment_from_columns(r)
                for r in conn.execute(work._RESUME_ROWS, {"study_id": sid, "annotator_id": person})
            ]
        return work.get_annotator(store, person), rows

    seen_rows = 0
    for name, person in people.items():
        annotator, rows = work.get_annotator_and_resume_rows(store, person, sid)
        expected_annotator, expected_rows = two_reads(person)
        assert annotator == expected_annotator, name
        assert rows == expected_rows, name
        seen_rows += len(rows)
        expires = clock.now() + timedelta(minutes=30)
        now = clock.now()
        # from the rows read with the annotator, then by its own read (the first revives an expired
        # one, so the second finds it open): the same assignment
        first, _notice = work.resume_assignment(store, sid, person, expires, now, rows=rows)
        again, _ = work.resume_assignment(store, sid, person, expires, now)
        assert (first and first.id) == (again and again.id), name
        assert (first is None) == (name == "none"), name
    assert seen_rows == 3  # the open ones (the latest too) and the expired latest; no other study's
    assert work.get_annotator_and_resume_rows(store, 10**9, sid) == (None, [])


def test_the_progress_count_comes_with_the_session_read_until_a_write(store):
    """With `count_kind`, the same statement counts the annotator's submitted units of that kind
    (the task page's progress header): submitted_count answers from it within the thread's shared
    reads, with what its own statement counts; a write in the block drops it, and outside shared
    reads nothing is kept."""
    sid = store.ensure_study("progress", "acute").id
    work.add_units(
        store,
        sid,
        "acute",
        [Unit(id=f"u{i}", kind="acute" if i < 3 else "acute-onboarding", conversation_ids=[]) for i in range(4)],
    )
    units = {u.external_id: u.id for u in work.list_units(store, sid)}
    person = store.get_or_create_annotator(sid, "p").id
    other = store.get_or_create_annotator(sid, "q").id

    def assign(who: int, unit: int) -> int:
        with store.locked(sid) as s:
            return work.create_assignment(
                s, sid, unit, who, shown_order=None, expires_at=clock.now() + timedelta(minutes=30)
            ).id

    for unit in ("u0", "u1", "u3"):  # two of the kind, one practice: submitted
        work.submit_assignment(store, assign(person, units[unit]))
    assign(person, units["u2"])  # open: not counted
    work.submit_assignment(store, assign(other, units["u0"]))  # somebody else's

    with statements_seen(store.engine) as sent:

        def selects() -> int:
            return first_words(sent).count("SELECT")

        with store.shared_reads():
            annotator, rows = work.get_annotator_and_resume_rows(store, person, sid, count_kind="acute")
            assert annotator is not None and [r.unit_id for r in rows] == [units["u2"]]
            before = selects()
            assert work.submitted_count(store, sid, person, "acute") == 2
            assert selects() == before  # from the session read
            assert work.submitted_count(store, sid, person, "acute-onboarding") == 1  # another kind: read
            assert selects() == before + 1
            work.submit_assignment(store, rows[0].id)  # a write: what was noted is gone
            assert work.submitted_count(store, sid, person, "acute") == 3
            assert selects() == before + 2
        # outside shared reads nothing is kept
        work.get_annotator_and_resume_rows(store, other, sid, count_kind="acute")
        before = selects()
        assert work.submitted_count(store, sid, other, "acute") == 1
        assert selects() == before + 1
    # the same rows and annotator as without the count
    assert work.get_annotator_and_resume_rows(store, person, sid, count_kind="acute") == (
        work.get_annotator_and_resume_rows(store, person, sid)
    )
