"""The HTML report's example browser (report.json `examples`, methods/prompts/examples.py): one
<details> per judged item (the prompt, both answers as sanitised Markdown, the votes and reasons, the
judges' verdicts), and a filter form by category and by disagreement.

The report is one static file: no script. The filters are radio buttons and CSS rules (`:has`), so
they work when the file is opened from disk or mailed; `examples_css` writes the rules, which depend
on the data's categories, for the page's <style>. Class names use indexes, never the data's text.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..bot_markdown import render_html

CSS = """
.ex-browser fieldset{border:1px solid #dde3ea;border-radius:6px;margin:.3rem 0;padding:.2rem .6rem .4rem}
.ex-browser legend{font-size:.85rem;color:#5b6673}.ex-browser label{margin-right:1rem;white-space:nowrap}
.ex-item{border:1px solid #dde3ea;border-radius:6px;margin:.4rem 0;padding:.2rem .6rem}
.ex-item>summary{font-size:.95rem;color:#1d232b}
.ex-flag{background:#fdeeda;border-radius:4px;padding:0 .3rem;font-size:.8rem}
.ex-pair{display:grid;grid-template-columns:1fr 1fr;gap:1rem}
.ex-answer{min-width:0;background:#fafbfc;padding:.2rem .6rem;border-radius:6px}
@media (max-width:700px){.ex-pair{grid-template-columns:1fr}}
.ex-text{white-space:pre-wrap}.md pre{overflow-x:auto;background:#f4f7fa;padding:.5rem;border-radius:4px}
.md code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
.ex-browser:has(#ex-dis-split:checked) .ex-item:not(.ex-split){display:none}
.ex-browser:has(#ex-dis-judge:checked) .ex-item:not(.ex-judge){display:none}
"""


def _categories(examples: dict[str, Any]) -> list[str]:
    return sorted({str(item.get("category")) for item in examples.get("items") or []})


def examples_css(examples: dict[str, Any]) -> str:
    """The section's style: the fixed rules and one hiding rule per category of the data."""
    rules = [
        f".ex-browser:has(#ex-cat-{i}:checked) .ex-item:not(.ex-cat-{i}){{display:none}}"
        for i in range(len(_categories(examples)))
    ]
    return CSS + "\n".join(rules) + "\n"


def _radio(group: str, ident: str, text: str, count: int, checked: bool = False) -> str:
    return (
        f'<label><input type="radio" name="{group}" id="{ident}"{" checked" if checked else ""}> '
        f"{escape(text)} ({count})</label>"
    )


def _turns(turns: list[dict[str, Any]], markdown: bool) -> str:
    """A side's turns: the system's as Markdown (answers), people's as plain text."""
    out = []
    for t in turns:
        text = str(t.get("text") or "")
        if t.get("role") == "assistant" and markdown:
            out.append(f'<div class="md">{render_html(text)}</div>')
        else:
            who = "User" if t.get("role") == "user" else "Assistant (given)"
            out.append(f'<p class="ex-text"><strong>{who}:</strong> {escape(text)}</p>')
    return "".join(out)


def _choice(choice: Any) -> str:
    return escape(str(choice))


def _item(item: dict[str, Any], category_index: dict[str, int]) -> str:
    classes = ["ex-item", f"ex-cat-{category_index[str(item.get('category'))]}"]
    flags = []
    if item.get("people_split"):
        classes.append("ex-split")
        flags.append('<span class="ex-flag">people split</span>')
    if item.get("judge_disagrees"):
        classes.append("ex-judge")
        flags.append('<span class="ex-flag">judge ≠ people</span>')
    counts = ", ".join(f"{escape(str(k))} {int(v)}" for k, v in sorted((item.get("counts") or {}).items()))
    systems = item.get("systems") or []
    summary = (
        f"<strong>{escape(str(item.get('prompt_id')))}</strong> · {escape(str(item.get('category')))} · "
        f"{' vs '.join(escape(str(s)) for s in systems)} · votes: {counts} {' '.join(flags)}"
    )
    answers = "".join(
        f'<section class="ex-answer"><h4>{escape(str(a.get("system")))}</h4>'
        f"{_turns(a.get('turns') or [], True)}</section>"
        for a in item.get("answers") or []
    )
    votes = "".join(
        f"<li><strong>{_choice(v.get('choice'))}</strong>"
        + (f" — {escape(str(v['reason']))}" if v.get("reason") else "")
        + "</li>"
        for v in item.get("votes") or []
    )
    parts = [
        f"<summary>{summary}</summary>",
        f"<h4>Prompt</h4>{_turns(item.get('prompt') or [], False)}",
        f'<div class="ex-pair">{answers}</div>',
        f'<h4>People\'s votes</h4><ul class="ex-votes">{votes}</ul>',
    ]
    judges = item.get("judges") or []
    if judges:
        first, second = (systems + ["", ""])[:2]
        rows = "".join(
            f"<tr><td>{escape(str(j.get('judge')))}</td>"
            f"<td>{_choice(j['verdict']) if j.get('verdict') is not None else 'none (the side orders disagree)'}</td>"
            f"<td>{_choice((j.get('orders') or {}).get(first, '–'))}</td>"
            f"<td>{_choice((j.get('orders') or {}).get(second, '–'))}</td></tr>"
            for j in judges
        )
        parts.append(
            '<h4>Judges</h4><div class="scroll"><table class="ex-judges" data-key="examples.items[*].judges">'
            "<thead><tr><th>judge</th><th>verdict</th>"
            f"<th>{escape(str(first))} shown first</th><th>{escape(str(second))} shown first</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>"
        )
    return (
        f'<details class="{" ".join(classes)}" data-prompt-id="{escape(str(item.get("prompt_id")))}">'
        + "".join(parts)
        + "</details>"
    )


def examples_html(examples: dict[str, Any]) -> str:
    items = examples.get("items") or []
    categories = _categories(examples)
    index = {c: i for i, c in enumerate(categories)}
    judged = any(item.get("judges") for item in items)
    listed, total = int(examples.get("listed", len(items))), int(examples.get("items_judged", len(items)))
    note = (
        f'<p class="note">{total} items judged by people; {listed} listed'
        + (f" (report.json keeps the first {listed}: items with a disagreement first)" if listed < total else "")
        + f"; people split on {int(examples.get('people_split', 0))}"
        + (
            f", a judge's verdict differs from the people's majority on {int(examples.get('judge_disagrees', 0))}"
            if judged
            else ""
        )
        + ". Open an item to read the prompt, both answers as people saw them, the votes and reasons.</p>"
    )
    cat_filter = ""
    if len(categories) > 1:
        per = {c: sum(1 for i in items if str(i.get("category")) == c) for c in categories}
        cat_filter = (
            "<fieldset><legend>Category</legend>"
            + _radio("ex-cat", "ex-cat-all", "every category", len(items), checked=True)
            + "".join(_radio("ex-cat", f"ex-cat-{index[c]}", c, per[c]) for c in categories)
            + "</fieldset>"
        )
    dis_filter = (
        "<fieldset><legend>Disagreement</legend>"
        + _radio("ex-dis", "ex-dis-all", "every item", len(items), checked=True)
        + _radio("ex-dis", "ex-dis-split", "people split", sum(1 for i in items if i.get("people_split")))
        + (
            _radio("ex-dis", "ex-dis-judge", "judge vs people", sum(1 for i in items if i.get("judge_disagrees")))
            if judged
            else ""
        )
        + "</fieldset>"
    )
    body = "".join(_item(item, index) for item in items)
    return (
        f'{note}<form class="ex-browser" aria-label="Filter the examples">{cat_filter}{dis_filter}'
        f'<div class="ex-list" data-key="examples.items">{body}</div></form>'
    )
