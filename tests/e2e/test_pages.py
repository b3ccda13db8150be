"""Every method's whole annotator session in Chromium, on a laptop (1366x768) and on a phone (390x844,
touch), checking what makes crowdworkers give good data (issue 11):

- instructions with a worked example before the task, and a "How to" dialog on the task page that
  leaves what was typed in place;
- the question and the choice on the first screen of a laptop (no scrolling);
- progress for the whole session in the sticky header;
- typed text and ticked choices survive a refresh;
- axe-core finds no serious or critical violation on any annotator or admin page;
- live replies stream: the reply grows on the page word by word, from the loopback OpenAI-compatible
  server, and its first word is shown soon after the server sent it.

axe-core comes from npm (tests/e2e/package.json, installed by scripts/setup.sh) and is injected with
Playwright's add_script_tag; nothing is downloaded at run time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dialeval.store import work
from dialeval.study import open_study
from tests.bots.fake_openai_server import start_fake_openai
from tests.web.studies import make_acute_study, make_stb_study
from tests.web.test_live_support import LiveClient, LiveServer, make_live_study

pytestmark = pytest.mark.browser

AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
DEVICES = {
    "laptop": {"viewport": {"width": 1366, "height": 768}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}
# Records how the text of a streamed reply grows (each [data-slot] element), for the streaming checks.
SLOT_RECORDER = """
window.__slotLog = [];
new MutationObserver(() => {
  document.querySelectorAll('[data-slot]').forEach((el) => {
    if (el.classList.contains('typing')) return;
    const n = el.textContent.length, last = window.__slotLog[window.__slotLog.length - 1];
    if (!last || last.n !== n || last.slot !== el.dataset.slot)
      window.__slotLog.push({slot: el.dataset.slot, n, t: Date.now()});
  });
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture(params=list(DEVICES))
def device(request):
    return request.param


@pytest.fixture
def new_page(browser):
    contexts = []

    def make(device: str):
        ctx = browser.new_context(**DEVICES[device], bypass_csp=True)  # lets add_script_tag inject axe-core
        contexts.append(ctx)
        ctx.add_init_script(SLOT_RECORDER)
        page = ctx.new_page()
        page.on("dialog", lambda d: d.dismiss())
        return page

    yield make
    for ctx in contexts:
        ctx.close()


# -- checks shared by every page -------------------------------------------------------------------


def axe_serious(page) -> list[str]:
    """axe-core's serious and critical violations on the page as shown (empty when clean)."""
    assert AXE.exists(), f"{AXE} is missing: run scripts/setup.sh (npm ci --prefix tests/e2e)"
    # the page a click navigated to, parsed: injected into a document still being replaced, the
    # script tag finds no head (seen once in the suite: "Cannot read properties of null")
    page.wait_for_load_state("domcontentloaded")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => v.id + ' x' + v.nodes.length + ': ' + "
        "v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '))"
    )
    return result


def assert_accessible(page, where: str) -> None:
    violations = axe_serious(page)
    assert not violations, f"axe-core on {where}: {violations}"
    assert page.locator("h1").count() >= 1, f"no h1 on {where}"


def on_first_screen(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 60) <= height


def check_task_page(page, device: str, where: str, choice: str) -> str:
    """The checks every task page passes; returns the header's progress text."""
    progress = page.locator("#progress").inner_text()
    assert re.search(r"\d+ of \d+|Practice", progress), progress
    if device == "laptop":  # as the page opened, without any scrolling by the annotator
        assert on_first_screen(page, "#question"), f"question below the first screen on {where}"
        assert on_first_screen(page, choice), f"choice below the first screen on {where}"
    y = page.evaluate("window.scrollY")
    page.mouse.wheel(0, 300)
    page.wait_for_timeout(100)
    assert page.locator(".topbar").bounding_box()["y"] == 0 and page.locator("#progress").is_visible()  # sticky
    page.evaluate("(y) => window.scrollTo(0, y)", y)
    assert_accessible(page, where)
    # "How to" opens the instructions over the page and closes back to it
    page.click("[data-howto]")
    dialog = page.locator("dialog#howto")
    assert dialog.is_visible() and "worked example" in dialog.inner_text().lower()
    assert_accessible(page, where + " (How to)")
    dialog.locator("button").click()
    assert not dialog.is_visible()
    return progress


def enter(page, url: str) -> None:
    page.goto(url)
    assert_accessible(page, "entry")
    page.click("button:has-text('Start')")
    page.locator("#agree").wait_for()  # the consent page, not the entry page it replaces
    assert_accessible(page, "consent")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    text = page.locator(".instructions").inner_text()
    assert "worked example" in text.lower() and len(text) > 400, text
    assert_accessible(page, "instructions")
    page.click("#begin")
    page.wait_for_load_state()


def wait_next(page, before: str) -> None:
    """After a submit: the progress in the header changes, or the thank-you page shows."""
    page.wait_for_function(
        "(b) => location.pathname.endsWith('/done') || (document.querySelector('#progress') || {}).innerText !== b",
        arg=before,
        timeout=20000,
    )
    page.wait_for_load_state()


def assignment_of(folder: Path, url: str):
    aid = int(url.split("/a/")[1].split("/")[0])
    study = open_study(folder)
    try:
        return work.get_assignment(study.store, aid)
    finally:
        study.close()


def done_page(page) -> None:
    page.wait_for_url(re.compile(r"/done$"))
    assert_accessible(page, "done")


# -- ACUTE-Eval --------------------------------------------------------------------------------------


def test_acute_whole_session(live_server, new_page, tmp_path, device):
    folder = make_acute_study(tmp_path / "acute", comparisons=2, name="acute-pages")
    server = live_server([folder])
    page = new_page(device)
    enter(page, f"{server.url}/s/acute-pages/")
    seen = []
    while not page.url.endswith("/done"):
        page.wait_for_selector("#answer")
        a = assignment_of(folder, page.get_attribute("#answer", "action"))
        progress = check_task_page(page, device, f"acute {len(seen)}", "#answer label.choice")
        seen.append(progress)
        side = a.shown_order.index(a.payload["correct"]) + 1 if a.payload.get("is_onboarding") else 1
        if device == "phone":  # the conversations are tabs: the second one is a tap away
            assert page.locator("#side-2").is_hidden()
            page.click("#tab-2")
            assert page.locator("#side-2").is_visible() and page.locator("#side-1").is_hidden()
        page.keyboard.press(str(side))  # the shortcut shown on the button
        assert page.locator(f"input[name=choice][value='{side}']").is_checked()
        page.fill("#justification", f"speaker {side} is the more natural one")
        page.reload()  # nothing typed is lost
        page.wait_for_selector("#answer")
        assert page.locator(f"input[name=choice][value='{side}']").is_checked()
        assert page.input_value("#justification") == f"speaker {side} is the more natural one"
        before = page.locator("#progress").inner_text()
        page.click("#submit")
        wait_next(page, before)
    assert seen[0].startswith("Practice") and any("Comparison 2 of 2" in s for s in seen), seen
    done_page(page)
    # the browser's back button from the task lands on the instructions, which lead back to the task
    # (and the admin pages pass axe too)
    if device == "laptop":
        token = (folder / ".admin-token").read_text().strip()
        page.goto(f"{server.url}/s/acute-pages/admin?token={token}")
        assert_accessible(page, "admin")
        page.goto(f"{server.url}/")
        assert_accessible(page, "start page")
        page.goto(f"{server.url}/s/no-such-study/")
        assert_accessible(page, "error page")
        page.goto(f"{server.url}/s/acute-pages/admin?token={token}")
        page.click("a:has-text('Conversations')")
        assert_accessible(page, "admin conversations")
        page.locator("main a[href*='/admin/conversations/']").first.click()
        assert_accessible(page, "admin conversation")


def test_acute_two_tabs_network_failure_and_back_button(live_server, new_page, tmp_path):
    folder = make_acute_study(tmp_path / "acute", comparisons=2, onboarding=False, name="acute-tabs")
    server = live_server([folder])
    page = new_page("laptop")
    enter(page, f"{server.url}/s/acute-tabs/")
    page.wait_for_selector("#answer")
    # keyboard focus is always visible
    page.locator("#answer input[name=choice]").first.focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", ""), outline
    # a second tab of the same task: both are told
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("#other-tab:visible")
    page.wait_for_selector("#other-tab:visible")
    assert "another tab" in page.locator("#other-tab").inner_text()
    # offline: a plain message and a retry, nothing lost
    page.check("input[name=choice][value='2']")
    page.fill("#justification", "the second one is better")
    before = page.locator("#progress").inner_text()
    page.context.set_offline(True)
    page.click("#submit")
    error = page.locator("#answer [data-error]")
    error.locator("button:has-text('Try again')").wait_for()
    assert "could not reach the server" in error.inner_text() and "Failed to fetch" not in error.inner_text()
    assert page.input_value("#justification") == "the second one is better"
    page.context.set_offline(False)
    error.locator("button:has-text('Try again')").click()
    wait_next(page, before)
    assert "Comparison 2 of 2" in page.locator("#progress").inner_text()
    # the other tab still shows the first comparison: its different answer is refused, and it says so
    other.check("input[name=choice][value='1']")
    other.fill("#justification", "the first one, says the other tab")
    other.click("#submit")
    other.wait_for_selector("#answer [data-error]:has-text('another tab')")
    other.wait_for_function("document.querySelector('#progress').innerText.includes('Comparison 2 of 2')")
    other.close()
    study = open_study(folder)
    try:
        texts = [j.justification for j in study.store.load_dataset(study.id).judgments]
        assert texts == ["the second one is better"], texts  # the first answer, stored once
    finally:
        study.close()
    # back: the instructions page offers the way back to the task, not a fresh start
    page.go_back()
    page.wait_for_selector("#begin")
    assert "/instructions" in page.url
    assert page.locator("#begin").inner_text() == "Back to the task"
    page.click("#begin")
    page.wait_for_selector("#answer")
    assert "Comparison 2 of 2" in page.locator("#progress").inner_text()


# -- Spot The Bot ------------------------------------------------------------------------------------


def test_spot_the_bot_whole_session(live_server, new_page, tmp_path, device):
    folder = make_stb_study(
        tmp_path / "stb", bot_segments=2, human_segments=1, packages_per_annotator=2, name="stb-pages"
    )
    server = live_server([folder])
    page = new_page(device)
    enter(page, f"{server.url}/s/stb-pages/")
    seen = []
    while not page.url.endswith("/done"):
        page.wait_for_selector("#answer")
        progress = check_task_page(page, device, f"spot-the-bot {len(seen)}", "#answer input[name=entity0]")
        seen.append(progress)
        assert "entity" not in page.locator("#answer").inner_text().lower()
        page.check("input[name=entity0][value=human]")
        page.check("input[name=entity1][value=bot]")
        page.reload()
        page.wait_for_selector("#answer")
        assert page.locator("input[name=entity0][value=human]").is_checked()
        for feature in ("fluency", "sensibleness", "specificity"):
            page.check(f"input[name={feature}][value=tie]")
        before = page.locator("#progress").inner_text()
        page.click("#submit")
        wait_next(page, before)
    assert any("Package 1 of 2" in s for s in seen) and any("Package 2 of 2" in s for s in seen), seen
    assert all("min left" in s for s in seen)
    done_page(page)


# -- live chats, streamed from the loopback OpenAI-compatible server ----------------------------------


def openai_bot(name: str, url: str) -> dict:
    return {"name": name, "type": "openai", "options": {"base_url": str(url), "model": name, "retries": 0}}


def streamed_reply_seen(page) -> bool:
    """True when some reply slot grew in several steps on the page (not in one block)."""
    log = page.evaluate("window.__slotLog")
    lengths: dict[str, list[int]] = {}
    for row in log:
        lengths.setdefault(row["slot"], []).append(row["n"])
    return any(len([n for n in ns if n > 0]) >= 3 for ns in lengths.values())


def say(page, text: str, fake, ttft: list[float], typing: bool = False) -> None:
    """Type a message, keep it over a refresh, send it, and wait for the reply to have streamed."""
    page.fill("#composer textarea", text)
    page.reload()
    page.wait_for_selector("#composer textarea")
    assert page.input_value("#composer textarea") == text  # a refresh keeps the unsent message
    page.evaluate("window.__slotLog = []; window.dialevalFirstChunkAt = 0")
    sent = len(fake.state.first_chunk_at)
    page.click("#composer button")
    if typing:  # the server waits before its first word: the page says the partner is typing
        page.wait_for_selector("#waiting [data-slot].typing:has-text('typing')", state="visible", timeout=5000)
    page.wait_for_selector(
        "#live:not([data-stage=waiting]):not([data-stage=chat]), #composer textarea:not([disabled])", timeout=20000
    )
    page.wait_for_function("window.dialevalFirstChunkAt > 0 || !document.querySelector('[data-slot]')", timeout=20000)
    assert streamed_reply_seen(page), page.evaluate("window.__slotLog")
    first_shown = page.evaluate("window.dialevalFirstChunkAt") / 1000
    first_sent = fake.state.first_chunk_at[sent:]
    assert first_sent, "the bot server sent nothing"
    ttft.append(first_shown - min(first_sent))


def report_ttft(ttft: list[float], where: str) -> None:
    """Print how long the first streamed word took to show. That the reply streamed is asserted
    (streamed_reply_seen); its latency is a speed figure, measured by benchmarks/load.py (first word
    p50/p99), not a test's bar: a median bar of 100 ms here failed at 108 ms on a machine at load 7."""
    import os

    ms = [round(1000 * t) for t in ttft]
    print(f"\n{where}: first visible token after the server's first token, ms: {ms} (load {os.getloadavg()[0]:.2f})")
    assert all(t > 0 for t in ttft), ms  # shown after it was sent: the clocks compared are the same one


def test_pairwise_turn_whole_session(live_server, new_page, tmp_path, device):
    with start_fake_openai(word_delay=0.05) as url:
        folder = make_live_study(
            tmp_path / "pw",
            "pairwise-turn",
            [openai_bot("alpha", url), openai_bot("beta", url)],
            protocol={"bot_turns": 3},
            name="pw-pages",
            annotation={"units_per_annotator": 1},
        )
        server = live_server([folder])
        page = new_page(device)
        enter(page, f"{server.url}/s/pw-pages/")
        # the practice: its own counter, the persona reachable
        page.wait_for_selector("#onboarding-form")
        assert page.locator("#progress .progress-label").inner_text() == "Practice"
        assert_accessible(page, "pairwise-turn practice")
        from dialeval.protocols import onboarding_content as onb

        a = assignment_of(folder, page.get_attribute("#live", "data-send-url"))
        for k, (step, order) in enumerate(zip(onb.STEPS, a.state["onboarding_orders"], strict=False)):
            page.check(f"input[name=step{k}][value='{order.index(step.good)}']")
        page.click("button:has-text('Check my answers')")
        ttft: list[float] = []
        for turn in range(3):
            page.wait_for_selector("#choose-form", timeout=20000)
            progress = check_task_page(page, device, f"pairwise-turn choice {turn}", "#choose-form .candidate")
            assert f"Response {turn + 1} of 3" in progress and "Conversation 1 of 1" in progress
            if device == "phone":  # the persona is one tap away in the sticky header
                page.click(".persona-quick summary")
                assert page.locator(".persona-quick ul").is_visible()
                page.click(".persona-quick summary")
            page.keyboard.press("2")
            page.fill("#justification", "it answers what I said")
            page.reload()
            page.wait_for_selector("#choose-form")
            assert page.locator("input[name=choice][value='1']").is_checked()
            assert page.input_value("#justification") == "it answers what I said"
            page.click("#choose-form button[type=submit]")
            if turn == 2:
                break
            page.wait_for_selector("#composer textarea:not([disabled])")
            say(page, "I like hiking in the mountains with my dog", url, ttft)
        done_page(page)
        study = open_study(folder)
        try:  # one judgment per turn, each with the justification typed (and kept over the refresh)
            judged = [j for j in study.store.load_dataset(study.id).judgments if j.question != "onboarding"]
            assert len(judged) == 3 and all(j.justification == "it answers what I said" for j in judged)
        finally:
            study.close()
        report_ttft(ttft, f"pairwise-turn/{device}")


def test_single_model_whole_session(live_server, new_page, tmp_path, device):
    with start_fake_openai(word_delay=0.05, delay=0.4) as url:
        folder = make_live_study(
            tmp_path / "sm",
            "single-model",
            [openai_bot("alpha", url)],
            protocol={"bot_turns": 3},
            name="sm-pages",
            annotation={"units_per_annotator": 1},
        )
        server = live_server([folder])
        page = new_page(device)
        enter(page, f"{server.url}/s/sm-pages/")
        ttft: list[float] = []
        for turn in range(3):
            page.wait_for_selector("#rate-form", timeout=20000)
            progress = check_task_page(page, device, f"single-model check {turn}", "#rate-form .checks label")
            assert "Conversation 1 of 1" in progress and f"Partner message {turn + 1} of 3" in progress, progress
            page.check("#rate-form input[value=engaging]")
            page.reload()
            page.wait_for_selector("#rate-form")
            assert page.locator("#rate-form input[value=engaging]").is_checked()
            page.click("#rate-form button[type=submit]")
            if turn == 2:
                break
            page.wait_for_selector("#composer textarea:not([disabled])")
            if turn == 0 and device == "laptop":
                # offline: the message stays, a plain message and a retry that then sends it once
                page.context.set_offline(True)
                page.fill("#composer textarea", "Are you still there?")
                page.click("#composer button")
                retry = page.locator("#live [data-error] button:has-text('Try again')")
                retry.wait_for()
                error = page.locator("#live [data-error]").first.inner_text()
                assert "could not reach the server" in error and "Failed to fetch" not in error, error
                assert page.input_value("#composer textarea") == "Are you still there?"
                page.context.set_offline(False)
                retry.click()
                continue
            say(page, "Tell me about the best trip you ever made", url, ttft, typing=True)
        page.wait_for_selector("#final-form")
        check_task_page(page, device, "single-model final", "#final-form .scale label")
        for fieldset in page.locator("#final-form fieldset").all():  # the 1-5 scale is one row on any width
            tops = {round(b.bounding_box()["y"]) for b in fieldset.locator(".scale label").all()}
            assert len(tops) == 1, tops
        for name in ("engaging", "humanlike", "interesting"):
            page.check(f"#final-form input[name={name}][value='4']")
        page.reload()
        page.wait_for_selector("#final-form")
        assert page.locator("#final-form input[name=humanlike][value='4']").is_checked()
        page.click("#final-form button[type=submit]")
        done_page(page)
        study = open_study(folder)
        try:  # the message sent by the retry is stored once
            conv = study.store.load_dataset(study.id).conversations[0]
            assert sum(t.text == "Are you still there?" for t in conv.turns) == (1 if device == "laptop" else 0)
        finally:
            study.close()
        report_ttft(ttft, f"single-model/{device}")


def swipe(page, element, dx: int, dy: int) -> float:
    """A finger put on `element` and moved by (10*dx, 10*dy) px (DevTools touch events, as a phone sends)."""
    element.scroll_into_view_if_needed()
    box = element.bounding_box()
    x, y = box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2
    before = page.evaluate("window.scrollY")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for step in range(1, 11):
        cdp.send(
            "Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x + dx * step, "y": y + dy * step}]}
        )
        page.wait_for_timeout(16)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    page.wait_for_timeout(300)
    cdp.detach()
    return page.evaluate("window.scrollY") - before


def test_direct_assessment_whole_session(live_server, new_page, tmp_path, device):
    with start_fake_openai(word_delay=0.05) as url:
        bots = [openai_bot("alpha", url), {"name": "qc", "type": "degraded", "options": {"seed": 7}}]
        folder = make_live_study(
            tmp_path / "da", "direct-assessment", bots, name="da-pages", protocol={"min_inputs": 2, "qc_bot": "qc"}
        )
        server = live_server([folder])
        page = new_page(device)
        enter(page, f"{server.url}/s/da-pages/")
        ttft: list[float] = []
        for position in (1, 2):
            page.wait_for_selector("#topic-form")
            progress = check_task_page(
                page, device, f"direct-assessment topic {position}", "#topic-form .opinion label"
            )
            assert f"Conversation {position} of 2" in progress and "min left" in progress, progress
            page.fill("#topic", "baking bread")
            page.check("input[name=opinion][value=like]")
            page.reload()
            page.wait_for_selector("#topic-form")
            assert page.input_value("#topic") == "baking bread"
            page.click("#topic-form button[type=submit]")
            page.wait_for_selector("#composer textarea")
            assert_accessible(page, f"direct-assessment chat {position}")
            a = assignment_of(folder, page.get_attribute("#live", "data-send-url"))
            streaming_bot = a.shown_order[a.state["index"]] == "alpha"  # the degraded QC bot answers in one piece
            for text in ("I baked a sourdough loaf this morning", "The crust came out dark and crunchy"):
                if streaming_bot:
                    say(page, text, url, ttft)
                else:
                    before = page.locator("#transcript .msg.bot").count()
                    page.fill("#composer textarea", text)
                    page.click("#composer button")
                    page.locator("#transcript .msg.bot").nth(before).wait_for(timeout=20000)
                    page.wait_for_selector("#composer textarea:not([disabled])")
            page.click("#end-chat-form button")
            page.wait_for_selector("#da-rate-form")
            check_task_page(page, device, f"direct-assessment rating {position}", "#da-rate-form [data-slider]")
            sliders = page.locator("#da-rate-form [data-slider]").all()
            assert len(sliders) == 7
            if device == "phone":  # a vertical swipe that starts on a slider scrolls the page, not the slider
                assert swipe(page, sliders[2], 1, -25) > 0  # the page scrolled
                assert page.locator("#da-rate-form .da-item.untouched").count() == 7
                swipe(page, sliders[2], 12, 0)  # a sideways drag does move it
                assert page.locator("#da-rate-form .da-item.untouched").count() == 6
            # an untouched slider is refused (the value 50 it shows is not an answer)
            for slider in sliders[:-1]:
                slider.fill("70")
            page.click("#da-rate-form button[type=submit]")
            page.wait_for_selector("#da-rate-form [data-error]:has-text('Move every slider')")
            page.reload()  # the moved sliders are kept
            page.wait_for_selector("#da-rate-form")
            assert page.locator("#da-rate-form .da-item.untouched").count() == 1
            sliders = page.locator("#da-rate-form [data-slider]").all()
            sliders[-1].focus()
            page.keyboard.press("ArrowRight")  # the keyboard moves a slider too
            assert page.locator("#da-rate-form .da-item.untouched").count() == 0
            before = page.locator("#progress").inner_text()
            page.click("#da-rate-form button[type=submit]")
            if position == 1:
                wait_next(page, before)
        done_page(page)
        report_ttft(ttft, f"direct-assessment/{device}")


def test_untouched_slider_refused_by_the_server(tmp_path):
    """Over HTTP, as the page posts it: a slider left untouched (empty) is refused with a message, and
    nothing is stored; with every slider moved the rating is accepted."""
    folder = make_live_study(
        tmp_path / "da",
        "direct-assessment",
        ["eliza", "qc"],
        name="da-refuse",
        protocol={"min_inputs": 1, "qc_bot": "qc"},
    )
    with LiveServer([folder]) as server:
        client = LiveClient(server)
        try:
            client.enter()
            client.task()
            assert client.act("start_chat", {"topic": "tea", "opinion": "like"}).status_code == 200
            client.await_reply()
            client.say("I drink green tea every morning")
            assert client.act("end_chat").status_code == 200
            moved = {
                "robotic": "10",
                "interesting": "60",
                "fun": "55",
                "consistent": "50",
                "fluent": "80",
                "repetitive": "20",
            }
            r = client.act("rate", {"position": "1", **moved, "topic": ""})
            assert r.status_code == 400 and "Move every slider" in r.json()["error"], r.text
            assert work.list_judgments(server.store, server.study_id, question="ratings") == []
            r = client.act("rate", {"position": "1", **moved, "topic": "50"})
            assert r.status_code == 200, r.text
            assert len(work.list_judgments(server.store, server.study_id, question="ratings")) == 1
        finally:
            client.close()


def test_study_file_instructions_replace_ours(tmp_path):
    """pages.instructions in the study file is what the instructions page and the How-to dialog show."""
    import yaml

    folder = make_live_study(tmp_path / "sm", "single-model", ["repeat"], name="sm-custom")
    data = yaml.safe_load((folder / "study.yaml").read_text())
    data["pages"] = {"instructions": "Talk about <b>gardening</b> only.\nBe kind."}
    (folder / "study.yaml").write_text(yaml.safe_dump(data))
    with LiveServer([folder]) as server:
        client = LiveClient(server)
        try:
            client.http.get(client.url())
            r = client.http.post(client.url("start"), data={})
            client.csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
            r = client.http.post(client.url("consent"), data={"csrf": client.csrf, "agree": "yes"})
            assert "Talk about &lt;b&gt;gardening&lt;/b&gt; only." in r.text  # escaped, never HTML
            assert "worked example" not in r.text.lower()
            client.http.post(client.url("instructions"), data={"csrf": client.csrf})
            task = client.task().text
            dialog = task[task.index('<dialog id="howto"') :]
            assert "gardening" in dialog and "worked example" not in dialog.lower()
        finally:
            client.close()
