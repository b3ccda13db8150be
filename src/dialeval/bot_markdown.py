"""A bot's text as people read it in a chat app: Markdown made into sanitised HTML.

The one place where bot text becomes HTML. The task pages call it through the Jinja filter
``bot_markdown`` (web/pages.py); the live engine calls ``render_html`` for the streamed reply so
far (protocols/live.py), so a streamed answer looks as it will once stored.

Two maintained MIT libraries, in two layers:

- markdown-it-py (CommonMark, already installed with rich) parses with raw HTML *off*: a ``<script>``
  in a reply stays visible text, it never becomes a tag. Tables and strikethrough (GFM) are on;
  an image ``![alt](url)`` becomes a link named by its alt text (no remote request, no tracking
  pixel); a single newline is a line break, as in a chat.
- nh3 (Python bindings of the Rust sanitiser ammonia) then keeps only the tags and attributes
  listed below, only http(s)/mailto links (no ``javascript:``, ``data:`` or relative URL), and sets
  ``target="_blank" rel="noopener noreferrer"`` on every link. The parser alone already escapes
  HTML; the allow-list makes a parser bug or a rule change unable to let markup through.

No ``style`` attribute survives (the pages' CSP allows no inline style), so a table's column
alignment is dropped. Headings are moved down two levels (``#`` -> h3), under the page's own h1/h2.
"""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

HEADING_SHIFT = 2

TAGS = {
    "p", "br", "hr", "h3", "h4", "h5", "h6", "strong", "em", "s", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a",
}  # fmt: skip
ATTRIBUTES = {"a": {"href"}, "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])

    def heading(renderer, tokens, idx, options, env):  # h1 -> h3 ... h4.. -> h6
        tok = tokens[idx]
        level = min(6, int(tok.tag[1]) + HEADING_SHIFT)
        return f"<h{level}>" if tok.nesting == 1 else f"</h{level}>\n"

    def image(renderer, tokens, idx, options, env):  # a link to the picture, never a remote request
        tok = tokens[idx]
        alt = renderer.renderInlineAsText(tok.children or [], options, env) or tok.attrGet("src") or ""
        return f'<a href="{html.escape(str(tok.attrGet("src") or ""))}">{html.escape(alt, quote=False)}</a>'

    md.add_render_rule("image", image)
    md.add_render_rule("heading_open", heading)
    md.add_render_rule("heading_close", heading)
    return md


@lru_cache(maxsize=1)
def _cleaner() -> Any:
    import nh3

    return nh3.Cleaner(
        tags=TAGS,
        clean_content_tags={"script", "style"},
        attributes=ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        url_relative="deny",
        link_rel="noopener noreferrer",
        # a code block or table wider than its column scrolls sideways: focusable, so a keyboard can
        # scroll it too (axe-core's scrollable-region-focusable)
        set_tag_attribute_values={"a": {"target": "_blank"}, "pre": {"tabindex": "0"}, "table": {"tabindex": "0"}},
        strip_comments=True,
    )


def sanitise(markup: str) -> str:
    """`markup` with only the allowed tags, attributes and URLs left (the second layer)."""
    return _cleaner().clean(markup)


def render_html(text: str) -> str:
    """Sanitised HTML of `text` read as Markdown (block elements, no wrapper)."""
    return sanitise(_parser().render(text or "")).strip()


def plain_html(text: str) -> str:
    """`text` escaped, for a study that shows raw text (the container keeps its line breaks)."""
    return html.escape(text or "", quote=False)


def render(text: str, markdown: bool = True) -> str:
    """The HTML a page shows for one bot text: Markdown in a ``div.md``, or the escaped raw text."""
    if not markdown:
        return plain_html(text)
    return f'<div class="md">{render_html(text)}</div>'
