"""In Chromium: an ACUTE-Eval answer brings the next comparison in its reply and the page swaps it in
(routes_annotator.NEXT_PAGE_HEADER, app.js swapInPage) -- no second request, and everything a page
load sets up works on the swapped-in page: its timer, its draft, the two-tabs warning, the header,
focus, a reload, and hostile bot text shown as text."""

from __future__ import annotations

import json
import re

import pytest

from dialeval.study import open_study
from tests.web.studies import make_acute_study

pytestmark = pytest.mark.browser

XSS_BOT = "<script>alert('bot')</script><img src=x onerror=alert('img')> [a link](javascript:alert('md'))"


def test_an_answer_swaps_in_the_next_comparison(live_server, browser_page, tmp_path):
    folder = make_acute_study(tmp_path / "acute", comparisons=3, onboarding=False, xss=XSS_BOT, name="acute-swap")
    server = live_server([folder])
    page = browser_page()
    task_loads: list[str] = []  # documents the browser loaded for the task page
    page.on("request", lambda r: task_loads.append(r.url) if r.resource_type == "document" else None)
    sent: list[dict] = []
    page.on(
        "request",
        lambda r: sent.append({"headers": r.headers, "form": r.post_data or ""}) if "/a/" in r.url else None,
    )
    page.goto(f"{server.url}/s/acute-swap/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("text=Comparison 1 of 3")
    assert page.get_attribute("body", "data-next-page") == "inline"
    loads_before = len(task_loads)
    page.evaluate("window.__sameDocument = true")  # gone if the browser loads a new document
    page.evaluate("document.getElementById('progress').__kept = true")  # gone if the element is replaced
    first_task = page.get_attribute("body", "data-task")
    page.wait_for_timeout(1200)
    page.check("input[name=choice][value='1']")
    page.fill("#justification", "the first one is better")
    page.click("#submit")
    page.wait_for_selector("text=Comparison 2 of 3")

    # swapped, not loaded: same document, no document request, asked for with the header
    assert page.evaluate("window.__sameDocument") is True
    assert len(task_loads) == loads_before
    assert sent[-1]["headers"].get("x-dialeval-next-page") == "inline"
    second_task = page.get_attribute("body", "data-task")
    assert second_task != first_task and page.url.endswith("/s/acute-swap/task")
    assert page.evaluate("document.activeElement.id") == "main"  # read from the top, as after a load
    assert page.locator("#justification").input_value() == ""  # a fresh form, not the last answer's
    assert page.evaluate("window.scrollY") == 0
    # the progress region is the same live region with new content (announced), the header's other
    # parts as the new page has them
    assert page.evaluate("document.getElementById('progress').__kept") is True
    assert "Comparison 2 of 3" in page.inner_text("#progress")
    assert page.locator("header.topbar #progress").count() == 1 and page.locator("header.topbar .howto").count() == 1
    assert page.evaluate("document.querySelector('header.topbar').firstElementChild.className") == "brand"

    # the timer starts again at the swap: this answer's time is its own, not the page's since load
    page.wait_for_timeout(700)
    page.check("input[name=choice][value='2']")
    # the draft of the swapped-in form is kept across a reload
    page.fill("#justification", "kept while I look away")
    page.wait_for_timeout(200)
    page.reload()
    page.wait_for_selector("text=Comparison 2 of 3")
    assert page.get_attribute("body", "data-task") == second_task
    assert page.locator("#justification").input_value() == "kept while I look away"
    page.evaluate("window.__sameDocument = true")
    page.wait_for_timeout(700)
    page.click("#submit")
    page.wait_for_selector("text=Comparison 3 of 3")
    assert page.evaluate("window.__sameDocument") is True
    third_shown = page.evaluate("performance.now()")  # ms since the reload (this document's start)

    # the two-tabs warning speaks of the swapped-in task
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("#other-tab:visible")
    page.wait_for_selector("#other-tab:visible")
    other.close()

    # the last answer goes to the thank-you page (a real load: it is not a task page)
    page.wait_for_timeout(500)
    page.check("input[name=choice][value='1']")
    page.fill("#justification", "clearer answers here")
    third_sent = page.evaluate("performance.now()")
    page.click("#submit")
    page.wait_for_selector("text=Thank you!")
    assert page.dialogs == []  # the bots' script, image and link never ran
    # the forms go as multipart (FormData): each answer's elapsed_ms, timed from when its form was shown
    elapsed = [int(m) for s in sent for m in re.findall(r'name="elapsed_ms"\r\n\r\n(\d+)', s["form"])]
    assert len(elapsed) == 3 and elapsed[0] >= 1200 and elapsed[1] >= 700, elapsed
    # the third answer's time runs from its swap, not from the reload before the second answer: at
    # most the time it was shown here (the swap comes just before its text is seen: 300 ms allowed),
    # which began more than 700 ms after the reload (however slow the two-tabs step on the machine)
    assert third_shown > 700, third_shown
    assert 500 <= elapsed[2] <= third_sent - third_shown + 300, (elapsed, third_shown, third_sent)
    study = open_study(folder)
    try:
        judgments = study.store.load_dataset(study.id).judgments
    finally:
        study.close()
    assert [j.justification for j in judgments] == [
        "the first one is better",
        "kept while I look away",
        "clearer answers here",
    ]
    assert judgments[0].elapsed_s == pytest.approx(elapsed[0] / 1000, abs=0.01)


def test_without_the_reply_s_page_the_answer_still_moves_on(live_server, browser_page, tmp_path):
    """A reply without a page (a server that does not send one, e.g. during a rolling upgrade) is
    followed as before: the browser loads the task page."""
    folder = make_acute_study(tmp_path / "acute", comparisons=2, onboarding=False, name="acute-noswap")
    server = live_server([folder])
    page = browser_page()

    def drop_page(route):
        response = route.fetch()
        body = response.json()
        body.pop("page", None)
        route.fulfill(response=response, body=json.dumps(body))

    page.route("**/a/*/submit", drop_page)
    page.goto(f"{server.url}/s/acute-noswap/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("text=Comparison 1 of 2")
    page.evaluate("window.__sameDocument = true")
    page.check("input[name=choice][value='1']")
    page.fill("#justification", "the first one")
    page.click("#submit")
    page.wait_for_selector("text=Comparison 2 of 2")
    assert page.evaluate("window.__sameDocument === undefined")  # loaded, not swapped


def test_the_session_pages_come_in_their_forms_replies(live_server, browser_page, tmp_path):
    """Start, consent and instructions: each form's reply brings the next page (pages.NEXT_PAGE_HEADER),
    up to the first comparison, in the document of the entry page. The task page's own stylesheet is
    loaded before it is shown, and what its load sets up works: the "How to" dialog, the two-tabs
    warning, a reload."""
    folder = make_acute_study(tmp_path / "acute", comparisons=2, onboarding=False, xss=XSS_BOT, name="acute-pages")
    server = live_server([folder])
    page = browser_page()
    documents: list[str] = []
    page.on("request", lambda r: documents.append(r.url) if r.resource_type == "document" else None)
    posts: list[dict] = []
    page.on("request", lambda r: posts.append({"url": r.url, "headers": r.headers}) if r.method == "POST" else None)
    page.goto(f"{server.url}/s/acute-pages/")
    page.evaluate("window.__sameDocument = true")
    assert page.locator('link[href="/static/pair.css"]').count() == 0
    page.click("button:has-text('Start')")
    page.wait_for_selector("h1:has-text('Consent')")
    assert page.url.endswith("/s/acute-pages/consent")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.wait_for_selector("h1:has-text('Instructions')")
    assert page.url.endswith("/s/acute-pages/instructions")
    assert page.evaluate("document.activeElement.id") == "main"
    page.click("#begin")
    page.wait_for_selector("text=Comparison 1 of 2")
    assert page.url.endswith("/s/acute-pages/task")

    # one document from the entry page on; each form asked for the next page with the header
    assert page.evaluate("window.__sameDocument") is True
    assert documents == [f"{server.url}/s/acute-pages/"], documents
    assert [p["url"].rsplit("/", 1)[-1] for p in posts] == ["start", "consent", "instructions"]
    assert all(p["headers"].get("x-dialeval-next-page") == "inline" for p in posts)
    # the comparison's stylesheet came with it, loaded before the page was shown: two columns
    assert page.locator('link[href="/static/pair.css"]').count() == 1
    assert page.evaluate("getComputedStyle(document.querySelector('.pair')).display") == "grid"
    assert page.get_attribute("body", "data-next-page") == "inline" and page.get_attribute("body", "data-task")
    # the "How to" dialog the task page brings opens over it
    page.click("[data-howto]")
    assert page.evaluate("document.getElementById('howto').open") is True
    page.click("#howto button:has-text('Back to the task')")
    # the two-tabs warning speaks of the first task, though the document began as the entry page
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("#other-tab:visible")
    page.wait_for_selector("#other-tab:visible")
    other.close()
    # a reload shows the same comparison
    task = page.get_attribute("body", "data-task")
    page.reload()
    page.wait_for_selector("text=Comparison 1 of 2")
    assert page.get_attribute("body", "data-task") == task
    page.check("input[name=choice][value='1']")
    page.fill("#justification", "the first one is better")
    page.click("#submit")
    page.wait_for_selector("text=Comparison 2 of 2")
    # each session page has its history entry, as a loaded page has; the next task replaced the
    # answered one: back goes to the instructions (loaded again), which lead back to the task
    page.go_back()
    page.wait_for_selector("#begin:has-text('Back to the task')")
    assert page.url.endswith("/s/acute-pages/instructions")
    page.click("#begin")
    page.wait_for_selector("text=Comparison 2 of 2")
    assert page.dialogs == []  # the bots' script, image and link never ran


def test_session_pages_without_javascript_still_work(live_server, browser, tmp_path):
    """With JavaScript off, the same forms are plain posts and their redirects load each page."""
    folder = make_acute_study(tmp_path / "acute", comparisons=1, onboarding=False, name="acute-nojs")
    server = live_server([folder])
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{server.url}/s/acute-nojs/")
        page.click("button:has-text('Start')")
        page.wait_for_selector("h1:has-text('Consent')")
        page.check("#agree")
        page.click("button:has-text('Continue')")
        page.wait_for_selector("h1:has-text('Instructions')")
        page.click("#begin")
        page.wait_for_selector("text=Comparison 1 of 1")
        assert page.url.endswith("/s/acute-nojs/task")
    finally:
        context.close()
