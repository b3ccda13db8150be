"""An annotator walks through ACUTE-Eval in Chromium: onboarding, comparisons, refresh, refusal, XSS."""

from __future__ import annotations

from pathlib import Path

import pytest

from dialeval.store import work
from dialeval.study import open_study
from tests.web.studies import make_acute_study

pytestmark = pytest.mark.browser

XSS_BOT = "<script>alert('bot')</script><img src=x onerror=alert('img')>"
XSS_WHY = "<script>alert('why')</script> because nicer"
from tests.screenshots import SCREENSHOTS  # noqa: E402


def correct_choice(folder: Path, page) -> str:
    aid = int(page.get_attribute("#answer", "action").split("/a/")[1].split("/")[0])
    study = open_study(folder)
    try:
        a = work.get_assignment(study.store, aid)
        return str(a.shown_order.index(a.payload["correct"]) + 1)
    finally:
        study.close()


def test_acute_full_unit(live_server, browser_page, tmp_path):
    folder = make_acute_study(tmp_path / "acute", xss=XSS_BOT, comparisons=2)
    server = live_server([folder])
    page = browser_page()
    page.goto(server.url + "/")
    page.click("text=Annotate (acute)")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("text=Practice comparison")
    # onboarding: human vs weak bot
    page.check(f"input[name=choice][value='{correct_choice(folder, page)}']")
    page.fill("#justification", "sounds like a real person")
    page.click("#submit")
    page.wait_for_selector("text=Comparison 1 of 2")
    # a refused input: empty justification -> message shown, nothing stored
    page.check("input[name=choice][value='1']")
    page.click("#submit")
    page.wait_for_selector("[data-error]:has-text('at least 2 words')")
    study = open_study(folder)
    assert study.store.counts(study.id)["judgments"] == 1
    # refresh in the middle: the same comparison comes back
    action = page.get_attribute("#answer", "action")
    page.reload()
    assert page.get_attribute("#answer", "action") == action
    assert page.locator("text=Comparison 1 of 2").count() == 1
    page.check("input[name=choice][value='2']")
    page.fill("#justification", XSS_WHY)
    page.click("#submit")
    page.wait_for_selector("text=Comparison 2 of 2")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "acute.png"), full_page=False)
    page.check("input[name=choice][value='1']")
    page.fill("#justification", "more specific answers")
    page.click("#submit")
    page.wait_for_selector("text=Thank you!")
    assert page.locator("#completion-code").inner_text().strip()
    ds = study.store.load_dataset(study.id)
    prefs = [j for j in ds.judgments if j.question == "preference"]
    assert len(prefs) == 2 and prefs[0].justification == XSS_WHY
    # admin pages show the annotator's justification and bot text as text
    admin = browser_page()
    admin.goto(server.admin_url("acute-test"))
    admin.wait_for_selector("#annotators")
    admin.goto(server.url + "/s/acute-test/admin/conversations/selfchat-eliza-0000")
    assert admin.locator(".msg .text", has_text="<script>alert('bot')</script>").count() == 1
    assert admin.locator("script:not([src])").count() == 0
    assert page.dialogs == [] and admin.dialogs == []
    study.close()


def test_acute_xss_in_task_page(live_server, browser_page, tmp_path):
    # every bot's lines are the payload: whichever pair the scheduler draws first shows it
    all_bots = ("retrieval", "eliza", "repeat")
    folder = make_acute_study(tmp_path / "x", xss=XSS_BOT, xss_bots=all_bots, onboarding=False, comparisons=3)
    server = live_server([folder])
    page = browser_page({"width": 390, "height": 844})  # a phone
    page.goto(server.url + "/s/acute-test/?volunteer=1")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    found = False
    for _ in range(3):
        page.wait_for_selector("#answer")
        if page.locator(".msg .text", has_text="<script>alert('bot')</script>").count():
            found = True
            break
        page.check("input[name=choice][value='1']")
        page.fill("#justification", "left is better")
        page.click("#submit")
        page.wait_for_load_state()
    assert found
    assert page.locator("main script").count() == 0 and page.locator("img[src=x]").count() == 0
    assert page.dialogs == []
