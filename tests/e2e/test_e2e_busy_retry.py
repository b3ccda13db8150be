"""In Chromium: when the server answers 503 "busy" with Retry-After, the page says so and sends the
same answer again by itself (same request id), and it is stored once. The first answer's 503 is
produced by intercepting that one request in the browser; everything else is the real server. A
busy GET page (the real 503 page) reloads itself."""

from __future__ import annotations

import pytest

from dialeval.study import open_study
from tests.web.studies import make_stb_study

pytestmark = pytest.mark.browser


def test_answer_is_resent_after_503(live_server, browser_page, tmp_path):
    folder = make_stb_study(tmp_path / "stb", bot_segments=3, human_segments=1, exchanges=[2, 3])
    server = live_server([folder])
    page = browser_page()
    page.goto(server.url + "/s/stb-test/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("text=Segment 1 of 4")
    bodies: list[str] = []

    def busy_once(route):
        bodies.append(route.request.post_data or "")
        if len(bodies) == 1:
            route.fulfill(
                status=503,
                headers={"Retry-After": "1", "Content-Type": "application/json"},
                body='{"ok": false, "retry": true, "error": "busy"}',
            )
        else:
            route.continue_()

    page.route("**/segment", busy_once)
    for name, value in (
        ("entity0", "bot"),
        ("entity1", "human"),
        ("fluency", "0"),
        ("sensibleness", "tie"),
        ("specificity", "1"),
    ):
        page.check(f"input[name={name}][value='{value}']")
    page.click("#submit")
    page.wait_for_selector("[data-error]:has-text('busy')")
    page.wait_for_selector("text=Segment 2 of 4", timeout=15000)
    assert len(bodies) == 2
    rid = [b.split('name="request_id"')[1].split("\r\n\r\n")[1].split("\r\n")[0] for b in bodies]
    assert rid[0] == rid[1]  # the same answer, so the server could never count it twice
    study = open_study(folder)
    try:
        assert study.store.counts(study.id)["judgments"] == 1
    finally:
        study.close()


def test_busy_page_reloads_itself(live_server, browser_page, tmp_path):
    folder = make_stb_study(tmp_path / "stb", bot_segments=3, human_segments=1, exchanges=[2, 3])
    server = live_server([folder])
    page = browser_page()
    served: list[int] = []

    def busy_once(route):
        served.append(1)
        if len(served) == 1:  # the server's own busy page, as a full pool would answer
            from dialeval.web.app import make_environment

            html = make_environment().get_template("busy.html").render(retry_after=1)
            route.fulfill(status=503, headers={"Retry-After": "1", "Content-Type": "text/html"}, body=html)
        else:
            route.continue_()

    page.route("**/s/stb-test/", busy_once)
    page.goto(server.url + "/s/stb-test/")
    assert page.locator("text=tries again by itself").count() == 1
    page.wait_for_selector("button:has-text('Start')", timeout=15000)  # reloaded by itself, now served
    assert len(served) == 2
