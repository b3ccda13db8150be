"""The ACUTE-Eval pages through the real app and a real SQLite file."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from dialeval.quality.filters import NEVER_GIVES_REASON
from dialeval.store import work

from .conftest import Annotator
from .studies import make_acute_study


def rid() -> str:
    return uuid.uuid4().hex


def study_of(app):
    return next(iter(app.state.studies.values()))


def onboarding_answer(app, page: str, right: bool) -> str:
    """The choice (1/2) that picks the human conversation (right) or the weak bot (wrong)."""
    served = study_of(app)
    aid = int(re.search(r"/a/(\d+)/submit", page).group(1))
    a = work.get_assignment(served.ctx.store, aid)
    correct = a.payload["correct"]
    idx = a.shown_order.index(correct) + 1
    return str(idx if right else 3 - idx)


def test_full_unit_with_onboarding(acute_app):
    ann = Annotator(acute_app, "acute-test")
    r = ann.enter()
    assert r.status_code == 200 and "Practice comparison" in r.text
    r = ann.post(
        ann.action(r.text),
        {
            "choice": onboarding_answer(acute_app, r.text, True),
            "justification": "sounds like a person",
            "request_id": rid(),
        },
    )
    assert r.json()["ok"] is True
    served = study_of(acute_app)
    for n in range(2):
        page = ann.task()
        assert f"Comparison {n + 1} of 2" in page.text
        r = ann.post(
            ann.action(page.text), {"choice": "1", "justification": "more engaging answers", "request_id": rid()}
        )
        assert r.status_code == 200, r.text
    assert ann.task().url.path.endswith("/done")
    ds = served.ctx.store.load_dataset(served.ctx.study_id)
    real = [j for j in ds.judgments if j.question == "preference"]
    assert len(real) == 2
    for j in real:
        assert set(j.value) == {"winner", "loser"} and j.value["winner"] != j.value["loser"]
        assert j.value["winner"] == j.shown_order[0]  # choice 1 = left
        assert j.justification == "more engaging answers"
        unit = next(u for u in ds.units if u.id == j.unit_id)
        assert set(unit.conversation_ids) == {j.value["winner"], j.value["loser"]}
        a, b = unit.payload["speakers_to_eval"]
        assert a != b
    onboarding = [j for j in ds.judgments if j.question == "onboarding"]
    assert len(onboarding) == 1 and onboarding[0].meta["passed"] is True


def test_refused_inputs_store_nothing(acute_app):
    ann = Annotator(acute_app, "acute-test")
    page = ann.enter()
    url = ann.action(page.text)
    served = study_of(acute_app)
    before = served.ctx.store.counts(served.ctx.study_id)["judgments"]
    r = ann.post(url, {"choice": "1", "justification": "", "request_id": rid()})
    assert r.status_code == 400 and "at least 2 words" in r.json()["error"]
    r = ann.post(url, {"choice": "1", "justification": "ok", "request_id": rid()})
    assert r.status_code == 400
    r = ann.post(url, {"choice": "7", "justification": "two words", "request_id": rid()})
    assert r.status_code == 400 and "choose" in r.json()["error"]
    r = ann.post(url, {"choice": "1", "justification": "two words", "request_id": "x"})
    assert r.status_code == 400
    right = onboarding_answer(acute_app, page.text, True)
    r = ann.post(url, {"choice": right, "justification": "two words", "request_id": rid()}, json_api=False)
    # a plain form post is redirected (303, See Other) to the next task
    assert [h.status_code for h in r.history] == [303] and r.status_code == 200
    assert r.url.path == ann.url("task") and "Comparison 1 of 2" in r.text
    # an HTML error page for a browser's plain form post: that assignment is already submitted
    browser = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
    r = ann.post(url, {"choice": "1", "justification": "", "request_id": rid()}, json_api=False, headers=browser)
    assert r.status_code == 409 and r.headers["content-type"].startswith("text/html")
    assert "already finished" in r.text
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == before + 1
    r = ann.client.post(ann.url("a/abc/submit"), data={"csrf": ann.csrf}, headers={"Accept": "application/json"})
    assert r.status_code == 422 and r.json()["ok"] is False


def test_double_submit_is_harmless(acute_app):
    ann = Annotator(acute_app, "acute-test")
    page = ann.enter()
    url = ann.action(page.text)
    data = {
        "choice": onboarding_answer(acute_app, page.text, True),
        "justification": "human sounds real",
        "request_id": rid(),
    }
    r1 = ann.post(url, data)
    r2 = ann.post(url, data)
    assert r1.json()["ok"] and r2.json()["ok"] and r2.json().get("repeat")
    served = study_of(acute_app)
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 1


def test_only_own_assignments_and_csrf(acute_app):
    alice, bob = Annotator(acute_app, "acute-test"), Annotator(acute_app, "acute-test")
    page_a = alice.enter()
    bob.enter()
    url_a = alice.action(page_a.text)
    r = bob.post(url_a, {"choice": "1", "justification": "not my task", "request_id": rid()})
    assert r.status_code == 403
    r = alice.client.post(
        url_a,
        data={"choice": "1", "justification": "no token here", "request_id": rid()},
        headers={"Accept": "application/json"},
    )
    assert r.status_code == 403 and "token" in r.json()["error"]
    r = alice.client.post(
        url_a,
        data={"csrf": bob.csrf, "choice": "1", "justification": "bob token", "request_id": rid()},
        headers={"Accept": "application/json"},
    )
    assert r.status_code == 403
    r = alice.post(
        url_a,
        {"choice": "1", "justification": "cross site post", "request_id": rid()},
        headers={"Origin": "https://evil.example"},
    )
    assert r.status_code == 403
    fresh = Annotator(acute_app, "acute-test")
    assert fresh.task().status_code == 403  # no cookie
    served = study_of(acute_app)
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 0


def test_onboarding_failure_blocks(acute_app):
    """Two practice tries by default; after the second miss the page says to return the study."""
    ann = Annotator(acute_app, "acute-test")
    page = ann.enter()
    r = ann.post(
        ann.action(page.text),
        {
            "choice": onboarding_answer(acute_app, page.text, False),
            "justification": "the robot is better",
            "request_id": rid(),
        },
    )
    assert r.json()["ok"]
    retry = ann.task()
    assert retry.url.path.endswith("/task") and "try 2 of 2" in retry.text
    r = ann.post(
        ann.action(retry.text),
        {
            "choice": onboarding_answer(acute_app, retry.text, False),
            "justification": "the robot again",
            "request_id": rid(),
        },
    )
    assert r.json()["ok"]
    done = ann.task()
    assert done.url.path.endswith("/done") and "cannot continue" in done.text and "return" in done.text
    assert "completion-code" not in done.text
    served = study_of(acute_app)
    rows = work.list_annotators(served.ctx.store, served.ctx.study_id)
    assert rows[0]["status"] == "blocked" and "failed onboarding" in rows[0]["reasons"]
    assert rows[0]["judgments"] == 2  # kept, never deleted


def test_xss_is_escaped(tmp_path):
    from dialeval.web.app import create_app

    from .studies import make_acute_study

    # every eliza conversation carries the payload; of the 3 bot pairs 2 include eliza and the 2
    # comparisons of one annotator come from 2 different pairs, so it is shown at least once
    folder = make_acute_study(tmp_path / "x", onboarding=False, xss="<script>alert('bot')</script>")
    app = create_app([folder])
    store = study_of(app).ctx.store
    ann = Annotator(app, "acute-test")
    escaped = "&lt;script&gt;alert('bot')&lt;/script&gt;"  # as the bot's Markdown shows it (bot_markdown.py)
    page = ann.enter()
    shown = []
    for _ in range(2):
        assert page.status_code == 200 and "Content-Security-Policy" in page.headers
        assert "<script>alert" not in page.text
        aid = int(re.search(r"/a/(\d+)/submit", page.text).group(1))
        with_eliza = "eliza" in work.get_assignment(store, aid).payload["bot_pair"]
        assert (escaped in page.text) == with_eliza  # shown as text wherever eliza is compared
        shown.append(with_eliza)
        r = ann.post(
            ann.action(page.text),
            {"choice": "1", "justification": "<script>alert(1)</script> words", "request_id": rid()},
        )
        assert r.status_code == 200 and r.json()["ok"] is True
        page = ann.task()
    assert any(shown)
    assert page.url.path.endswith("/done") and "<script>alert(1)" not in page.text


def prolific_acute_app(tmp_path):
    """An app serving a one-comparison ACUTE study recruited on Prolific with the code C0DE42."""
    import yaml

    from dialeval.web.app import create_app

    from .studies import make_acute_study

    folder = make_acute_study(tmp_path / "p", onboarding=False, comparisons=1)
    data = yaml.safe_load((folder / "study.yaml").read_text())
    data["recruitment"] = {"platform": "prolific", "completion_code": "C0DE42"}
    (folder / "study.yaml").write_text(yaml.safe_dump(data))
    return create_app([folder])


def test_prolific_entry_and_completion(tmp_path):
    app = prolific_acute_app(tmp_path)
    ann = Annotator(app, "acute-test", {"PROLIFIC_PID": "pid123", "STUDY_ID": "s1", "SESSION_ID": "x9"})
    page = ann.enter()
    ann.post(ann.action(page.text), {"choice": "2", "justification": "nicer and kinder", "request_id": rid()})
    r = ann.client.get(ann.url("done"), follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "https://app.prolific.com/submissions/complete?cc=C0DE42"
    rows = work.list_annotators(study_of(app).ctx.store, study_of(app).ctx.study_id)
    assert rows[0]["external_id"] == "pid123" and rows[0]["platform"] == "prolific"


def test_mturk_preview_and_submit(acute_app):
    c = Annotator(acute_app, "acute-test").client
    r = c.get("/s/acute-test/", params={"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H1"})
    assert r.status_code == 200 and "preview" in r.text.lower() and "Start</button>" not in r.text
    served = study_of(acute_app)
    assert served.ctx.store.counts(served.ctx.study_id)["annotators"] == 0
    ann = Annotator(
        acute_app,
        "acute-test",
        {"workerId": "W1", "assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://workersandbox.mturk.com"},
    )
    page = ann.enter()
    ann.post(
        ann.action(page.text),
        {
            "choice": onboarding_answer(acute_app, page.text, False),
            "justification": "picked the bot",
            "request_id": rid(),
        },
    )
    done = ann.client.get(ann.url("done"))
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' not in done.text  # blocked: no submit
    # a passing worker gets the externalSubmit form
    ann2 = Annotator(
        acute_app,
        "acute-test",
        {"workerId": "W2", "assignmentId": "A2", "hitId": "H1", "turkSubmitTo": "https://evil.example"},
    )
    page = ann2.enter()
    ann2.post(
        ann2.action(page.text),
        {"choice": onboarding_answer(acute_app, page.text, True), "justification": "the person", "request_id": rid()},
    )
    for _ in range(2):
        page = ann2.task()
        ann2.post(ann2.action(page.text), {"choice": "1", "justification": "left one better", "request_id": rid()})
    done = ann2.client.get(ann2.url("done"))
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in done.text  # untrusted host replaced
    assert 'name="assignmentId" value="A2"' in done.text


def test_refresh_resumes_same_assignment(acute_app):
    ann = Annotator(acute_app, "acute-test")
    first = ann.enter()
    again = ann.task()
    assert ann.action(first.text) == ann.action(again.text)


def test_an_answer_and_the_next_assignment_are_one_commit(acute_app):
    """A comparison's answer commits with the annotator's next assignment, and the task page that
    follows writes nothing: one write transaction per judgment (two before: the page chose the next
    unit in a locked transaction of its own)."""
    from .test_live_support import WriteTransactions

    ann = Annotator(acute_app, "acute-test")
    r = ann.enter()
    choice = onboarding_answer(acute_app, r.text, True)
    assert ann.post(ann.action(r.text), {"choice": choice, "justification": "a person", "request_id": rid()}).json()[
        "ok"
    ]
    served = study_of(acute_app)
    page = ann.task()  # the first comparison (the practice answer stored it; counted from here)
    writes = WriteTransactions(served.ctx.store.engine)
    locks = []
    locked = served.ctx.store.locked
    served.ctx.store.locked = lambda study_id: locks.append(study_id) or locked(study_id)
    shown = []
    for n in range(2):
        assert f"Comparison {n + 1} of 2" in page.text
        shown.append(int(re.search(r"/a/(\d+)/submit", page.text).group(1)))
        r = ann.post(
            ann.action(page.text), {"choice": "2", "justification": "more engaging answers", "request_id": rid()}
        )
        assert r.status_code == 200 and r.json()["ok"], r.text
        assert writes.count == n + 1
        # the reply says where the page goes next (app.js follows it): the next comparison, then
        # -- the last answer found no next unit (2 per annotator) -- the done page itself
        assert r.json()["redirect"] == ("/s/acute-test/task", "/s/acute-test/done")[n]
        page = ann.client.get(r.json()["redirect"])
    # the second comparison's page only read what the first answer stored, and the done page
    # records the completion: no task page looked for work again under the study lock
    assert page.url.path.endswith("/done") and "You have finished." in page.text
    assert writes.count == 3 and len(locks) == 2
    mine = work.annotator_assignments(
        served.ctx.store, served.ctx.study_id, work.get_assignment(served.ctx.store, shown[0]).annotator_id
    )
    assert [a.status for a in mine if a.unit_kind != "acute-onboarding"] == ["submitted", "submitted"]
    assert len({a.unit_id for a in mine}) == len(mine)  # never the same unit twice


def test_a_practice_answer_and_the_next_assignment_are_one_commit(acute_app):
    """The practice answer commits with the annotator's next assignment too (another try after a
    miss, the first comparison after a pass): the task page that follows writes nothing."""
    from .test_live_support import WriteTransactions

    ann = Annotator(acute_app, "acute-test")
    page = ann.enter()
    served = study_of(acute_app)
    writes = WriteTransactions(served.ctx.store.engine)
    for right, expect in ((False, "try 2 of 2"), (True, "Comparison 1 of 2")):
        choice = onboarding_answer(acute_app, page.text, right)
        r = ann.post(ann.action(page.text), {"choice": choice, "justification": "a person", "request_id": rid()})
        assert r.status_code == 200 and r.json()["ok"], r.text
        before = writes.count
        page = ann.task()
        assert expect in page.text and writes.count == before
    assert writes.count == 2  # one per answer
    annotator_id = work.get_assignment(
        served.ctx.store, int(re.search(r"/a/(\d+)/submit", page.text).group(1))
    ).annotator_id
    mine = work.annotator_assignments(served.ctx.store, served.ctx.study_id, annotator_id)
    assert [(a.unit_kind, a.status, a.state.get("passed")) for a in mine] == [
        ("acute-onboarding", "submitted", False),
        ("acute-onboarding", "submitted", True),
        ("acute", "assigned", None),
    ]
    assert work.list_annotators(served.ctx.store, served.ctx.study_id)[0]["status"] == "active"


def _past_the_practice(acute_app) -> tuple[Annotator, Any]:
    """A new annotator who passed the practice, and their first comparison's page."""
    ann = Annotator(acute_app, "acute-test")
    r = ann.enter()
    choice = onboarding_answer(acute_app, r.text, True)
    assert ann.post(ann.action(r.text), {"choice": choice, "justification": "a person", "request_id": rid()}).json()[
        "ok"
    ]
    return ann, ann.task()


