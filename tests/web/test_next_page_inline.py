"""The answer's reply carries the next task page (routes_annotator.NEXT_PAGE_HEADER) for the methods
whose page needs no script of its own (ACUTE-Eval, prompt sets, Spot The Bot): the same page a GET of
the task would show, only when the page asks for it, and never where another page comes next."""

from __future__ import annotations

import re
import uuid

import pytest

from dialeval.methods.acute.protocol import AcuteProtocol
from dialeval.web.app import create_app
from dialeval.web.pages import NEXT_PAGE_HEADER

from .conftest import Annotator
from .studies import make_acute_study
from .test_live_support import make_live_study
from .test_web_acute import _without_request_id, onboarding_answer
from .test_web_prompts import _assignment, _letter_of, prompts_app  # noqa: F401 (a fixture)
from .test_web_spot_the_bot import ANSWER as STB_ANSWER

INLINE = {NEXT_PAGE_HEADER: "inline"}


def rid() -> str:
    return uuid.uuid4().hex


def same_page(a: str, b: str) -> bool:
    """Two renderings of one task page (each form gets a fresh request id)."""
    return _without_request_id(a) == _without_request_id(b)


def answer_of(method: str, app, page: str) -> dict:
    if method == "acute":
        choice = onboarding_answer(app, page, True) if "Practice comparison" in page else "1"
        return {"choice": choice, "justification": "sounds more like a person"}
    if method == "prompts":
        _served, a = _assignment(app, page)
        choice = _letter_of(a, a.payload["correct"]) if a.unit_kind == "prompts-check" else "A"
        return {"choice": choice, "justification": "clearer and more complete"}
    position = re.search(r'name="position" value="(\d+)"', page).group(1)
    return {**STB_ANSWER, "position": position}


@pytest.mark.parametrize(
    ("method", "fixture", "slug"),
    [("acute", "acute_app", "acute-test"), ("prompts", "prompts_app", "ps"), ("spot-the-bot", "stb_app", None)],
)
def test_each_answer_brings_the_page_a_get_would_show(request, method, fixture, slug):
    app = request.getfixturevalue(fixture)
    slug = slug or next(iter(app.state.studies))
    ann = Annotator(app, slug)
    page = ann.enter().text
    assert 'data-next-page="inline"' in page  # what tells app.js to ask
    brought = 0
    for _ in range(40):
        r = ann.post(ann.action(page), {**answer_of(method, app, page), "request_id": rid()}, headers=INLINE)
        reply = r.json()
        assert r.status_code == 200 and reply["ok"], reply
        shown = ann.task()
        if "page" not in reply:
            # only where the task page is not next: the done page after the session's last answer
            assert shown.url.path.endswith("/done") and reply["redirect"].endswith("/done"), reply
            break
        brought += 1
        assert reply["redirect"] == ann.url("task")
        assert same_page(reply["page"], shown.text)  # what a GET of the task shows now
        page = reply["page"]
    else:
        pytest.fail("the session never ended")
    assert brought >= 2


def test_only_a_page_that_asks_gets_the_next_page(acute_app, monkeypatch):
    ann = Annotator(acute_app, "acute-test")
    page = ann.enter().text
    data = {"choice": onboarding_answer(acute_app, page, True), "justification": "sounds like a person"}
    r = ann.post(ann.action(page), {**data, "request_id": rid()})  # app.js without data-next-page
    assert r.json()["ok"] and "page" not in r.json()
    page = ann.task().text
    # a plain form post (no JavaScript) is redirected, whatever its headers say
    r = ann.post(
        ann.action(page),
        {"choice": "1", "justification": "more engaging", "request_id": rid()},
        json_api=False,
        headers=INLINE,
    )
    assert [h.status_code for h in r.history] == [303] and r.url.path == ann.url("task")
    # a method whose page runs scripts of its own never gets one
    monkeypatch.setattr(AcuteProtocol, "inline_next_page", False)
    page = r.text
    r = ann.post(
        ann.action(page), {"choice": "2", "justification": "more engaging", "request_id": rid()}, headers=INLINE
    )
    assert r.json()["ok"] and "page" not in r.json()


def test_a_repeated_answer_brings_the_current_page(acute_app):
    ann = Annotator(acute_app, "acute-test")
    page = ann.enter().text
    data = {"choice": onboarding_answer(acute_app, page, True), "justification": "human", "request_id": rid()}
    first = ann.post(ann.action(page), {**data, "justification": "sounds like a person"}, headers=INLINE).json()
    again = ann.post(ann.action(page), {**data, "justification": "sounds like a person"}, headers=INLINE).json()
    assert again["ok"] and again.get("repeat")
    assert same_page(first["page"], again["page"]) and same_page(again["page"], ann.task().text)


def test_a_blocked_annotator_is_sent_on_not_given_a_page(tmp_path):
    """A failed practice that blocks: the reply names the task URL (which sends them to the done page)
    and carries no page."""
    folder = make_acute_study(tmp_path / "acute", on_fail="block")
    app = create_app([folder])
    try:
        ann = Annotator(app, "acute-test")
        page = ann.enter().text
        for _ in range(10):
            wrong = onboarding_answer(app, page, False)
            reply = ann.post(
                ann.action(page),
                {"choice": wrong, "justification": "the other one", "request_id": rid()},
                headers=INLINE,
            ).json()
            assert reply["ok"]
            if "page" not in reply:
                break
            assert "Practice" in reply["page"]
            page = reply["page"]
        else:
            pytest.fail("the practice never ended")
        assert ann.task().url.path.endswith("/done")
    finally:
        for s in app.state.studies.values():
            s.ctx.store.close()


