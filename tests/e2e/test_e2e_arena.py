"""A whole arena battle in Chromium, on a laptop and on a phone: two anonymous models side by side
(stacked on the phone), both replies streamed word by word from the loopback OpenAI-compatible
server, a vote kept over a refresh, changed inside its window, the next message, the final vote and
the two names shown after it, axe-core clean on every step; and a battle inside a cross-site iframe
with every cookie blocked."""

from __future__ import annotations

import pytest

from dialeval.store import work
from dialeval.study import open_study
from dialeval.web.app import create_app
from tests.bots.fake_openai_server import start_fake_openai
from tests.e2e.test_e2e_integrity import (  # noqa: F401  (tls_cert is a fixture)
    ThreadServer,
    cookieless_context,
    embedding_page,
    mturk_task_url,
    press,
    route_mturk,
    start_flow,
    tick,
    tls_cert,
)
from tests.e2e.test_pages import (  # noqa: F401  (device and new_page are fixtures)
    assert_accessible,
    check_task_page,
    device,
    done_page,
    enter,
    new_page,
    openai_bot,
    report_ttft,
    streamed_reply_seen,
)
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser


def say(page, text: str, fake, ttft: list[float]) -> None:
    """Type a message, keep it over a refresh, send it, and wait until both replies have streamed
    and the vote is asked (as test_pages.say, but the page may start in the "voted" stage)."""
    page.fill("#composer textarea", text)
    page.reload()
    page.wait_for_selector("#composer textarea")
    assert page.input_value("#composer textarea") == text  # a refresh keeps the unsent message
    page.evaluate("window.__slotLog = []; window.dialevalFirstChunkAt = 0")
    sent = len(fake.state.first_chunk_at)
    page.click("#composer button")
    page.wait_for_selector("#live[data-stage=vote]", timeout=20000)
    log = page.evaluate("window.__slotLog")
    assert streamed_reply_seen(page), log
    assert {row["slot"] for row in log} == {"0", "1"}  # both models' replies streamed, each in its column
    ttft.append(page.evaluate("window.dialevalFirstChunkAt") / 1000 - min(fake.state.first_chunk_at[sent:]))


def test_arena_whole_battle(live_server, new_page, tmp_path, device):  # noqa: F811
    with start_fake_openai(word_delay=0.05) as url:
        folder = make_live_study(
            tmp_path / "arena",
            "arena",
            [openai_bot("alpha", url), openai_bot("beta", url)],
            protocol={"turns": 2, "vote": "per-turn"},
            name="arena-pages",
            annotation={"units_per_annotator": 1},
        )
        server = live_server([folder])
        page = new_page(device)
        enter(page, f"{server.url}/s/arena-pages/")
        page.wait_for_selector("#live[data-stage=chat]")
        assert "Battle 1 of 1" in page.locator("#progress").inner_text()
        assert_accessible(page, "arena chat")
        ttft: list[float] = []
        say(page, "What should I cook tonight?", url, ttft)
        page.wait_for_selector("#choose-form")
        check_task_page(page, device, "arena vote 1", "#choose-form .candidate")
        replies = page.locator(".arena-round .candidate")
        assert replies.count() == 2
        assert replies.nth(0).locator(".label").inner_text() == "Model A"
        assert replies.nth(1).locator(".label").inner_text() == "Model B"
        assert all("reply to: What should I cook tonight?" in t for t in replies.all_inner_texts())
        a, b = replies.nth(0).bounding_box(), replies.nth(1).bounding_box()
        if device == "phone":  # stacked: Model B under Model A, each as wide as the screen allows
            assert b["y"] >= a["y"] + a["height"] - 1 and a["width"] > 250
        else:  # side by side
            assert abs(a["y"] - b["y"]) < 2 and b["x"] > a["x"] + a["width"] - 1
        # a ticked vote survives a refresh; then it is cast, and changed inside its window
        page.check("input[name=winner][value=model_a]")
        page.reload()
        page.wait_for_selector("#choose-form")
        assert page.locator("input[name=winner][value=model_a]").is_checked()
        page.click("#choose-form button[type=submit]")
        page.wait_for_selector("#vote-status:has-text('Model A is better')")
        assert_accessible(page, "arena voted")
        page.check("input[name=winner][value=tie]")
        page.click("#choose-form button[type=submit]")
        page.wait_for_selector("#vote-status:has-text('Tie')")
        # the next message makes that vote final; the second round, then the last vote
        say(page, "Something with rice, please", url, ttft)
        page.wait_for_selector("#choose-form")
        assert page.locator(".arena-round").count() == 2
        assert page.locator(".arena-round").first.inner_text().count("Your vote: Tie") == 1
        page.check("input[name=winner][value='tie (bothbad)']")
        page.click("#choose-form button[type=submit]")
        page.wait_for_selector("#next-form")
        assert_accessible(page, "arena last vote")
        page.click("#next-form button[type=submit]")
        # the battle is closed: the page names the two models (the votes were cast blind)
        page.wait_for_selector("#reveal", state="visible")
        assert sorted(page.locator("#reveal [data-reveal-name]").all_inner_texts()) == ["alpha", "beta"]
        assert_accessible(page, "arena reveal")
        page.click("#after-reveal")
        done_page(page)
        study = open_study(folder)
        try:
            votes = [j for j in study.store.load_dataset(study.id).judgments if j.question == "battle"]
            assert [(j.value["turn"], j.value["winner"]) for j in votes] == [(1, "tie"), (2, "tie (bothbad)")]
            assert all(j.value["anonymous"] for j in votes)
        finally:
            study.close()
        report_ttft(ttft, f"arena/{device}")