def test_an_answer_is_kept_when_choosing_the_next_unit_fails(acute_app, monkeypatch):
    """When choosing the next unit fails in the answer's transaction, the answer is stored alone
    (scheduling.answer_with_next) and the task page chooses the unit as before."""
    ann, page = _past_the_practice(acute_app)
    from .test_live_support import break_first_choice

    protocol = study_of(acute_app).protocol
    calls = break_first_choice(monkeypatch, protocol)
    r = ann.post(ann.action(page.text), {"choice": "1", "justification": "more engaging answers", "request_id": rid()})
    assert r.status_code == 200 and r.json()["ok"], r.text
    served = study_of(acute_app)
    assert [j.question for j in served.ctx.store.load_dataset(served.ctx.study_id).judgments].count("preference") == 1
    page = ann.task()
    assert "Comparison 2 of 2" in page.text and len(calls) == 2


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_an_answer_is_kept_when_a_statement_of_the_choice_fails(tmp_path, request, monkeypatch, database):
    """A failed statement while choosing the next unit leaves a PostgreSQL transaction aborted: the
    answer's transaction is rolled back and the answer stored again alone, once, in a new one; the
    reply sends the page to the task page, which chooses the unit as before."""
    from dialeval.web.app import create_app

    from .test_live_support import WriteTransactions, break_first_choice

    url = request.getfixturevalue("pg_url") if database == "postgres" else None
    app = create_app([make_acute_study(tmp_path / "acute", database=url)])
    try:
        ann, page = _past_the_practice(app)
        served = study_of(app)
        calls = break_first_choice(monkeypatch, served.protocol, in_sql=True)
        writes = WriteTransactions(served.ctx.store.engine)
        r = ann.post(ann.action(page.text), {"choice": "2", "justification": "more engaging", "request_id": rid()})
        assert r.status_code == 200 and r.json() == {"ok": True, "done": True, "redirect": "/s/acute-test/task"}
        assert writes.count == 1  # the answer alone: the failed transaction was rolled back
        stored = served.ctx.store.load_dataset(served.ctx.study_id).judgments
        assert [j.question for j in stored].count("preference") == 1
        page = ann.task()
        assert "Comparison 2 of 2" in page.text and len(calls) == 2
    finally:
        for s in app.state.studies.values():
            s.ctx.store.close()