def test_an_answer_stored_is_acknowledged_when_its_next_page_fails(acute_app, monkeypatch):
    """The next page's reads fail after the answer was stored (a busy database, a bug): the reply
    still says ok, without a page, and the page then loads the task page itself."""
    from dialeval.web import routes_annotator

    ann = Annotator(acute_app, "acute-test")
    page = ann.enter().text
    data = {"choice": onboarding_answer(acute_app, page, True), "justification": "sounds like a person"}

    def failing(*_args, **_kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(routes_annotator, "task_blocking", failing)
    reply = ann.post(ann.action(page), {**data, "request_id": rid()}, headers=INLINE)
    assert reply.status_code == 200 and reply.json()["ok"] and "page" not in reply.json()
    monkeypatch.undo()
    served = next(iter(acute_app.state.studies.values()))
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 1
    assert "Comparison 1 of 2" in ann.task().text


# -- the session pages: start, consent and instructions bring the page that follows them -------------
JSON_INLINE = {"Accept": "application/json", "Sec-Fetch-Dest": "empty", **INLINE}  # as app.js's fetch()


def csrf_of(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


@pytest.mark.parametrize(
    ("method", "fixture", "slug"),
    [("acute", "acute_app", "acute-test"), ("prompts", "prompts_app", "ps"), ("spot-the-bot", "stb_app", None)],
)
def test_each_session_form_brings_the_page_a_get_would_show(request, method, fixture, slug):
    app = request.getfixturevalue(fixture)
    slug = slug or next(iter(app.state.studies))
    ann = Annotator(app, slug)
    entry = ann.client.get(ann.url()).text
    assert 'data-next-page="inline"' in entry and "data-ajax" in entry  # what tells app.js to ask

    r = ann.client.post(ann.url("start"), data={}, headers=JSON_INLINE)
    reply = r.json()
    assert r.status_code == 200 and reply["ok"] and reply["redirect"] == ann.url("consent"), reply
    assert "dialeval_id" in r.cookies  # the new session's cookie comes with the page
    assert reply["page"] == ann.client.get(ann.url("consent")).text  # signed in: the same page again
    ann.csrf = csrf_of(reply["page"])

    r = ann.client.post(ann.url("consent"), data={"csrf": ann.csrf, "agree": "yes"}, headers=JSON_INLINE)
    reply = r.json()
    assert reply["ok"] and reply["redirect"] == ann.url("instructions"), reply
    assert reply["page"] == ann.client.get(ann.url("instructions")).text

    r = ann.client.post(ann.url("instructions"), data={"csrf": ann.csrf}, headers=JSON_INLINE)
    reply = r.json()
    assert reply["ok"] and reply["redirect"] == ann.url("task"), reply
    assert 'data-next-page="inline"' in reply["page"] and "data-task=" in reply["page"]
    assert same_page(reply["page"], ann.task().text)  # the assignment it made, shown again


def test_a_live_method_s_instructions_send_the_page_to_its_task(tmp_path):
    # a page with a script of its own (the live chat's) is loaded, not brought: the reply says where
    folder = make_live_study(tmp_path / "sm", "single-model", ["eliza"], name="sm-inline")
    app = create_app([folder])
    try:
        ann = Annotator(app, "sm-inline")
        ann.client.get(ann.url())
        ann.csrf = csrf_of(ann.client.post(ann.url("start"), data={}, headers=JSON_INLINE).json()["page"])
        ann.client.post(ann.url("consent"), data={"csrf": ann.csrf, "agree": "yes"}, headers=JSON_INLINE)
        reply = ann.client.post(ann.url("instructions"), data={"csrf": ann.csrf}, headers=JSON_INLINE).json()
        assert reply["ok"] and reply["redirect"] == ann.url("task") and "page" not in reply, reply
        assert 'id="live"' in ann.task().text
    finally:
        for s in app.state.studies.values():
            s.ctx.store.close()


def test_an_unticked_consent_is_refused_and_nothing_is_stored(acute_app):
    ann = Annotator(acute_app, "acute-test")
    ann.csrf = csrf_of(ann.client.post(ann.url("start"), data={}, headers=JSON_INLINE).json()["page"])
    r = ann.client.post(ann.url("consent"), data={"csrf": ann.csrf}, headers=JSON_INLINE)
    assert r.status_code == 400 and r.json() == {
        "ok": False,
        "error": "Please tick the box to agree before you continue, or close this page to leave.",
        "invalid": "agree",  # app.js marks and focuses that field
    }
    # not consented: the instructions and the task send the browser back to the consent page
    assert ann.client.get(ann.url("instructions"), follow_redirects=False).headers["location"].endswith("/consent")
    assert ann.task().url.path.endswith("/consent")
    # a forged or missing CSRF token is refused before anything is written, as without the header
    r = ann.client.post(ann.url("consent"), data={"csrf": "x", "agree": "yes"}, headers=JSON_INLINE)
    assert r.status_code == 403 and not r.json()["ok"]
    assert ann.task().url.path.endswith("/consent")


def test_without_the_header_the_forms_redirect_as_before(acute_app):
    ann = Annotator(acute_app, "acute-test")
    r = ann.client.post(ann.url("start"), data={}, headers={"Sec-Fetch-Dest": "document"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == ann.url("consent")
    ann.csrf = csrf_of(ann.client.get(ann.url("consent")).text)
    # fetch() without the header (an older page): JSON that says where, no page
    reply = ann.client.post(
        ann.url("consent"), data={"csrf": ann.csrf, "agree": "yes"}, headers={"Accept": "application/json"}
    ).json()
    assert reply == {"ok": True, "redirect": ann.url("instructions")}
    r = ann.client.post(ann.url("instructions"), data={"csrf": ann.csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == ann.url("task")
