"""Bot text as sanitised Markdown (bot_markdown.py): what survives, what never does, that ordinary
chit-chat reads the same, the streamed `html`, and a study turning it off (through HTTP)."""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser

import pytest

from dialeval.bot_markdown import TAGS, render, render_html, sanitise
from dialeval.bots.base import Bot
from dialeval.protocols.live import start_generation
from dialeval.simulate.annotator import _as_read

from .test_live_support import LiveClient, LiveServer, make_live_study
from .xss_payloads import XSS


class Elements(HTMLParser):
    def __init__(self, markup: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def injected(markup: str) -> list[str]:
    """What a successful injection leaves in sanitised markup (empty when safe)."""
    bad = []
    for tag, attrs in Elements(markup).tags:
        if tag not in TAGS:
            bad.append(f"<{tag}>")
        for name, value in attrs.items():
            v = re.sub(r"[\s\x00-\x1f]", "", value or "").lower()
            if name.startswith("on") or name in ("style", "src", "class", "id"):
                bad.append(f"<{tag} {name}>")
            if name == "href" and not v.startswith(("https:", "http:", "mailto:")):
                bad.append(f"<{tag} href={v[:30]}>")
        if tag == "a" and (attrs.get("target"), attrs.get("rel")) != ("_blank", "noopener noreferrer"):
            bad.append("<a> without target/rel")
    return bad


@pytest.mark.parametrize("payload", XSS)
def test_xss_vectors_through_markdown_leave_no_markup(payload):
    assert injected(render_html(payload)) == []


@pytest.mark.parametrize("payload", XSS)
def test_the_sanitiser_alone_holds_raw_html(payload):
    """The second layer by itself, given the vectors as HTML (as if the parser let them through)."""
    assert injected(sanitise(payload)) == []


def test_markdown_elements_are_rendered():
    text = (
        "# Title\n\nSome **bold**, *italic*, ~~gone~~ and `code`.\n\n- one\n- two\n\n1. first\n\n"
        "| a | b |\n|:--|--:|\n| 1 | 2 |\n\n```python\nprint('x')\n```\n\n> quoted\n\n"
        "[site](https://example.com) ![pic](https://example.com/p.png)\nnext line"
    )
    tags = [t for t, _ in Elements(render_html(text)).tags]
    for tag in ("h3", "strong", "em", "s", "code", "ul", "ol", "li", "table", "th", "td", "pre", "blockquote", "br"):
        assert tag in tags, tag
    assert "img" not in tags and "h1" not in tags  # the picture is a link; headings sit under the page's
    links = [a for t, a in Elements(render_html(text)).tags if t == "a"]
    assert [a["href"] for a in links] == ["https://example.com", "https://example.com/p.png"]
    assert all(a["target"] == "_blank" and a["rel"] == "noopener noreferrer" for a in links)
    assert 'style="' not in render_html(text)  # the CSP allows no inline style: alignment dropped


def test_plain_chitchat_reads_the_same():
    """Ordinary sentences show exactly their text; over the bundled chit-chat corpus, nearly every line."""
    for line in ("Hi! How are you today?", "I love hiking & fishing :) <3", "lol ok... see ya", "it's 5 > 3, right?"):
        assert _as_read(render(line)) == line
        assert (
            render(line)
            == f'<div class="md"><p>{line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")}</p></div>'
        )
    from dialeval.corpus import load_corpus

    lines = [t for c in load_corpus()[:250] for t in c.turns]
    same = sum(_as_read(render(line)) == " ".join(line.split()) for line in lines)
    # the rest: "*shrug*" actions shown in italics, "1." lines as lists (measured 268 of 135,565 lines)
    assert len(lines) > 2000 and same / len(lines) >= 0.995, (same, len(lines))


def test_turned_off_shows_raw_text_escaped():
    assert render("**a** <b>", markdown=False) == "**a** &lt;b&gt;"


class Chunks(Bot):
    def __init__(self, chunks: list[str]):
        super().__init__("chunks")
        self.chunks = chunks

    async def reply(self, history, context=None):
        return "".join(self.chunks)

    async def stream(self, history, context=None):
        for c in self.chunks:
            yield c


def test_streamed_chunks_carry_the_rendering_of_the_reply_so_far():
    chunks = ["# Head", "ing\n\n- **a", "**\n- b", "\n\n```\ncode", "\n```"]

    async def run(render_fn):
        done = asyncio.Event()

        async def complete(texts):
            done.set()

        gen, _ = start_generation(f"t-{render_fn is None}", [Chunks(chunks)], [], None, complete, render=render_fn)
        await asyncio.wait_for(done.wait(), 5)
        return [e for e in gen.log if e["event"] == "chunk"]

    events = in_a_thread(run(render_html))
    assert "".join(e["text"] for e in events) == "".join(chunks)
    with_html = [i for i, e in enumerate(events) if "html" in e]
    assert with_html[0] == 0  # the first words are shown at once, rendered
    for i in with_html:
        assert events[i]["html"] == render_html("".join(chunks[: i + 1]))
    assert all("html" not in e for e in in_a_thread(run(None)))


def in_a_thread(coroutine):
    """asyncio.run in a thread of its own: the browser tests' Playwright keeps an event loop running
    in the main thread for the whole session."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.mark.parametrize("markdown", [True, False])
def test_study_option_over_http(tmp_path, markdown):
    """A live chat (the repeat bot echoes the message): the page and the streamed events show Markdown,
    or, with `pages: {markdown: false}`, the raw text."""
    folder = make_live_study(tmp_path / "sm", "single-model", ["repeat"], protocol={"bot_turns": 2})
    if not markdown:
        path = folder / "study.yaml"
        path.write_text(path.read_text() + "pages: {markdown: false}\n")
    with LiveServer([folder]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.await_reply()
        c.act("rate", {"turn": "1", "none": "1"})
        events = c.say("a **bold** `idea`")
        chunks = [e for e in events if e["event"] == "chunk"]
        page = c.task().text
        if markdown:
            assert any("<strong>bold</strong>" in e.get("html", "") for e in chunks)
            assert "<strong>bold</strong> <code>idea</code>" in page
        else:
            assert all("html" not in e for e in chunks)
            assert "You said: a **bold** `idea`" in page and '<div class="md">' not in page
        assert "You</span>a **bold** `idea`" in page  # the annotator's own message: always raw text