def _without_request_id(page: str) -> str:
    return re.sub(r'name="request_id" value="[0-9a-f]+"', "", page)


def test_a_task_page_reads_only_what_it_shows(acute_app, monkeypatch):
    """A task page (here a refresh after two answers) is one short read transaction of one
    statement (the session with the rows the assignment to show is decided from and the progress
    header's count), and of the annotator's history it decodes only the rows it decides from (the
    open assignment and the latest), not every assignment they were given."""
    from sqlalchemy import event

    ann, page = _past_the_practice(acute_app)
    assert ann.post(
        ann.action(page.text), {"choice": "1", "justification": "more engaging", "request_id": rid()}
    ).json()["ok"]
    page = ann.task()
    assert "Comparison 2 of 2" in page.text
    served = study_of(acute_app)
    statements: list[str] = []
    event.listen(
        served.ctx.store.engine,
        "before_cursor_execute",
        lambda _c, _cur, statement, *_: statements.append(statement.split(None, 1)[0].upper()),
    )
    decoded = []
    original = work._assignment_from_columns
    monkeypatch.setattr(work, "_assignment_from_columns", lambda row: decoded.append(row[0]) or original(row))
    again = ann.task()
    assert _without_request_id(again.text) == _without_request_id(page.text)
    # three transactions before Store.shared_reads, three statements before the session read the
    # resume rows with the annotator (work.get_annotator_and_resume_rows), two before it counted the
    # progress header's submitted units too (Protocol.progress_kind)
    assert statements == ["BEGIN", "SELECT"]
    open_one = int(re.search(r"/a/(\d+)/submit", page.text).group(1))
    assert decoded == [open_one]  # of three assignments (the practice, one answered, the open one)


