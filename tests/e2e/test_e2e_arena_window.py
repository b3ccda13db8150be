"""The arena's vote-change window and the reveal, in Chromium on a laptop, and their layout on a phone
(issue 21, items 7 and 9): the window counts down and folds away when it ends or when the next message is sent; a
change refused after the window leaves the stored vote on the page, never the tick; the header counts
the message being written; once the battle's last vote is final the page names the two models, and
the stored votes stay anonymous."""

from __future__ import annotations

import re

import pytest

from dialeval import clock
from dialeval.study import open_study
from tests.bots.fake_openai_server import start_fake_openai
from tests.e2e.test_pages import DEVICES, openai_bot
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser

WINDOW_S = 5  # the study's change_seconds: long enough to act inside it, short enough to wait it out


def quick_enter(page, url: str) -> None:
    """Entry, consent, instructions (test_pages.enter without its accessibility checks)."""
    page.goto(url)
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_load_state()


def send(page, text: str) -> None:
    page.fill("#composer textarea", text)
    page.click("#composer button")


def vote(page, winner: str) -> None:
    page.check(f"#choose-form input[name=winner][value='{winner}']")
    page.click("#choose-form button[type=submit]")
    page.wait_for_selector("#vote-status")


def countdown(page) -> int:
    return int(re.search(r"(\d+) more second", page.locator("#vote-status").inner_text()).group(1))


def stored_votes(folder):
    study = open_study(folder)
    try:
        return [j.value for j in study.store.load_dataset(study.id).judgments if j.question == "battle"]
    finally:
        study.close()


def window_study(folder, url: str, turns: int):
    return make_live_study(
        folder,
        "arena",
        [openai_bot("alpha", url), openai_bot("beta", url)],
        protocol={"turns": turns, "vote": "per-turn", "change_seconds": WINDOW_S},
        name="arena-window",
        annotation={"units_per_annotator": 1},
    )


def assert_reveal_fits(page, device: str) -> None:
    box = page.locator("#reveal").bounding_box()
    width = DEVICES[device]["viewport"]["width"]
    assert box["x"] >= 0 and box["x"] + box["width"] <= width