def test_arena_in_cross_site_iframe_without_cookies(browser, tmp_path, tls_cert):  # noqa: F811
    """The battle inside MTurk's cross-site iframe with every cookie blocked: the page's session
    token carries the identity through the live chat (send, the streamed replies, the vote)."""
    folder = make_live_study(
        tmp_path / "arena", "arena", ["repeat", "eliza"], protocol={"turns": 1}, name="arena-frame"
    )
    app = create_app([folder])
    ctx = cookieless_context(browser, tmp_path)
    try:
        with ThreadServer(app, tls_cert) as task_server:
            task = mturk_task_url(task_server.port, "arena-frame", "WA1", "AA1", "HA1")
            with ThreadServer(embedding_page(task), tls_cert) as outer:
                submitted = route_mturk(ctx)
                page = ctx.new_page()
                page.goto(f"https://localhost:{outer.port}/")
                frame = start_flow(page)
                frame.locator("#live[data-stage=chat] #composer textarea").fill("Hello, who wants to talk about boats?")
                press(frame.locator("#composer button"))  # the keyboard: see tests/e2e/test_e2e_integrity.py
                frame.locator("#choose-form").wait_for()
                assert frame.locator(".arena-round .candidate").count() == 2
                tick(frame.locator("input[name=winner][value=model_b]"))
                press(frame.locator("#choose-form button[type=submit]"))
                frame.locator("#vote-status").wait_for()
                press(frame.locator("#next-form button[type=submit]"))
                frame.locator("#reveal").wait_for()
                press(frame.locator("#after-reveal"))  # its link keeps the page's session token
                frame.locator("#mturk-ok").wait_for()  # the done page submitted the HIT by itself
                assert "assignmentId=AA1" in submitted[0]
                assert ctx.cookies(f"https://127.0.0.1:{task_server.port}/s/arena-frame/") == []
        served = next(iter(app.state.studies.values()))
        (vote,) = [j for j in work.list_judgments(served.ctx.store, served.ctx.study_id) if j.question == "battle"]
        assert vote.value["winner"] == "model_b"
    finally:
        ctx.close()
        for s in app.state.studies.values():
            s.ctx.store.close()