def test_a_task_page_lays_out_its_conversations_once(acute_app):
    """The two conversations of a task page are laid out once per process (web/pages.py: fragment),
    not at every view: a refresh renders no side again and shows the same page, byte for byte, as
    one laid out afresh."""
    from dialeval.web import pages

    env = acute_app.state.env
    laid_out = []
    get_template = env.get_template

    def counting(name, *args, **kwargs):
        if name == "acute_side.html":
            laid_out.append(name)
        return get_template(name, *args, **kwargs)

    env.get_template = counting
    ann = Annotator(acute_app, "acute-test")
    first = ann.enter()
    assert len(laid_out) == 2 and "Speaker 1's conversation" in first.text and "Speaker 2's conversation" in first.text
    again = ann.task()
    assert len(laid_out) == 2  # from the cache
    pages._fragments.clear()
    fresh = ann.task()
    assert len(laid_out) == 4
    assert _without_request_id(first.text) == _without_request_id(again.text) == _without_request_id(fresh.text)


def test_task_post_refusals_keep_their_order(acute_app):
    """The task post checks, in one worker thread, what the other posts' dependencies check, in
    the same order: session (403) before the body (413), token (403) before the action name (404),
    the action name before the assignment (404/403), the request id (400) last."""
    alice, bob = Annotator(acute_app, "acute-test"), Annotator(acute_app, "acute-test")
    url_a = alice.action(alice.enter().text)
    bob.enter()
    big = {"choice": "1", "justification": "x" * 100_000, "request_id": rid()}
    stranger = Annotator(acute_app, "acute-test")
    assert stranger.post(url_a, big).status_code == 403  # no session: refused before the body is looked at
    r = alice.post(url_a, big)
    assert r.status_code == 413 and r.json()["ok"] is False
    bad_action = url_a.rsplit("/", 1)[0] + "/Not-An-Action!"
    r = alice.client.post(bad_action, data={"request_id": rid()}, headers={"Accept": "application/json"})
    assert r.status_code == 403 and "token" in r.json()["error"]
    assert alice.post(bad_action, {"request_id": rid()}).json()["error"] == "Unknown action."
    unknown = re.sub(r"/a/\d+/", "/a/987654/", url_a)
    assert alice.post(unknown, {"choice": "1", "request_id": rid()}).status_code == 404
    r = bob.post(url_a, {"choice": "1", "justification": "not mine", "request_id": "short"})
    assert r.status_code == 403 and "somebody else" in r.json()["error"]
    r = alice.post(url_a, {"choice": "1", "justification": "no id", "request_id": "short"})
    assert r.status_code == 400 and "request id" in r.json()["error"]
    served = study_of(acute_app)
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 0


