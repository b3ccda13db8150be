"""An annotator works through a Spot The Bot package in Chromium: refusal, refresh, progress, XSS."""

from __future__ import annotations

import pytest

from dialeval.study import open_study
from tests.web.studies import make_stb_study

pytestmark = pytest.mark.browser

XSS = "<script>alert('stb')</script><img src=x onerror=alert(1)>"
SEEN: list[int] = []
from tests.screenshots import SCREENSHOTS  # noqa: E402


def answer(page, e0="bot", e1="human"):
    SEEN.append(page.locator(".msg .text", has_text="<script>alert('stb')</script>").count())
    page.check(f"input[name=entity0][value={e0}]")
    page.check(f"input[name=entity1][value={e1}]")
    page.check("input[name=fluency][value='0']")
    page.check("input[name=sensibleness][value=tie]")
    page.check("input[name=specificity][value='1']")


def test_spot_the_bot_package(live_server, browser_page, tmp_path):
    folder = make_stb_study(tmp_path / "stb", xss=XSS, bot_segments=3, human_segments=1, exchanges=[2, 3])
    server = live_server([folder])
    page = browser_page()
    page.goto(server.url + "/")
    page.click("text=Annotate (spot-the-bot)")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("text=Segment 1 of 4")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "spot-the-bot.png"), full_page=True)
    # (the screenshot shows the first segment; every bot-bot conversation carries a <script> reply)
    # refused: a speaker left unanswered -> message, nothing stored
    page.check("input[name=entity0][value=bot]")
    page.click("#submit")
    page.wait_for_selector("[data-error]:has-text('Speaker B')")
    study = open_study(folder)
    assert study.store.counts(study.id)["judgments"] == 0
    answer(page)
    page.click("#submit")
    page.wait_for_selector("text=Segment 2 of 4")
    first_segment = page.inner_text("#segment")
    page.reload()  # refresh in the middle: the same segment again, progress kept
    page.wait_for_selector("text=Segment 2 of 4")
    assert page.inner_text("#segment") == first_segment
    for n in (3, 4):
        answer(page, "unsure", "bot")
        page.click("#submit")
        page.wait_for_selector(f"text=Segment {n} of 4")
    answer(page)
    page.click("#submit")
    page.wait_for_selector("text=Segment 1 of 4")  # the second package (packages_per_annotator = 2)
    ds = study.store.load_dataset(study.id)
    assert len(ds.judgments) == 4
    assert {j.value["segment_exchanges"] for j in ds.judgments} <= {2, 3}
    assert all(j.conversation_id for j in ds.judgments)
    texts = page.locator(".msg .text").all_inner_texts()
    assert all("<img" not in t or t.count("<img") == 1 for t in texts)
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    assert sum(SEEN) >= 2  # the bot segments showed the <script> as text
    assert page.dialogs == []
    study.close()
