"""The store on a real SQLite file and on the real PostgreSQL server."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from dialeval.errors import StoreError
from dialeval.records import Annotator, Conversation, Dataset, Judgment, Turn, Unit
from dialeval.store import Store
from tests.conftest import first_words, statements_seen


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'dialeval.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    s = Store(url)
    yield s
    s.close()


def small_dataset() -> Dataset:
    conv = Conversation(
        id="c1",
        bots=["alpha", "beta"],
        source="bot-bot",
        turns=[
            Turn("entity0", "hello", is_seed=True),
            Turn("entity1", "hi there", bot="beta"),
            Turn(
                "entity0",
                "pick me",
                bot="alpha",
                candidates=[{"bot": "alpha", "text": "pick me"}, {"bot": "beta", "text": "no me"}],
                chosen=0,
            ),
        ],
        meta={"personas": [["I like tea."], ["I run."]]},
    )
    return Dataset(
        method="spot-the-bot",
        conversations=[
            conv,
            Conversation(id="c2", bots=["human", "human"], turns=[Turn("entity0", "yo")], source="human"),
        ],
        annotators=[Annotator("w1", platform="mturk")],
        units=[Unit("p1", "stb-package", ["c1", "c2"], {"segments": [{"conversation_id": "c1", "exchanges": 2}]})],
        judgments=[
            Judgment(
                "w1",
                "p1",
                "segment",
                {"entity0": "bot", "entity1": "human"},
                conversation_id="c1",
                elapsed_s=12.5,
                shown_order=["c1"],
            )
        ],
    )


def test_dataset_round_trip(store):
    study = store.ensure_study("s1", "spot-the-bot", {"x": 1})
    counts = store.save_dataset(study.id, small_dataset())
    assert counts == {"conversations": 2, "annotators": 1, "units": 1, "judgments": 1}
    loaded = store.load_dataset(study.id)
    assert loaded.method == "spot-the-bot"
    c1 = loaded.conversation_map()["c1"]
    assert [t.text for t in c1.turns] == ["hello", "hi there", "pick me"]
    assert c1.turns[0].is_seed and c1.turns[1].bot == "beta"
    assert c1.turns[2].candidates[1]["text"] == "no me" and c1.turns[2].chosen == 0
    assert c1.meta["personas"][1] == ["I run."]
    j = loaded.judgments[0]
    assert (j.annotator_id, j.unit_id, j.conversation_id, j.elapsed_s) == ("w1", "p1", "c1", 12.5)
    assert j.value == {"entity0": "bot", "entity1": "human"} and j.shown_order == ["c1"]
    # Re-importing keeps what exists (no duplicate conversations) and adds judgments.
    again = store.save_dataset(study.id, small_dataset())
    assert again["conversations"] == 0 and again["judgments"] == 1


def test_json_values_read_back_as_they_went_in_by_each_write_path(store):
    # JSON columns are written by msgspec (json_text): an ORM row, a streamed bulk insert, and
    # (PostgreSQL) COPY; every value reads back equal, integers past 64 bits and non-ASCII included
    from dataclasses import replace

    value = {
        "big": 2**70,
        "neg": -(2**63) - 1,
        "f": [0.1, -0.0, 1e-300],
        "text": "\u00e9 \U0001f600 <script>alert(1)</script> [x](javascript:alert(1))",
        "nested": {"a": [None, True, {"b": "\n\t"}]},
    }
    meta = {"note": "caf\u00e9", "k": {"1": 2}}
    study = store.ensure_study("json", "spot-the-bot", {})
    base = small_dataset()
    judgment = replace(base.judgments[0], value=value, meta=meta, shown_order=["c1", "\u00e9"])
    store.save_dataset(study.id, replace(base, judgments=[judgment]))
    streamed = Judgment("w2", None, "overall", value, meta=meta, shown_order=["a", "b"])
    store.save_stream(study.id, [(Annotator("w2", platform="import"), streamed, [])], lambda counts: {"ok": 1})
    got = store.load_dataset(study.id).judgments
    stored_meta = [{k: v for k, v in j.meta.items() if k not in ("judgment_id", "assignment_id")} for j in got]
    assert [j.value for j in got] == [value, value] and stored_meta == [meta, meta]
    assert [j.shown_order for j in got] == [["c1", "\u00e9"], ["a", "b"]]
    assert type(got[1].value["big"]) is int and got[1].value["f"][1] == 0.0


def test_failed_import_stores_nothing(store):
    study = store.ensure_study("s2", "acute")
    bad = small_dataset()
    bad.judgments.append(Judgment("nobody", None, "q", {}))
    with pytest.raises(StoreError, match="unknown annotator 'nobody'"):
        store.save_dataset(study.id, bad)
    assert store.counts(study.id) == {"conversations": 0, "annotators": 0, "units": 0, "judgments": 0}


def test_judgment_resubmission_is_harmless(store):
    study = store.ensure_study("s3", "acute")
    ann = store.get_or_create_annotator(study.id, "w9", "prolific")
    first = store.add_judgment(study.id, ann.id, "preference", {"winner": "a"}, client_request_id="req-1")
    second = store.add_judgment(study.id, ann.id, "preference", {"winner": "a"}, client_request_id="req-1")
    assert first[1] is True and second == (first[0], False)
    other = store.get_or_create_annotator(study.id, "w10")
    third = store.add_judgment(study.id, other.id, "preference", {"winner": "b"}, client_request_id="req-1")
    assert third[1] is True  # request ids are per annotator
    assert store.counts(study.id)["judgments"] == 2


def test_concurrent_identical_submissions_store_one(store):
    study = store.ensure_study("s4", "acute")
    ann = store.get_or_create_annotator(study.id, "w1")
    results = []

    def submit():
        results.append(store.add_judgment(study.id, ann.id, "q", {"v": 1}, client_request_id="same"))

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r[0] for r in results}) == 1
    assert sum(created for _, created in results) == 1
    assert store.counts(study.id)["judgments"] == 1


def test_an_annotator_is_registered_once_in_one_statement_and_found_after(store):
    """get_or_create_annotator: a new id is one INSERT ... ON CONFLICT DO NOTHING RETURNING (with
    its platform and meta); the same id again finds the first row and changes nothing; eight
    threads registering one new id at once get one row."""

    study = store.ensure_study("s-register", "acute")
    with statements_seen(store.engine) as sent:
        made = store.get_or_create_annotator(study.id, "w1", "prolific", {"session_nonce": "n1"})
    statements = first_words(sent)
    assert [s for s in statements if s not in ("BEGIN",)] == ["INSERT"], statements
    assert (made.external_id, made.platform, made.status, made.meta, made.study_id) == (
        "w1",
        "prolific",
        "active",
        {"session_nonce": "n1"},
        study.id,
    )
    again = store.get_or_create_annotator(study.id, "w1", "link", {"session_nonce": "n2"})
    assert again == made  # found, not changed
    results = []

    def register():
        results.append(store.get_or_create_annotator(study.id, "w2", "link").id)

    threads = [threading.Thread(target=register) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and len(set(results)) == 1
    assert store.counts(study.id)["annotators"] == 2


def test_annotator_flagged_not_deleted(store):
    study = store.ensure_study("s5", "acute")
    ann = store.get_or_create_annotator(study.id, "w1")
    store.add_judgment(study.id, ann.id, "q", {"v": 1})
    store.set_annotator_status(ann.id, "flagged", ["average message < 3 words"])
    data = store.load_dataset(study.id)
    assert data.annotators[0].meta["status"] == "flagged"
    assert data.annotators[0].meta["qc"]["reasons"] == ["average message < 3 words"]
    assert len(data.judgments) == 1


def test_live_turns_append_in_order(store):
    study = store.ensure_study("s6", "single-model")
    store.save_conversation(study.id, Conversation(id="live-1", bots=["eliza"], turns=[], source="live"))
    assert store.append_turn(study.id, "live-1", Turn("human", "Hi!")) == 0
    assert store.append_turn(study.id, "live-1", Turn("bot", "Hello.", bot="eliza")) == 1
    conv = store.get_conversation(study.id, "live-1")
    assert [t.speaker for t in conv.turns] == ["human", "bot"]


def test_study_method_is_fixed(store):
    store.ensure_study("s7", "acute")
    with pytest.raises(StoreError, match="already holds a acute study"):
        store.ensure_study("s7", "spot-the-bot")


def test_sqlite_pragmas(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'x.db'}")
    with s.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 30000
    s.close()


def test_unreachable_postgres_is_a_clear_error():
    with pytest.raises(StoreError, match="cannot open the database"):
        Store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")


def test_report_load_keeps_only_the_turns_a_report_reads(store):
    """load_dataset(all_turns=False), a report whose analysis reads no turn: only turns with a
    reference, a reply shortened at bot_reply_chars (own text or a candidate's); every turn once
    typed-input signals exist (the typing summary then reads every bot text)."""
    from dataclasses import replace

    from dialeval.textclean import CUT_MARKER

    base = small_dataset()
    conv = base.conversations[0]
    kept = [
        Turn("entity1", "cut" + CUT_MARKER, bot="beta"),
        Turn("entity0", "with a reference", bot="alpha", meta={"reference": "the gold reply"}),
        Turn("entity1", "a candidate was cut", bot="beta", candidates=[{"bot": "beta", "text": "x" + CUT_MARKER}]),
    ]
    conv = replace(conv, turns=[*conv.turns, *kept])
    study = store.ensure_study("lean", "spot-the-bot")
    store.save_dataset(study.id, replace(base, conversations=[conv, *base.conversations[1:]]))
    lean = store.load_dataset(study.id, all_turns=False)
    full = store.load_dataset(study.id)
    assert [c.id for c in lean.conversations] == [c.id for c in full.conversations] == ["c1", "c2"]
    assert [c.bots for c in lean.conversations] == [c.bots for c in full.conversations]
    assert [c.meta for c in lean.conversations] == [c.meta for c in full.conversations]
    assert [t.text for t in lean.conversations[0].turns] == [t.text for t in kept]
    assert lean.conversations[0].turns == full.conversations[0].turns[-3:] and lean.conversations[1].turns == []
    assert [j.value for j in lean.judgments] == [j.value for j in full.judgments]

    typed = store.ensure_study("typed", "spot-the-bot")
    said = Turn("entity0", "typed by a person", meta={"input": {"chars": 17, "typed": 17}})
    store.save_dataset(typed.id, replace(base, conversations=[replace(conv, turns=[*conv.turns, said])]))
    assert len(store.load_dataset(typed.id, all_turns=False).conversations[0].turns) == len(conv.turns) + 1


def test_shared_reads_are_one_transaction_and_see_the_block_s_own_writes(store):
    """Store.shared_reads: the thread's reads share one read transaction; a write in the block ends
    it, so the next read sees the write; a failed statement ends it too, and the next read works."""
    from sqlalchemy import event
    from sqlalchemy.exc import DBAPIError

    from dialeval.store import work

    study = store.ensure_study("s1", "spot-the-bot", {})
    store.save_dataset(study.id, small_dataset())
    with store.read_connection() as conn:
        annotator_id = conn.execute(text("SELECT id FROM annotators")).scalar_one()
    begins = []
    event.listen(store.engine, "begin", lambda conn: begins.append(1))
    with store.shared_reads():
        for _ in range(3):
            assert work.get_annotator(store, annotator_id).meta.get("note") is None
        assert len(begins) == 1
        work.update_annotator_meta(store, annotator_id, note="written in the block")  # a write: its own transaction
        assert work.get_annotator(store, annotator_id).meta["note"] == "written in the block"
        with pytest.raises(DBAPIError), store.read_connection() as conn:
            conn.execute(text("SELECT no_such_column FROM annotators"))
        assert work.get_annotator(store, annotator_id).meta["note"] == "written in the block"
    assert len(begins) == 4  # the reads, the write, the reads after it, the read after the failure
    begins.clear()
    work.get_annotator(store, annotator_id)
    assert len(begins) == 1  # outside the block, each read is a transaction of its own, as before


def test_annotator_meta_merges_top_level_keys_and_two_writers_keep_both(store):
    """update_annotator_meta merges top-level keys as {**meta, **new} (a None is kept as null, a
    nested value replaced whole) on both databases -- on PostgreSQL by one statement in autocommit
    -- and writers of different keys at once (two tabs) both keep theirs."""
    from dialeval.store import work

    study = store.ensure_study("s1", "spot-the-bot", {})
    row = store.get_or_create_annotator(study.id, "p1", meta={"entered_as": "link", "nested": {"a": 1}})
    work.update_annotator_meta(store, row.id, consented_at="2026-11-27T10:00:00", nested={"b": 2})
    merged = work.update_annotator_meta(store, row.id, note=None, text='<b>"quoted" é</b>')
    assert (
        work.get_annotator(store, row.id).meta
        == merged
        == {
            "entered_as": "link",
            "nested": {"b": 2},
            "consented_at": "2026-11-27T10:00:00",
            "note": None,
            "text": '<b>"quoted" é</b>',
        }
    )  # it returns the merged meta (the done page shows it without reading the annotator again)
    assert work.update_annotator_meta(store, 10**9, note="nobody") is None
    threads = [
        threading.Thread(target=work.update_annotator_meta, args=(store, row.id), kwargs={f"key{i}": i})
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    meta = work.get_annotator(store, row.id).meta
    assert {k: meta[k] for k in meta if k.startswith("key")} == {f"key{i}": i for i in range(8)}


def test_an_assignment_given_and_submitted_writes_the_same_rows_and_events_on_both_databases(store):
    """Giving an assignment and closing it write the row and its event (on PostgreSQL each pair in
    one statement); the rows, the events' kinds and payloads are the same on both databases, a
    second submit changes nothing and logs nothing, and a submit with state sets it."""
    from datetime import timedelta

    from dialeval import clock
    from dialeval.store import work

    study = store.ensure_study("s1", "acute", {})
    store.save_dataset(study.id, small_dataset())
    person = store.get_or_create_annotator(study.id, "p1").id
    with store.locked(study.id) as s:
        unit = work.create_unit(s, study.id, "u1", "acute", ["c1"], {"k": 1})
        given = work.create_assignment(
            s,
            study.id,
            unit.id,
            person,
            shown_order=["c1"],
            state={"x": 1},
            expires_at=clock.now() + timedelta(minutes=5),
        )
    again = work.get_assignment(store, given.id)
    assert (again.status, again.shown_order, again.state, again.unit_id) == ("assigned", ["c1"], {"x": 1}, unit.id)
    work.submit_assignment(store, given.id)
    work.submit_assignment(store, given.id)  # a repeat: nothing changes, nothing is logged
    work.submit_assignment(store, given.id, state={"passed": True})  # already closed: the state only
    done = work.get_assignment(store, given.id)
    assert done.status == "submitted" and done.submitted_at is not None and done.state == {"passed": True}
    events = [
        (e["kind"], e["annotator_id"], e["payload"])
        for e in work.list_events(store, study.id)
        if "assignment" in e["kind"]
    ]
    assert events == [
        ("assignment-given", person, {"assignment": given.id, "unit": unit.id}),
        ("assignment-submitted", person, {"assignment": given.id}),
    ]


def test_a_judgment_that_submits_its_assignment_writes_the_same_on_both_databases(store):
    """add_judgment(submit=True): the judgment, its assignment closed and the assignment-submitted
    event, on PostgreSQL in one statement (data-modifying CTEs). The same request again stores no
    second judgment, closes nothing again and logs nothing, but still sets a given state; another
    request for the closed assignment stores its judgment and logs nothing."""
    from datetime import timedelta

    from dialeval import clock
    from dialeval.store import work

    study = store.ensure_study("s-judged", "acute", {})
    person = store.get_or_create_annotator(study.id, "p1").id
    with store.locked(study.id) as s:
        unit = work.create_unit(s, study.id, "u1", "acute", [], {})
        given = work.create_assignment(
            s, study.id, unit.id, person, shown_order=None, expires_at=clock.now() + timedelta(minutes=5)
        )

    def answer(request_id: str, state: dict | None = None) -> tuple[int, bool]:
        with store.session() as s:
            return store.add_judgment(
                study.id,
                person,
                "q",
                {"winner": "a"},
                unit_id=unit.id,
                assignment_id=given.id,
                client_request_id=request_id,
                session=s,
                submit=True,
                state=state,
            )

    with statements_seen(store.engine) as sent:
        first = answer("r1")
    statements = first_words(sent)
    if store.is_postgres:
        assert statements == ["WITH"], statements
    else:  # the judgment, the close, its event
        assert statements == ["BEGIN", "INSERT", "UPDATE", "INSERT"], statements
    assert first[1] is True
    assert answer("r1", state={"passed": True}) == (first[0], False)  # a repeat
    second = answer("r2")  # another answer for the closed assignment: stored, nothing closed
    assert second[1] is True and second[0] != first[0]
    done = work.get_assignment(store, given.id)
    assert done.status == "submitted" and done.submitted_at is not None and done.state == {"passed": True}
    submitted = [e for e in work.list_events(store, study.id) if e["kind"] == "assignment-submitted"]
    assert [(e["annotator_id"], e["payload"]) for e in submitted] == [(person, {"assignment": given.id})]
    assert store.counts(study.id)["judgments"] == 2
    stored = {j.id: j for j in work.list_judgments(store, study.id)}
    assert stored[first[0]].value == {"winner": "a"} and stored[first[0]].assignment_id == given.id


def test_a_step_s_progress_is_stored_with_its_judgment_and_moves_the_expiry_only_while_open(store):
    """add_judgment(state=..., expires_at=...) (a step of a multi-step unit, e.g. a Spot The Bot
    segment) stores the judgment and the assignment's progress in one statement on PostgreSQL; the
    expiry moves while the assignment is open and not once it is closed (as work.update_state)."""
    from datetime import timedelta

    from dialeval import clock
    from dialeval.store import work

    study = store.ensure_study("s-steps", "spot-the-bot", {})
    person = store.get_or_create_annotator(study.id, "p1").id
    first_expiry = clock.now() + timedelta(minutes=5)
    with store.locked(study.id) as s:
        unit = work.create_unit(s, study.id, "u1", "stb-package", [], {})
        given = work.create_assignment(s, study.id, unit.id, person, shown_order=None, expires_at=first_expiry)
    later = clock.now() + timedelta(minutes=30)

    def step(request_id: str, state: dict) -> tuple[int, bool]:
        with store.session() as s:
            return store.add_judgment(
                study.id,
                person,
                "segment",
                {"label": "bot"},
                unit_id=unit.id,
                assignment_id=given.id,
                client_request_id=request_id,
                session=s,
                state=state,
                expires_at=later,
            )

    with statements_seen(store.engine) as sent:
        made = step("r1", {"done": [0]})
    statements = first_words(sent)
    assert statements == (["WITH"] if store.is_postgres else ["BEGIN", "INSERT", "UPDATE"]), statements
    now_open = work.get_assignment(store, given.id)
    assert made[1] is True and now_open.state == {"done": [0]}
    assert abs((now_open.expires_at - later).total_seconds()) < 1
    assert step("r1", {"done": [0, 1]}) == (made[0], False)  # a repeat: no second judgment, the state set
    work.submit_assignment(store, given.id)
    work.update_state(store, given.id, {"done": [0, 1, 2]}, expires_at=later + timedelta(hours=1))
    closed = work.get_assignment(store, given.id)
    assert closed.status == "submitted" and closed.state == {"done": [0, 1, 2]}
    assert abs((closed.expires_at - later).total_seconds()) < 1  # closed: the expiry stays
    assert store.counts(study.id)["judgments"] == 1


def test_postgres_short_reads_send_no_begin_and_store_read_keeps_its_transaction(pg_url):
    """On PostgreSQL, read_connection's reads (every page's session and task reads) run in
    autocommit -- no BEGIN and ROLLBACK round trips, the server sees no open transaction -- while
    Store.read keeps a transaction: a report streams its judgments through a server-side cursor,
    which PostgreSQL allows only inside one."""
    from psycopg.pq import TransactionStatus

    store = Store(pg_url)
    try:
        study = store.ensure_study("s1", "spot-the-bot", {})
        store.save_dataset(study.id, small_dataset())
        with store.read_connection() as conn:
            assert conn.execute(text("SELECT count(*) FROM annotators")).scalar_one() == 1
            assert conn.connection.dbapi_connection.info.transaction_status == TransactionStatus.IDLE
        with store.shared_reads():
            with store.read_connection() as conn:
                conn.execute(text("SELECT 1"))
                assert conn.connection.dbapi_connection.info.transaction_status == TransactionStatus.IDLE
        with store.read() as s:
            s.execute(text("SELECT 1"))
            assert s.connection().connection.dbapi_connection.info.transaction_status == TransactionStatus.INTRANS
        assert [j.value for j in store.load_dataset(study.id).judgments] == [j.value for j in small_dataset().judgments]
        with store.session() as s:  # and a write after an autocommit read is a transaction again
            s.execute(text("SELECT 1"))
            assert s.connection().connection.dbapi_connection.info.transaction_status == TransactionStatus.INTRANS
    finally:
        store.close()


def test_postgres_pings_only_connections_that_idled_and_replaces_a_dropped_one(pg_url, monkeypatch):
    """A pooled PostgreSQL connection is pinged before use only after it idled (engine.py:
    PING_AFTER_IDLE_S), not at every checkout; one the server dropped while idle (a restart, an idle
    timeout) is replaced before the request uses it, which then succeeds."""
    import psycopg

    from dialeval.store import engine as engine_mod

    store = Store(pg_url)
    try:
        pings = []
        do_ping = store.engine.dialect.do_ping
        monkeypatch.setattr(store.engine.dialect, "do_ping", lambda c: pings.append(1) or do_ping(c))
        for _ in range(5):
            store.ping()
        assert pings == []  # each checkout a moment after the last: no extra round trip
        with store.engine.connect() as c:
            backend = c.execute(text("SELECT pg_backend_pid()")).scalar_one()
        plain = pg_url.replace("postgresql+psycopg://", "postgresql://").split("?")[0]
        with psycopg.connect(plain, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (backend,)).fetchone()[0]
        monkeypatch.setattr(engine_mod, "PING_AFTER_IDLE_S", 0.0)  # as if it idled past the limit
        with store.engine.connect() as c:
            assert c.execute(text("SELECT pg_backend_pid()")).scalar_one() != backend
        assert len(pings) >= 1
    finally:
        store.close()


def test_turns_are_found_by_their_unique_index_alone(tmp_path):
    """A new database gives turns one index, the unique (conversation_id, idx): reading or deleting a
    conversation's turns searches it (a second index on conversation_id only slowed imports)."""
    import sqlite3

    path = tmp_path / "dialeval.db"
    Store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        indexes = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='turns'")]
        assert len(indexes) == 1 and indexes[0].startswith("sqlite_autoindex_turns")
        for query in (
            "SELECT * FROM turns WHERE conversation_id = 5 ORDER BY idx",
            "DELETE FROM turns WHERE conversation_id = 5",
        ):
            plan = " ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + query))
            assert f"USING INDEX {indexes[0]} (conversation_id=?)" in plan, plan