def test_an_answer_takes_one_worker_thread(acute_app, monkeypatch):
    """Session, checks and the answer's transaction share one hand-off to a worker thread (each
    hand-off costs the server CPU per judgment); the answer is stored all the same."""
    ann = Annotator(acute_app, "acute-test")
    page = ann.enter()
    handoffs = _count_handoffs(monkeypatch)
    r = ann.post(
        ann.action(page.text),
        {"choice": onboarding_answer(acute_app, page.text, True), "justification": "a person", "request_id": rid()},
    )
    assert r.status_code == 200 and r.json()["ok"] is True
    assert len(handoffs) == 1, handoffs
    served = study_of(acute_app)
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 1


def _count_handoffs(monkeypatch) -> list[str]:
    """The names of the functions handed to a worker thread from now on (anyio.to_thread.run_sync)."""
    import anyio.to_thread

    handoffs: list[str] = []
    real = anyio.to_thread.run_sync

    async def counting(func, *args, **kwargs):
        inner = getattr(func, "func", func)  # run_in_threadpool hands over a functools.partial
        handoffs.append(getattr(inner, "__name__", repr(inner)))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    return handoffs


def _to(response) -> str:
    """Where a redirect goes, without its query (a new session's token rides along as ?sid=)."""
    return response.headers["location"].split("?", 1)[0]