def test_vote_window_counts_down_folds_away_and_the_names_follow_the_last_vote(live_server, browser, tmp_path):
    """The whole flow, on a laptop. The phone runs the same page script and server code (chat.js
    differs by width only in scrolling the question into view on a laptop), so the phone test below
    checks what differs there: the layout of the countdown and of the reveal."""
    device = "laptop"
    with start_fake_openai(word_delay=0.04) as url:
        folder = window_study(tmp_path / "arena", url, turns=3)
        server = live_server([folder])
        ctx = browser.new_context(**DEVICES[device])
        try:
            page = ctx.new_page()
            quick_enter(page, f"{server.url}/s/arena-window/")
            progress = page.locator("#progress .progress-label, #progress .progress-detail")

            # round 1: the window counts down, and the header already counts message 2 (being written)
            send(page, "What should I cook tonight?")
            page.wait_for_selector("#choose-form", timeout=20000)
            assert "Message 1 of 3" in " ".join(progress.all_inner_texts())
            vote(page, "model_a")
            assert "Message 2 of 3" in " ".join(progress.all_inner_texts())
            first = countdown(page)
            assert first <= WINDOW_S
            # the shown seconds go down while the window is open (waited for, not slept: ~1 s)
            page.wait_for_function(
                "(first) => { const m = /(\\d+) more second/.exec("
                "(document.querySelector('#vote-status') || {}).innerText || ''); return m && +m[1] < first; }",
                arg=first,
                timeout=(WINDOW_S - 1) * 1000,
            )
            # sending the next message ends the window: the panel goes at once, not after the replies
            send(page, "Something with rice, please")
            page.wait_for_selector("#waiting:not([hidden])")
            assert page.locator("#vote-status").count() == 0 and page.locator("#choose-form").count() == 0
            assert "Your vote: Model A is better" in page.locator(".arena-round").last.inner_text()
            assert "Message 2 of 3" in " ".join(progress.all_inner_texts())

            # round 2: a tap after the window (the page's clock held back) is refused; the page then
            # shows the stored vote, and no tick that differs from it
            page.wait_for_selector("#choose-form", timeout=20000)
            assert "Message 2 of 3" in " ".join(progress.all_inner_texts())
            vote(page, "tie")
            page.evaluate("(() => { const now = Date.now; Date.now = () => now() - 3600e3; })()")
            # the server's window ends: its clock moved past it (the server is a thread of this
            # process, tests/e2e/conftest.live_server), not waited out
            clock.advance(WINDOW_S + 0.3)
            page.check("#choose-form input[name=winner][value='model_b']")
            page.click("#choose-form button[type=submit]")
            page.wait_for_selector("#final-vote")
            note = page.locator("#final-vote").inner_text()
            assert note.startswith("Your vote: Tie") and "final" in note, note
            shown = page.eval_on_selector_all(
                "#live input[name=winner]:checked", "els => els.filter(e => e.offsetParent).map(e => e.value)"
            )
            assert shown in ([], ["tie"]), shown
            assert [v["winner"] for v in stored_votes(folder)] == ["model_a", "tie"]

            # round 3, the last: the window runs out by itself; the battle closes and the names show
            page.reload()
            send(page, "Thanks, and a dessert?")
            page.wait_for_selector("#choose-form", timeout=20000)
            assert "Message 3 of 3" in " ".join(progress.all_inner_texts())
            vote(page, "model_b")
            assert page.locator("#reveal").is_hidden()  # nothing named while the vote can change
            page.wait_for_selector("#reveal", state="visible", timeout=(WINDOW_S + 10) * 1000)
            assert page.locator("#vote-status").count() == 0
            votes = stored_votes(folder)
            assert [v["winner"] for v in votes] == ["model_a", "tie", "model_b"]
            assert all(v["anonymous"] for v in votes)  # cast before the reveal
            names = page.locator("#reveal [data-reveal-name]").all_inner_texts()
            assert names == [votes[-1]["model_a"], votes[-1]["model_b"]] and sorted(names) == ["alpha", "beta"]
            assert_reveal_fits(page, device)
            page.click("#after-reveal")
            page.wait_for_url(re.compile(r"/done$"))
        finally:
            ctx.close()


def test_vote_window_and_reveal_fit_a_phone(live_server, browser, tmp_path):
    """On a phone (390 px, touch): the countdown shows on screen and within the width while the vote can
    change, nothing is named then, and when the window runs out the names show within the width."""
    device = "phone"
    with start_fake_openai(word_delay=0.04) as url:
        folder = window_study(tmp_path / "arena", url, turns=1)
        server = live_server([folder])
        ctx = browser.new_context(**DEVICES[device])
        try:
            page = ctx.new_page()
            quick_enter(page, f"{server.url}/s/arena-window/")
            send(page, "What should I cook tonight?")
            page.wait_for_selector("#choose-form", timeout=20000)
            vote(page, "model_a")
            assert countdown(page) <= WINDOW_S
            status = page.locator("#vote-status")
            assert status.is_visible()
            box = status.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= DEVICES[device]["viewport"]["width"]
            assert page.locator("#reveal").is_hidden()  # nothing named while the vote can change
            page.wait_for_selector("#reveal", state="visible", timeout=(WINDOW_S + 10) * 1000)
            assert page.locator("#vote-status").count() == 0
            votes = stored_votes(folder)
            assert [v["winner"] for v in votes] == ["model_a"] and votes[0]["anonymous"]
            names = page.locator("#reveal [data-reveal-name]").all_inner_texts()
            assert names == [votes[0]["model_a"], votes[0]["model_b"]] and sorted(names) == ["alpha", "beta"]
            assert_reveal_fits(page, device)
            page.click("#after-reveal")
            page.wait_for_url(re.compile(r"/done$"))
        finally:
            ctx.close()
