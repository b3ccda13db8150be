"""Issue 10, part 2: the live pages measure the annotator's time per step, as the ACUTE pages do.

In Chromium, an SM-Turn rating is given after a pause; the form's request carries `elapsed_ms`
(the time since the form was shown) and the stored `elapsed_s` is that time.
"""

from __future__ import annotations

import json

import pytest

from dialeval.study import open_study
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser


def test_live_form_sends_the_time_the_page_measured(live_server, browser_page, tmp_path):
    folder = make_live_study(
        tmp_path / "sm",
        "single-model",
        ["eliza"],
        name="sm-elapsed",
        protocol={"bot_turns": 1},
        annotation={"units_per_annotator": 1},
    )
    server = live_server([folder])
    page = browser_page()
    sent: list[dict] = []
    page.on(
        "request",
        lambda r: (
            sent.append(json.loads(r.post_data))
            if r.method == "POST" and r.url.endswith("/rate") and r.post_data
            else None
        ),
    )
    page.goto(f"{server.url}/s/sm-elapsed/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("#rate-form")
    page.wait_for_timeout(1500)  # the annotator reads the reply before ticking
    page.check("input[value=engaging]")
    page.click("#rate-form button[type=submit]")
    page.wait_for_selector("#final-form")
    assert sent and float(sent[-1]["elapsed_ms"]) >= 1500
    study = open_study(folder)
    try:
        turn = next(j for j in study.store.load_dataset(study.id).judgments if j.question == "turn")
    finally:
        study.close()
    assert turn.elapsed_s == pytest.approx(float(sent[-1]["elapsed_ms"]) / 1000, abs=0.01)
