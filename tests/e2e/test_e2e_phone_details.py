"""Details a worker meets on a phone (390x844), checked on a laptop too (issue 21, item 8), measured
with bounding boxes: the "Your persona" list of PW-Turn and SM stays on screen; after the PW-Turn
practice (a failed try, then a passed one) the feedback or the task is on screen, not above it; the
consent and instructions pages show the study's title in the header; an unticked consent gets its
message on the form (the server's answer, also without JavaScript), not an error page."""

from __future__ import annotations

import pytest

from dialeval.protocols import onboarding_content as onb
from tests.e2e.test_e2e_arena_window import quick_enter
from tests.e2e.test_pages import DEVICES, assignment_of, device  # noqa: F401  (device is a fixture)
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser


@pytest.fixture
def context_for(browser):
    contexts = []

    def make(name: str):
        ctx = browser.new_context(**DEVICES[name])
        contexts.append(ctx)
        return ctx.new_page()

    yield make
    for ctx in contexts:
        ctx.close()


def inside_width(page, selector: str) -> dict:
    """The element's box, asserted to lie within the viewport's width."""
    box = page.locator(selector).bounding_box()
    width = page.viewport_size["width"]
    assert box is not None, f"{selector} is not shown"
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, f"{selector} off screen: {box} in {width} px"
    return box


def on_screen_below_header(page, selector: str) -> None:
    """The element's top is on screen, under the sticky header (not above the screen, not hidden by it)."""
    box = page.locator(selector).first.bounding_box()
    header = page.locator(".topbar").bounding_box()
    height = page.viewport_size["height"]
    assert box is not None, f"{selector} is not shown"
    assert header["y"] + header["height"] - 1 <= box["y"] <= height - 40, f"{selector} at {box}, header {header}"


def test_persona_list_opens_on_screen(live_server, context_for, tmp_path, device):  # noqa: F811
    pw = make_live_study(
        tmp_path / "pw",
        "pairwise-turn",
        ["repeat", "eliza"],
        onboarding={"enabled": False},
        name="pw-persona",
        annotation={"units_per_annotator": 1},
    )
    sm = make_live_study(tmp_path / "sm", "single-model", ["eliza"], name="sm-persona")
    server = live_server([pw, sm])
    for slug in ("pw-persona", "sm-persona"):
        page = context_for(device)
        quick_enter(page, f"{server.url}/s/{slug}/")
        page.wait_for_selector("#live:not([data-stage=waiting])", timeout=20000)  # no refresh to come
        page.wait_for_load_state("networkidle")
        if device == "phone":  # the persona is one tap away in the header: its list opens on screen
            page.click(".persona-quick summary")
            inside_width(page, ".persona-quick ul")
            assert page.locator(".persona-quick ul li").count() >= 1
        else:  # the persona stands beside the chat; the header's copy is not needed
            assert page.locator(".persona-quick").is_hidden()
            inside_width(page, ".live-side .persona")


def answer_practice(page, folder, right: bool) -> None:
    a = assignment_of(folder, page.get_attribute("#live", "data-send-url"))
    for k, (step, order) in enumerate(zip(onb.STEPS, a.state["onboarding_orders"], strict=False)):
        good = order.index(step.good)
        page.check(f"input[name=step{k}][value='{good if right else 1 - good}']")
    page.click("button:has-text('Check my answers')")


def test_practice_feedback_and_task_shown_after_the_check(live_server, context_for, tmp_path, device):  # noqa: F811
    folder = make_live_study(
        tmp_path / "pw",
        "pairwise-turn",
        ["repeat", "eliza"],
        onboarding={"tries": 2, "on_fail": "flag"},
        name="pw-practice",
        annotation={"units_per_annotator": 1},
    )
    server = live_server([folder])
    page = context_for(device)
    quick_enter(page, f"{server.url}/s/pw-practice/")
    page.wait_for_selector("#onboarding-form")
    # a wrong try: its feedback (at the top of the practice) is shown, wherever the button was
    answer_practice(page, folder, right=False)
    page.wait_for_selector("#live .notice[role=status]:has-text('answers were right')")
    page.wait_for_timeout(200)  # any scrolling done
    on_screen_below_header(page, "#live .notice[role=status]")
    # the right answers: the task starts on screen (its heading, then its first step)
    page.locator("#onboarding-form button[type=submit]").scroll_into_view_if_needed()
    answer_practice(page, folder, right=True)
    # the task's heading once it is on the page: the live part may be rebuilt once more right after
    # the check, and between the two it is not there (1 run in 6 here, with faster responses)
    page.wait_for_selector("#live:not([data-stage=onboarding]) .task-h1", state="visible")
    page.wait_for_timeout(200)
    on_screen_below_header(page, "#live .task-h1")
    page.wait_for_selector("#choose-form #question, #composer textarea:not([disabled])", timeout=20000)
    step = "#question" if page.locator("#choose-form #question").count() else "#composer textarea"
    box = page.locator(step).bounding_box()
    assert 0 <= box["y"] and box["y"] + 20 <= page.viewport_size["height"], f"{step} at {box}"


def test_consent_and_instructions_show_the_title_and_an_unticked_box_stays_on_the_form(
    live_server,
    context_for,
    tmp_path,
    device,  # noqa: F811
):
    folder = make_live_study(tmp_path / "sm", "single-model", ["eliza"], name="sm-consent")
    server = live_server([folder])
    page = context_for(device)
    page.goto(f"{server.url}/s/sm-consent/")
    page.click("button:has-text('Start')")
    page.wait_for_selector("#agree")
    title = page.locator(".topbar .brand")
    assert title.is_visible() and title.inner_text().strip(), "the consent page's header is empty"
    inside_width(page, ".topbar .brand")
    assert page.locator("#agree").get_attribute("required") is not None  # the browser asks first
    # without the browser's check (as without JavaScript or an old browser), the server answers with
    # the same form and its message beside the box; nothing else to do than tick it
    page.evaluate("document.getElementById('agree').removeAttribute('required')")
    page.click("button:has-text('Continue')")
    page.wait_for_selector("#agree-error")
    assert page.url.endswith("/consent")
    assert "tick the box" in page.locator("#agree-error").inner_text()
    assert "back button" not in page.locator("main").inner_text()
    on_screen_below_header(page, "#agree-error")
    assert page.locator("#agree").get_attribute("aria-invalid") == "true"
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.wait_for_selector("#begin")
    assert page.locator(".topbar .brand").is_visible()
    inside_width(page, ".topbar .brand")
    page.click("#begin")
    page.wait_for_selector("#live")
    if device == "phone":  # on the task page the progress takes the header's room
        assert page.locator(".topbar .brand").is_hidden()
