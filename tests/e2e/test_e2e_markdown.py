"""Bot answers rendered as people read them (sanitised Markdown, bot_markdown.py), in Chromium.

- Arena, laptop and phone: two long Markdown answers (a heading, a list, a table, a code block with a
  long line, a link, an image) streamed from the loopback OpenAI-compatible server. What is rendered is
  checked as elements, while streaming and once stored; the code block scrolls sideways inside its
  answer (the page never does); side by side on the laptop, stacked on the phone; the battle box opens
  at the start of the answers and the question and vote stay in the window; axe-core stays clean.
- ACUTE, laptop and phone: the same answers in the two conversations side by side (tabs on the phone).
- XSS: a list of classic vectors through the Markdown path of the ACUTE and Spot The Bot pages and
  through the arena's streamed replies, with the page's CSP *bypassed* (so the sanitiser alone has to
  hold): no dialog opens, no script of theirs runs, no element has an on* attribute or a javascript:
  or data: URL, no image, SVG, iframe or form comes from a reply.
"""

from __future__ import annotations

import pytest

from dialeval.records import Conversation, Turn
from dialeval.study import open_study
from tests.bots.fake_openai_server import start_fake_openai
from tests.e2e.test_pages import (  # noqa: F401  (device and new_page are fixtures)
    assert_accessible,
    device,
    enter,
    new_page,
    openai_bot,
    streamed_reply_seen,
)
from tests.web.studies import BOTS, make_stb_study, write_study
from tests.web.test_live_support import make_live_study
from tests.web.xss_payloads import XSS

pytestmark = pytest.mark.browser

LONG_LINE = "result = compute(" + ", ".join(f"argument_{i}" for i in range(30)) + ")"
ANSWER = f"""## Why is the sky blue?

Sunlight is **scattered** by the air; short wavelengths scatter *more*:

1. Blue light scatters about 5.5 times more than red.
2. The Sun emits less violet.
3. Our eyes are less sensitive to violet.

| colour | wavelength (nm) | scattering |
|--------|----------------:|------------|
| blue   | 450             | strong     |
| red    | 700             | weak       |

```python
{LONG_LINE}
print(result)
```

Use `numpy` for the numbers; see [Rayleigh scattering](https://en.wikipedia.org/wiki/Rayleigh_scattering).
![a diagram](https://example.com/tracker.png)
"""


# Run in the page after everything is shown: what a successful injection would leave behind.
INJECTED = """() => {
  const bad = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const v = a.value.replace(/[\\s\\u0000-\\u001f]/g, '').toLowerCase();
      if (a.name.startsWith('on')) bad.push(el.tagName + '[' + a.name + ']');
      const url = ['href', 'src', 'action', 'formaction', 'xlink:href'].includes(a.name);
      if (url && /^(javascript|vbscript|data):/.test(v))
        bad.push(el.tagName + '[' + a.name + '=' + v.slice(0, 30) + ']');
    }
  }
  // our scripts sit after <main> (and axe-core in <head>): a script inside the page's content is theirs
  document.querySelectorAll('main script').forEach(() => bad.push('script element'));
  const theirs = '.text img, .text svg, .text iframe, .text form, .text input, .text style, .text math, '
    + '[data-slot] img, [data-slot] svg, [data-slot] iframe, .md [style]';
  document.querySelectorAll(theirs).forEach((e) => bad.push('element ' + e.tagName));
  return bad.concat(window.__xss || []);
}"""
# A payload that did run would call alert() (a dialog); record calls too, even auto-dismissed ones.
TRAP = """window.__xss = [];
for (const f of ['alert', 'confirm', 'prompt']) {
  const o = window[f];
  window[f] = (m) => { window.__xss.push(f + ':' + m); return o.call(window, m); };
}"""

# Remembers which Markdown elements a streamed reply showed while it was still streaming.
STREAM_TAGS = """
window.__streamTags = new Set();
new MutationObserver(() => {
  document.querySelectorAll('[data-slot] .md *').forEach((el) => window.__streamTags.add(el.tagName));
}).observe(document, {subtree: true, childList: true});
"""


def rendered(locator) -> dict[str, int]:
    """How many of each Markdown element the answer holds (elements, not text)."""
    return locator.evaluate(
        """(el) => Object.fromEntries(['h3', 'h4', 'ol > li', 'ul > li', 'table th', 'table td', 'pre > code', 'p code',
             'strong', 'em', 'a[target=_blank][rel="noopener noreferrer"]', 'img', 'a[href^="https://example.com/tracker"]']
           .map((s) => [s, el.querySelectorAll(s).length]))"""
    )


EXPECTED = {
    "h3": 0,  # "##" -> h4: under the page's own headings
    "h4": 1,
    "ol > li": 3,
    "ul > li": 0,
    "table th": 3,
    "table td": 6,
    "pre > code": 1,
    "p code": 1,
    "strong": 1,
    "em": 1,
    'a[target=_blank][rel="noopener noreferrer"]': 2,
    "img": 0,  # the image is a link, never loaded
    'a[href^="https://example.com/tracker"]': 1,
}