def test_each_page_of_a_session_takes_one_worker_thread(tmp_path, monkeypatch):
    """A Prolific arrival, the consent and instructions posts, and the done page each hand their
    database work to one worker thread (they took 5, 2, 2 and up to 6); what they store is the same:
    the arrival signs in, the posts record consent and instructions, the done page records the
    session complete and sends the annotator to Prolific with the code."""
    app = prolific_acute_app(tmp_path)
    ann = Annotator(app, "acute-test", {"PROLIFIC_PID": "pid77", "STUDY_ID": "s1", "SESSION_ID": "x9"})
    handoffs = _count_handoffs(monkeypatch)
    arrival = ann.client.get(ann.url(), params=ann.params, follow_redirects=False)
    assert arrival.status_code == 303 and _to(arrival).endswith("/consent")
    assert handoffs == ["arrive"], handoffs
    consent_page = ann.client.get(ann.url("consent"))
    ann.csrf = re.search(r'name="csrf" value="([^"]+)"', consent_page.text).group(1)
    handoffs.clear()
    refused = ann.client.post(ann.url("consent"), data={"csrf": ann.csrf})  # the box not ticked
    assert refused.status_code == 400 and "tick the box" in refused.text and len(handoffs) == 1
    handoffs.clear()
    consented = ann.client.post(ann.url("consent"), data={"csrf": ann.csrf, "agree": "yes"}, follow_redirects=False)
    instructed = ann.client.post(ann.url("instructions"), data={"csrf": ann.csrf}, follow_redirects=False)
    assert _to(consented).endswith("/instructions") and _to(instructed).endswith("/task")
    assert len(handoffs) == 2, handoffs
    served = study_of(app)
    (row,) = work.list_annotators(served.ctx.store, served.ctx.study_id)
    meta = work.get_annotator(served.ctx.store, row["id"]).meta
    assert meta["consented_at"] and meta["instructed_at"] and meta["prolific_session_id"] == "x9"
    handoffs.clear()
    early = ann.client.get(ann.url("done"), follow_redirects=False)  # work is left: back to it
    assert early.status_code == 303 and _to(early).endswith("/task") and len(handoffs) == 1
    page = ann.task()
    r = ann.post(ann.action(page.text), {"choice": "2", "justification": "nicer and kinder", "request_id": rid()})
    assert r.json()["ok"] is True
    handoffs.clear()
    done = ann.client.get(ann.url("done"), follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == "https://app.prolific.com/submissions/complete?cc=C0DE42"
    assert handoffs == ["done_blocking"], handoffs
    completed = work.get_annotator(served.ctx.store, row["id"]).meta
    assert completed["completed_at"] and completed["completion"]["state"] == "complete"


def test_a_volunteer_start_post_takes_one_worker_thread_and_keeps_a_signed_in_browser(acute_app, monkeypatch):
    """The start post: the session read, the new annotator and the cookie in one worker thread (they
    were three); a browser already signed in goes on to consent as the same annotator."""
    ann = Annotator(acute_app, "acute-test")
    ann.client.get(ann.url())
    handoffs = _count_handoffs(monkeypatch)
    first = ann.client.post(ann.url("start"), data={"volunteer": "1"}, follow_redirects=False)
    assert first.status_code == 303 and _to(first).endswith("/consent")
    assert handoffs == ["sign_in"], handoffs
    again = ann.client.post(ann.url("start"), data={}, follow_redirects=False)
    assert again.status_code == 303 and _to(again).endswith("/consent")
    served = study_of(acute_app)
    rows = work.list_annotators(served.ctx.store, served.ctx.study_id)
    assert [r["platform"] for r in rows] == ["volunteer"]  # the second post made nobody new


def test_the_done_page_runs_an_async_completion_hook_on_the_event_loop(acute_app):
    """A plug-in's async `completion` is awaited on the event loop from the done page's worker
    thread (served.hook_in_thread), and its verdict decides the page."""
    import asyncio
    import threading

    served = study_of(acute_app)
    plain = served.protocol.completion
    ran_on: list[str] = []

    async def completion(annotator, final):
        asyncio.get_running_loop()  # raises outside a running event loop
        ran_on.append(threading.current_thread().name)
        return plain(annotator, final)

    served.protocol.completion = completion
    ann = Annotator(acute_app, "acute-test")
    ann.client.get(ann.url())
    consent = ann.client.post(ann.url("start"), data={})
    ann.csrf = re.search(r'name="csrf" value="([^"]+)"', consent.text).group(1)
    ann.client.post(ann.url("consent"), data={"csrf": ann.csrf, "agree": "yes"})
    ann.client.post(ann.url("instructions"), data={"csrf": ann.csrf}, follow_redirects=False)  # no task yet
    page = ann.client.get(ann.url("done"), follow_redirects=False)
    assert page.status_code == 303 and _to(page).endswith("/task")  # work is left: to it
    assert ran_on and all(not name.startswith("AnyIO worker") for name in ran_on), ran_on


def test_an_answer_writes_without_looking_up_first(acute_app):
    """The answer's judgment is one INSERT ... ON CONFLICT DO NOTHING (no look-up of its request id
    first) and its assignment is closed by one UPDATE ... RETURNING (no read first); the same
    request id again stores nothing and is acknowledged as a repeat."""
    from sqlalchemy import event

    ann, page = _past_the_practice(acute_app)
    served = study_of(acute_app)
    statements: list[str] = []

    def seen(conn, cursor, statement, params, context, executemany):
        statements.append(" ".join(statement.split()))

    event.listen(served.ctx.store.engine, "before_cursor_execute", seen)
    try:
        body = {"choice": "1", "justification": "the clearer one", "request_id": rid()}
        first = ann.post(ann.action(page.text), body)
        writes = list(statements)
        again = ann.post(ann.action(page.text), body)
    finally:
        event.remove(served.ctx.store.engine, "before_cursor_execute", seen)
    assert first.json()["ok"] is True and again.json().get("repeat") is True
    assert not any(s.startswith("SELECT judgments.id") for s in writes), writes
    inserts = [s for s in writes if s.startswith("INSERT INTO judgments")]
    assert len(inserts) == 1 and "ON CONFLICT" in inserts[0] and "RETURNING" in inserts[0]
    closing = [s for s in writes if s.startswith("UPDATE assignments SET status")]
    assert len(closing) == 1 and "RETURNING" in closing[0]
    assert not any(
        s.startswith("SELECT assignments.study_id, assignments.annotator_id, assignments.status") for s in writes
    )
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 2  # the practice answer and this one


@pytest.mark.parametrize(
    ("reasons", "flagged"),
    [
        # the same text every time: "never gives a reason" (Li et al. 2019), flagged at the third
        (["more engaging", "more engaging", "more engaging", "more engaging"], True),
        # two real, different reasons, then the same one again and again: never flagged (the
        # protocol stops reading this annotator's reasons once they are settled)
        (["asked me questions back", "more engaging", "more engaging", "more engaging"], False),
    ],
)
def test_never_gives_reason_flag_over_http(tmp_path, reasons, flagged):
    from dialeval.web.app import create_app

    app = create_app([make_acute_study(tmp_path / "acute", comparisons=4, onboarding=False)])
    try:
        ann = Annotator(app, "acute-test")
        page = ann.enter()
        for n, reason in enumerate(reasons):
            assert f"Comparison {n + 1} of 4" in page.text
            r = ann.post(ann.action(page.text), {"choice": "1", "justification": reason, "request_id": rid()})
            assert r.status_code == 200 and r.json()["ok"], r.text
            page = ann.task()
        served = study_of(app)
        (row,) = work.list_annotators(served.ctx.store, served.ctx.study_id)
        assert (NEVER_GIVES_REASON in row["reasons"]) is flagged, row
        assert row["judgments"] == 4
    finally:
        for s in app.state.studies.values():
            s.ctx.store.close()
