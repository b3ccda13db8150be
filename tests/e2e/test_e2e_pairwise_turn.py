"""An annotator does PW-Turn in Chromium: practice, live chat with two candidates per turn, a
refresh in the middle that resumes exactly, a refused empty justification, a bot reply holding
<script> shown as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from dialeval.protocols import onboarding_content as onb
from dialeval.store import work
from dialeval.study import open_study
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser
from tests.screenshots import SCREENSHOTS  # noqa: E402

XSS = "<script>alert('x')</script><img src=x onerror=alert('img')>"


def enter(page, server, slug):
    page.goto(f"{server.url}/s/{slug}/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")


def assignment_state(folder: Path, page) -> dict:
    aid = int(page.get_attribute("#live", "data-send-url").split("/a/")[1].split("/")[0])
    study = open_study(folder)
    try:
        return work.get_assignment(study.store, aid).state
    finally:
        study.close()


def test_pairwise_turn_full_unit(live_server, browser_page, tmp_path):
    folder = make_live_study(
        tmp_path / "pw",
        "pairwise-turn",
        ["repeat", "eliza"],
        name="pw-e2e",
        protocol={"bot_turns": 3},
        onboarding={"enabled": True, "tries": 2},
    )
    server = live_server([folder])
    page = browser_page()
    enter(page, server, "pw-e2e")
    page.wait_for_selector("text=Practice first")
    orders = assignment_state(folder, page)["onboarding_orders"]
    for k, (step, order) in enumerate(zip(onb.STEPS, orders)):
        page.check(f"input[name=step{k}][value='{order.index(step.good)}']")
    page.click("button:has-text('Check my answers')")
    # the opening "Hi!" is sent for the annotator; both bots answer
    page.wait_for_selector("#choose-form")
    assert page.locator(".msg.human").first.inner_text().endswith("Hi!")
    persona = assignment_state(folder, page)["persona"]
    for sentence in persona:
        assert page.locator(".persona li", has_text=sentence).count() == 1
    for turn in (1, 2, 3):
        page.wait_for_selector("#choose-form")
        texts = page.locator("#choose-form .candidate .text").all_inner_texts()
        assert len(texts) == 2
        if turn == 2:
            # refresh in the middle: the same two candidates in the same order come back
            page.reload()
            page.wait_for_selector("#choose-form")
            assert page.locator("#choose-form .candidate .text").all_inner_texts() == texts
            assert "You said: " + XSS in texts  # a bot reply holding <script> is shown as text
            assert page.locator("#live script, #live img").count() == 0
            # a refused input: no justification
            page.check("input[name=choice][value='0']")
            page.fill("#justification", "")
            page.evaluate("document.querySelector('#justification').removeAttribute('required')")
            page.click("#choose-form button[type=submit]")
            page.wait_for_selector("#choose-form [data-error]:has-text('at least 2 words')")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.fill("#justification", "")
            page.screenshot(path=str(SCREENSHOTS / "pairwise-turn.png"), full_page=False)
        echo = next(i for i, t in enumerate(texts) if t.startswith("You said:"))
        page.check(f"input[name=choice][value='{echo}']")
        page.fill("#justification", "it repeats what I said")
        page.click("#choose-form button[type=submit]")
        if turn < 3:
            page.wait_for_selector("#composer textarea")
            page.fill("#composer textarea", XSS if turn == 1 else "I like long walks by the sea")
            page.click("#composer button")
    page.wait_for_selector("text=Thank you")
    study = open_study(folder)
    try:
        ds = study.store.load_dataset(study.id)
        prefs = [j for j in ds.judgments if j.question == "preference"]
        assert [j.value["chosen"] for j in prefs] == ["repeat"] * 3
        conv = ds.conversations[0]
        assert conv.turns[3].text == "You said: " + XSS  # stored as written
    finally:
        study.close()
    assert page.dialogs == []
