"""work.get_annotator_and_resume_rows (the task page's one statement) reads what get_annotator and
resume_assignment's own read give, for every state an annotator's assignments can be in, on SQLite
and PostgreSQL; resume_assignment decides the same from either."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dialeval import clock
from dialeval.records import Unit
from dialeval.store import Store, work


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
