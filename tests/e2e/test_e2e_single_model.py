"""An annotator does SM-Turn + SM-Dialog in Chromium: live chat, checkboxes after each bot message,
a refresh while a checkbox answer is pending (resumes exactly), a refused empty tick, the Likert end."""

from __future__ import annotations

import pytest

from dialeval.study import open_study
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser
from tests.screenshots import SCREENSHOTS  # noqa: E402


def test_single_model_full_unit(live_server, browser_page, tmp_path):
    folder = make_live_study(
        tmp_path / "sm",
        "single-model",
        ["eliza"],
        name="sm-e2e",
        protocol={"bot_turns": 3},
        annotation={"units_per_annotator": 1},
    )
    server = live_server([folder])
    page = browser_page(viewport={"width": 420, "height": 860})  # a phone
    page.goto(f"{server.url}/s/sm-e2e/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    for turn in (1, 2, 3):
        page.wait_for_selector("#rate-form")
        assert page.locator(".msg.bot").count() == turn
        if turn == 1:
            # a refused input: nothing ticked
            page.click("#rate-form button[type=submit]")
            page.wait_for_selector("#rate-form [data-error]:has-text('none of these')")
            page.check("input[value=engaging]")
            page.reload()  # refresh while the ticks are pending: same stage, same transcript
            page.wait_for_selector("#rate-form")
            assert page.locator(".msg.bot").count() == 1 and page.locator(".msg.human").count() == 1
            page.check("input[value=engaging]")
            page.check("input[value=interesting]")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "single-model.png"), full_page=True)
        else:
            page.check("[data-none]")
        page.click("#rate-form button[type=submit]")
        if turn < 3:
            page.wait_for_selector("#composer textarea")
            page.fill("#composer textarea", f"I spent the weekend fixing my old bicycle, part {turn}")
            page.keyboard.press("Enter")
    page.wait_for_selector("#final-form")
    for q, v in (("engaging", 4), ("humanlike", 2), ("interesting", 3)):
        page.check(f"input[name={q}][value='{v}']")
    page.click("#final-form button[type=submit]")
    page.wait_for_selector("text=Thank you")
    study = open_study(folder)
    try:
        ds = study.store.load_dataset(study.id)
        turns = [j.value for j in ds.judgments if j.question == "turn"]
        assert turns[0] == {"turn": 1, "engaging": True, "humanlike": False, "interesting": True}
        assert [t["turn"] for t in turns] == [1, 2, 3]
        assert [j.value for j in ds.judgments if j.question == "dialog"] == [
            {"engaging": 4, "humanlike": 2, "interesting": 3}
        ]
    finally:
        study.close()
    assert page.dialogs == []
