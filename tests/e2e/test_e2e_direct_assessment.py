"""An annotator does a Direct Assessment HIT in Chromium: topic, chat, a refused early finish, the
Topic button, a refresh mid-chat that resumes exactly, seven sliders; a slider value of 150 posted
directly gets 4xx."""

from __future__ import annotations

import pytest

from dialeval.methods.direct_assessment.questions import DA_STATEMENTS
from dialeval.study import open_study
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser
from tests.screenshots import SCREENSHOTS  # noqa: E402

MIN_INPUTS = 3


def say(page, text: str) -> None:
    before = page.locator("#transcript .msg.bot").count()
    page.fill("#composer textarea", text)
    page.click("#composer button")
    page.locator("#transcript .msg.bot").nth(before).wait_for()  # the bot's answer is in the transcript
    page.wait_for_selector("#composer textarea:not([disabled])")


def test_direct_assessment_hit(live_server, browser_page, tmp_path):
    folder = make_live_study(
        tmp_path / "da",
        "direct-assessment",
        ["eliza", "qc"],
        name="da-e2e",
        protocol={"min_inputs": MIN_INPUTS, "qc_bot": "qc"},
    )
    server = live_server([folder])
    page = browser_page()
    page.goto(f"{server.url}/s/da-e2e/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    for position in (1, 2):
        page.wait_for_selector("#topic-form")
        assert f"Conversation {position} of 2" in page.locator("#progress").inner_text()
        page.fill("#topic", "baking bread")
        page.check("input[name=opinion][value=like]")
        page.click("#topic-form button[type=submit]")
        page.wait_for_selector("#composer textarea")
        say(page, "I baked a sourdough loaf this morning")
        say(page, "The crust came out really dark and crunchy")
        # finishing before the minimum is refused by the server
        page.click("#end-chat-form button")
        page.wait_for_selector(f"#end-chat-form [data-error]:has-text('at least {MIN_INPUTS}')")
        page.fill("#new-topic", "holidays")
        page.click("#topic-change-form button")
        page.wait_for_selector("text=Topic changed to: holidays")
        transcript = page.locator("#transcript").inner_text()
        page.reload()  # resumes exactly
        page.wait_for_selector("#composer textarea")
        assert page.locator("#transcript").inner_text() == transcript
        say(page, "Next summer I want to visit Portugal")
        page.click("#end-chat-form button")
        page.wait_for_selector("#da-rate-form")
        # the rating form is brought on screen below the transcript (the method's script, on the
        # live root's dialeval:live-ready event): its end in view, or its top when it is taller
        assert page.evaluate("""() => {
            const r = document.querySelector('#da-rate-form').getBoundingClientRect();
            return window.innerWidth > 700 && r.top < window.innerHeight && (r.bottom <= window.innerHeight + 1
                || r.top <= window.innerHeight * 0.25); }""")
        for text in DA_STATEMENTS.values():
            assert page.locator("#da-rate-form label", has_text=text).count() == 1
        assert page.locator(".da-ends").first.inner_text().split() == ["strongly", "disagree", "strongly", "agree"]
        if position == 1:
            # a slider value of 150 posted directly gets 4xx
            status = page.evaluate("""async () => {
                const form = document.querySelector('#da-rate-form');
                const body = {request_id: 'x' + Date.now() + 'abcdefgh', position: '1', robotic: '10',
                              interesting: '150', fun: '50', consistent: '50', fluent: '50',
                              repetitive: '50', topic: '50'};
                const r = await fetch(form.action, {method: 'POST', headers: {'Content-Type': 'application/json',
                  'Accept': 'application/json',
                  'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content},
                  body: JSON.stringify(body)});
                return r.status; }""")
            assert 400 <= status < 500
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "direct-assessment.png"), full_page=False)
        for k, slider in enumerate(page.locator("[data-slider]").all()):
            slider.fill(str(10 + 10 * k))
        page.click("#da-rate-form button[type=submit]")
    page.wait_for_selector("text=Thank you")
    study = open_study(folder)
    try:
        ds = study.store.load_dataset(study.id)
        ratings = [j for j in ds.judgments if j.question == "ratings"]
        assert len(ratings) == 2
        assert ratings[0].value == {
            "robotic": 10,
            "interesting": 20,
            "fun": 30,
            "consistent": 40,
            "fluent": 50,
            "repetitive": 60,
            "topic": 70,
        }
        convs = ds.conversation_map()
        assert sorted(convs[j.conversation_id].bots[0] for j in ratings) == ["eliza", "qc"]
        for j in ratings:
            conv = convs[j.conversation_id]
            assert len([t for t in conv.turns if t.speaker == "human"]) == MIN_INPUTS
            assert [c["topic"] for c in conv.meta["topic_changes"]] == ["holidays"]
    finally:
        study.close()
    assert page.dialogs == []
