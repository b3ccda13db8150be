"""An annotator walks a prompt-set session in Chromium on a laptop and on a phone: the practice item,
two long answers side by side (laptop) or in tabs (phone) with the vote always reachable, a bot's
text shown as text (no script runs), and the votes stored."""

from __future__ import annotations

import pytest

from dialeval.store import work
from dialeval.study import open_study
from tests.e2e.test_pages import DEVICES, axe_serious
from tests.web.studies import make_prompts_study

pytestmark = pytest.mark.browser

XSS = "<script>alert('bot')</script><img src=x onerror=alert('img')>"
LONG = "\n".join(f"Step {i}: a long line of the answer that goes on and on." for i in range(60))
# Markdown as current assistants write it: a list, a table and a fenced code block
MARKDOWN = (
    "## Plan\n\n- **first** point\n- second point\n\n| step | cost |\n|---|---|\n| read | 1 |\n| write | 2 |\n\n"
    "```python\nprint('a long line of code that must scroll sideways instead of breaking the layout')\n```\n\n"
)
PROMPTS = [{"id": f"q{i}", "prompt": f"Explain thing {i}.", "category": "c"} for i in range(4)]


def _answers() -> dict[str, dict[str, str]]:
    return {
        "base": {p["id"]: f"base: {LONG}" for p in PROMPTS},
        "sys1": {p["id"]: f"{XSS} sys1:\n\n{MARKDOWN}{LONG}" for p in PROMPTS},
    }


def _correct_letter(folder, page) -> str:
    aid = int(page.get_attribute("#answer", "action").split("/a/")[1].split("/")[0])
    study = open_study(folder)
    try:
        a = work.get_assignment(study.store, aid)
        return "AB"[a.shown_order.index(a.payload["correct"])]
    finally:
        study.close()


def _in_view(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] + 1


def _walk(server, folder, page, slug: str, phone: bool) -> None:
    page.goto(server.url + f"/s/{slug}/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("text=Practice item")
    page.check(f"input[name=choice][value='{_correct_letter(folder, page)}']")
    page.click("#submit")
    for n in range(2):
        page.wait_for_selector(f"text=Item {n + 1} of 2")
        if n == 0:
            assert axe_serious(page) == [], "axe-core: serious or critical violations on the task page"
        assert page.locator(".prompt .msg").count() == 1
        # a bot's markup is shown as text: no element made of it, no dialog (checked at the end)
        assert page.locator(".side .text", has_text="<script>alert('bot')</script>").count() == 1
        assert page.locator(".side img").count() == 0
        # the Markdown answer is rendered: elements, not asterisks and pipes
        answer = page.locator(".side .text", has_text="<script>alert('bot')</script>")
        assert answer.locator("ul li strong").count() == 1 and answer.locator("ul li").count() == 2
        assert answer.locator("table td").count() == 4 and answer.locator("pre code").count() == 1
        page_width = page.evaluate("document.documentElement.scrollWidth")
        assert page_width <= page.viewport_size["width"] + 1, "a long code line scrolls in its block"
        assert _in_view(page, "#submit") and _in_view(page, "input[name=choice][value='A']")
        if phone:  # one answer at a time, switched with the tabs; the vote stays on screen
            assert page.locator("#side-A").is_visible() and not page.locator("#side-B").is_visible()
            page.click("#tab-B")
            assert page.locator("#side-B").is_visible() and not page.locator("#side-A").is_visible()
            page.locator("#side-B .chat").evaluate("e => e.scrollTop = e.scrollHeight")
            assert _in_view(page, "#submit")
        else:  # both answers side by side, each scrolling on its own
            a, b = page.locator("#side-A").bounding_box(), page.locator("#side-B").bounding_box()
            assert a["x"] + a["width"] <= b["x"] and abs(a["y"] - b["y"]) < 2
            scrolls = page.locator("#side-A .chat").evaluate("e => e.scrollHeight > e.clientHeight")
            assert scrolls, "a long answer scrolls inside its own column"
        page.locator("label.choice", has_text="Tie").click()
        page.click("#submit")
    page.wait_for_selector("text=Thank you!")


@pytest.mark.parametrize("device", ["laptop", "phone"])
def test_prompt_set_session(live_server, browser, tmp_path, device):
    folder = make_prompts_study(tmp_path / f"ps-{device}", PROMPTS, _answers(), baseline="base", items_per_session=2)
    server = live_server([folder])
    context = browser.new_context(**DEVICES[device], bypass_csp=True)  # lets add_script_tag inject axe-core
    dialogs: list[str] = []
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        _walk(server, folder, page, f"ps-{device}", phone=device == "phone")
    finally:
        context.close()
    assert dialogs == []
    study = open_study(folder)
    try:
        ds = study.store.load_dataset(study.id)
    finally:
        study.close()
    votes = [j for j in ds.judgments if j.question == "overall"]
    assert len(votes) == 2 and all(j.value["winner"] == "tie" for j in votes)
    assert {j.value["model_a"] for j in votes} | {j.value["model_b"] for j in votes} == {"base", "sys1"}