def scrolls_sideways_inside(page, answer) -> None:
    """The code block is wider than its answer and scrolls; the answer and the page are not widened."""
    pre = answer.locator("pre")
    assert pre.evaluate("(p) => p.scrollWidth > p.clientWidth + 20"), "the long code line should scroll"
    assert pre.evaluate("(p) => getComputedStyle(p).overflowX") == "auto"
    assert pre.evaluate("(p) => getComputedStyle(p.querySelector('code')).fontFamily").lower().find("mono") >= 0
    box, pbox = answer.bounding_box(), pre.bounding_box()
    assert pbox["x"] >= box["x"] - 1 and pbox["x"] + pbox["width"] <= box["x"] + box["width"] + 1
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def in_window(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= page.viewport_size["height"] + 1


def test_arena_markdown_answers(live_server, new_page, tmp_path, device):  # noqa: F811
    with start_fake_openai(reply=ANSWER, word_delay=0.01) as url:
        folder = make_live_study(
            tmp_path / "arena",
            "arena",
            [openai_bot("alpha", url), openai_bot("beta", url)],
            protocol={"turns": 1},
            name="arena-md",
            annotation={"units_per_annotator": 1},
        )
        server = live_server([folder])
        page = new_page(device)
        page.context.add_init_script(STREAM_TAGS)
        enter(page, f"{server.url}/s/arena-md/")
        page.wait_for_selector("#live[data-stage=chat]")
        page.evaluate("window.__slotLog = []")
        page.fill("#composer textarea", "Why is the sky blue?")
        page.click("#composer button")
        page.wait_for_selector("#live[data-stage=vote]", timeout=30000)
        # while streaming, the reply was already shown as Markdown (the server's rendering of it so far)
        seen = set(page.evaluate("[...window.__streamTags]"))
        assert {"H4", "LI", "TABLE", "PRE", "CODE", "STRONG"} <= seen, seen
        assert streamed_reply_seen(page)
        answers = page.locator(".arena-round .candidate")
        assert answers.count() == 2
        for i in range(2):
            assert rendered(answers.nth(i)) == EXPECTED
            assert answers.nth(i).locator("text=**").count() == 0 and "##" not in answers.nth(i).inner_text()
            scrolls_sideways_inside(page, answers.nth(i).locator(".md"))
        a, b = answers.nth(0).bounding_box(), answers.nth(1).bounding_box()
        if device == "phone":
            assert b["y"] >= a["y"] + a["height"] - 1
        else:
            assert abs(a["y"] - b["y"]) < 2 and b["x"] > a["x"] + a["width"] - 1
        box = page.locator("#transcript")
        if device == "laptop":  # the battle box opens at the annotator's message: answers read from their start
            assert box.evaluate("(t) => t.scrollHeight > t.clientHeight"), "long answers scroll in their box"
            mine = page.locator("#transcript .msg.human").last.bounding_box()
            tbox = box.bounding_box()
            assert tbox["y"] - 1 <= mine["y"] <= tbox["y"] + 30
        else:  # no box in a box on a phone: the page scrolls, through both answers
            assert box.evaluate("(t) => t.scrollHeight <= t.clientHeight + 1")
        # the question and every vote stay in the window wherever one is in the answers
        for where, f in (("as opened", None), ("top", 0), ("middle", 0.5), ("bottom", 1)):
            if f is not None:
                page.evaluate("(f) => window.scrollTo(0, f * (document.documentElement.scrollHeight - innerHeight))", f)
                box.evaluate("(t, f) => t.scrollTop = f * (t.scrollHeight - t.clientHeight)", f)
            assert in_window(page, "#question"), where
            assert in_window(page, "#choose-form button[type=submit]"), where
            assert in_window(page, "label.candidate:has(input[value='tie (bothbad)'])"), where
        page.evaluate("window.scrollTo(0, 0)")
        assert_accessible(page, f"arena markdown ({device})")
        page.click("label.candidate:has(input[value=model_b])")
        page.click("#choose-form button[type=submit]")
        page.wait_for_selector("#vote-status")
        assert page.evaluate(INJECTED) == []


def acute_study(folder, texts: list[str], name: str, markdown: bool = True):
    """An ACUTE study whose bots' turns hold `texts` (one per turn), the partners' turns plain lines."""
    data = {
        "name": name,
        "method": "acute",
        "seed": 1,
        "bots": BOTS[:2],
        "questions": [{"id": "preference"}],
        "onboarding": {"enabled": False},
        "annotation": {"expire_minutes": 30, "min_justification_words": 0, "require_justification": False},
        "protocol": {"comparisons_per_unit": 1, "annotations_per_pair": 5},
        "pages": {"markdown": markdown},
    }
    write_study(folder, data)
    study = open_study(folder)
    try:
        for bot in ("retrieval", "eliza"):
            turns = [Turn("entity0", "Hi! Can you help me?", is_seed=True)]
            for i, text in enumerate(texts):
                turns.append(Turn("entity1", text, bot=bot))
                turns.append(Turn("entity0", f"**thanks** for answer {i}", bot=None))
            study.store.save_conversation(study.id, Conversation(f"c-{bot}", [bot, bot], turns, source="self-chat"))
    finally:
        study.close()
    return folder


def test_acute_markdown_side_by_side(live_server, new_page, tmp_path, device):  # noqa: F811
    server = live_server([acute_study(tmp_path / "acute", [ANSWER, "Plain words, nothing more."], "acute-md")])
    page = new_page(device)
    enter(page, f"{server.url}/s/acute-md/")
    page.wait_for_selector("#answer")
    for side in (1, 2):
        if device == "phone":
            page.click(f"#tab-{side}")
        chat = page.locator(f"#side-{side} .chat")
        bot = chat.locator(".msg-eval .text").first
        assert rendered(bot) == EXPECTED
        scrolls_sideways_inside(page, bot.locator(".md"))
        # a person's line stays raw text, Markdown and all; a plain bot line reads the same as before
        assert chat.locator(".msg-other .text", has_text="**thanks** for answer 0").count() == 1
        assert chat.locator(".msg-eval .text").nth(1).inner_text() == "Plain words, nothing more."
        # each conversation scrolls in its own box; the question and the choices stay in the window
        assert chat.evaluate("(c) => c.scrollHeight > c.clientHeight && getComputedStyle(c).overflowY === 'auto'")
        chat.evaluate("(c) => c.scrollTop = c.scrollHeight")
        assert in_window(page, "#question") and in_window(page, "#answer button[type=submit]")
    if device == "phone":  # back to the first conversation: where one had read to is kept
        page.click("#tab-1")
        assert page.locator("#side-1 .chat").evaluate("(c) => c.scrollTop > 0")
    else:
        a, b = page.locator("#side-1").bounding_box(), page.locator("#side-2").bounding_box()
        assert abs(a["y"] - b["y"]) < 2
    assert_accessible(page, f"acute markdown ({device})")


def check_no_injection(page, where: str) -> None:
    assert page.evaluate(INJECTED) == [], where


def test_xss_payloads_through_the_markdown_pages(live_server, browser, tmp_path):
    """Every vector on the ACUTE page (one bot turn each), on Spot The Bot, and streamed in the arena."""
    ctx = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 900})
    ctx.add_init_script(TRAP)
    page = ctx.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        acute = acute_study(tmp_path / "acute", XSS, "acute-xss")
        stb = make_stb_study(tmp_path / "stb", xss="\n\n".join(XSS), packages_per_annotator=1, name="stb-xss")
        with start_fake_openai(reply="\n\n".join(XSS), word_delay=0.002) as url:
            arena = make_live_study(
                tmp_path / "arena",
                "arena",
                [openai_bot("alpha", url), openai_bot("beta", url)],
                protocol={"turns": 1},
                name="arena-xss",
                annotation={"units_per_annotator": 1},
            )
            server = live_server([acute, stb, arena])
            page.goto(f"{server.url}/s/acute-xss/")
            _enter(page)
            page.wait_for_selector("#answer")
            shown = page.locator("#side-1 .msg-eval .text")
            assert shown.count() == len(XSS)
            # raw HTML is visible text, never markup; Markdown links to javascript:/data: are no links
            assert "<script>alert('script')</script>" in shown.nth(0).inner_text()
            assert page.locator("#side-1 .msg-eval .text > .md").count() == len(XSS)  # through the Markdown path
            check_no_injection(page, "acute")

            page.goto(f"{server.url}/s/stb-xss/")
            _enter(page)
            page.wait_for_selector("#answer")
            for _ in range(6):  # the package's segments, until one holds the bot-bot turn with the payloads
                if page.locator(".text", has_text="alert('script')").count():
                    break
                page.click("label:has(input[name=entity0][value]) >> nth=0")
                page.click("label:has(input[name=entity1][value]) >> nth=0")
                for radio in page.locator("fieldset.block input[value=tie]").all():
                    radio.check()
                before = page.locator("#progress").inner_text()
                page.click("#submit")
                # the answer is sent by fetch, then the page reloads: wait for the next segment's page
                page.wait_for_function(
                    "(b) => (document.querySelector('#progress') || {}).innerText !== b",
                    arg=before,
                    timeout=20000,
                )
                page.wait_for_load_state()
            assert page.locator(".text", has_text="alert('script')").count() >= 1
            check_no_injection(page, "spot the bot")

            _goto(page, f"{server.url}/s/arena-xss/")
            _enter(page)
            page.wait_for_selector("#live[data-stage=chat]")
            page.fill("#composer textarea", "Say something dangerous")
            page.click("#composer button")
            page.wait_for_selector("#live[data-stage=vote]", timeout=30000)
            assert page.locator(".arena-round .candidate .text", has_text="alert('script')").count() == 2
            check_no_injection(page, "arena")
        assert dialogs == []
    finally:
        ctx.close()


def _goto(page, url: str) -> None:
    """goto, once more when the page's own navigation (a submitted form's redirect) aborted it."""
    try:
        page.goto(url)
    except Exception as exc:  # playwright Error: net::ERR_ABORTED
        if "ERR_ABORTED" not in str(exc):
            raise
        page.wait_for_timeout(1000)
        page.goto(url)


def _enter(page) -> None:
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_load_state()
