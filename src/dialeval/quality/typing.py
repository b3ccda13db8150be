"""How a text was entered: pasted or typed, how fast, and how close to the bots' own words.

A large share of crowdworkers on text tasks use LLMs (Veselovsky, Ribeiro & West 2023, "Artificial
Artificial Artificial Intelligence", arXiv:2306.07899, estimated 33-46% on one MTurk summarisation
task). The signals people use are pastes, typing speed and the similarity of the typed text to
known model output. Every page where an annotator types (chat messages, justifications, reasons,
topics) sends, with the form, what its script counted (web/static/app.js, ``input_signals``):

    {"typed": keys that produced a character, "pasted": characters pasted, "pastes": paste events,
     "active_ms": ms from the first key or paste to the submit, "chars": length of the text sent}

No keystroke and no pasted content is stored: only these counts, with the judgment (meta ``input``)
or the chat message (turn meta ``input``). The consent page's default text says so.

`summarise` gives, per annotator: texts, characters, the share of characters pasted, typing speed
(typed characters per second of active time) and the *bot echo*: the share of the annotator's
character 5-grams that also occur in the study's bot replies (a reply pasted back, or a bot-written
justification, scores near 1; ordinary prose far lower). An annotator is flagged — listed, never
removed — when the pasted share or the echo reaches the study's `quality.paste_flag` (default 0.5).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..records import JudgmentColumns

__all__ = ["FIELDS", "current", "parse_signals", "summarise", "use"]

FIELDS = ("typed", "pasted", "pastes", "active_ms", "chars")
MAX_COUNT = 10_000_000  # far above any text a form accepts; a bigger number is not a browser's count
SHINGLE = 5  # characters per shingle of the bot-echo similarity
MAX_BOT_SHINGLES = 2_000_000  # the study's bot text taken into account (memory bound)

_current: ContextVar[dict[str, int] | None] = ContextVar("dialeval_input_signals", default=None)


def parse_signals(raw: Any) -> dict[str, int] | None:
    """The counts a page sent (a JSON string from a form, or an object from fetch), strictly: known
    keys, whole numbers in range; anything else is ignored (None), never an error for the worker.

    >>> parse_signals('{"typed": 12, "pasted": 0, "pastes": 0, "active_ms": 3100, "chars": 12}')
    {'typed': 12, 'pasted': 0, 'pastes': 0, 'active_ms': 3100, 'chars': 12}
    >>> parse_signals('{"typed": 1e400}') is None
    True
    """
    if isinstance(raw, str):
        if len(raw) > 1000:
            return None
        try:
            raw = json.loads(raw, parse_constant=lambda name: None)
        except ValueError:
            return None
    if not isinstance(raw, dict) or not raw:
        return None
    out: dict[str, int] = {}
    for key in FIELDS:
        value = raw.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        if value < 0 or value > MAX_COUNT or value != int(value):
            return None
        out[key] = int(value)
    return out


@contextmanager
def use(signals: dict[str, int] | None) -> Iterator[None]:
    """The signals of the request being handled, for the judgment or message it stores."""
    token = _current.set(signals)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> dict[str, int] | None:
    return _current.get()


def _shingles(text: str) -> set[str]:
    t = " ".join(text.lower().split())
    return {t[k : k + SHINGLE] for k in range(max(0, len(t) - SHINGLE + 1))}


def summarise(dataset: Any, flag_at: float = 0.5) -> dict[str, Any] | None:
    """Per annotator: what their typed texts' signals say (see the module docstring); None when no
    text of the data set carries signals (imported data, or pages before this was recorded)."""
    bot_texts: list[str] = []
    texts: dict[str, list[tuple[str, dict[str, int]]]] = {}
    by_conv_annotator: dict[str, str] = {}
    # judgments read as columns (a method's report_columns: a million arena votes) carry no typed
    # text's counts; their conversations are read below
    judgments = [] if isinstance(dataset.judgments, JudgmentColumns) else dataset.judgments
    for j in judgments:
        if j.conversation_id:
            by_conv_annotator.setdefault(j.conversation_id, j.annotator_id)
        sig = (j.meta or {}).get("input")
        if isinstance(sig, dict):
            texts.setdefault(j.annotator_id, []).append((j.justification or "", sig))
    for conv in dataset.conversations:
        owner = (conv.meta or {}).get("annotator") or by_conv_annotator.get(conv.id)
        for t in conv.turns:
            if t.bot is not None and not t.is_seed:
                bot_texts.append(t.text)
                bot_texts.extend(
                    c["text"] for c in t.candidates or [] if isinstance(c, dict) and isinstance(c.get("text"), str)
                )
            sig = (t.meta or {}).get("input")
            if t.bot is None and isinstance(sig, dict) and owner:
                texts.setdefault(str(owner), []).append((t.text, sig))
    return summarise_texts(texts, bot_texts, flag_at)


def summarise_texts(
    texts: dict[str, list[tuple[str, dict[str, int]]]], bot_texts: Any, flag_at: float = 0.5
) -> dict[str, Any] | None:
    """`summarise` on what it gathered: {annotator: [(text, signals)]} and the bots' texts (also
    what the admin page reads straight from the store, store/work.py: typed_inputs)."""
    if not texts:
        return None
    bot_shingles: set[str] = set()
    for text in bot_texts:
        if len(bot_shingles) >= MAX_BOT_SHINGLES:
            break
        bot_shingles |= _shingles(text)
    rows = []
    for annotator, entries in sorted(texts.items()):
        chars = sum(s.get("chars", 0) for _, s in entries)
        pasted = sum(min(s.get("pasted", 0), s.get("chars", 0) or s.get("pasted", 0)) for _, s in entries)
        typed = sum(s.get("typed", 0) for _, s in entries)
        active = sum(s.get("active_ms", 0) for _, s in entries) / 1000.0
        own = set().union(*(_shingles(text) for text, _ in entries))
        echo = len(own & bot_shingles) / len(own) if own and bot_shingles else None
        pasted_share = pasted / chars if chars else None
        reasons = []
        if pasted_share is not None and pasted_share >= flag_at:
            reasons.append(f"pasted {pasted_share:.0%} of the characters")
        if echo is not None and echo >= flag_at:
            reasons.append(f"{echo:.0%} of the text echoes the bots' replies")
        rows.append(
            {
                "annotator": annotator,
                "texts": len(entries),
                "chars": chars,
                "pastes": sum(s.get("pastes", 0) for _, s in entries),
                "pasted_share": None if pasted_share is None else round(pasted_share, 3),
                "typed_chars_per_s": round(typed / active, 2) if active > 0 else None,
                "bot_echo": None if echo is None else round(echo, 3),
                "flagged": bool(reasons),
                "reasons": reasons,
            }
        )
    return {
        "annotators": rows,
        "flagged": [r["annotator"] for r in rows if r["flagged"]],
        "flag_at": flag_at,
        "note": (
            "Counts sent by the page with each typed text (no keystroke or pasted content is stored): "
            "pasted_share = pasted / sent characters; typed_chars_per_s over the time from the first key or "
            f"paste to the submit; bot_echo = share of the text's character {SHINGLE}-grams also in the "
            "study's bot replies. Flagged annotators are listed, not removed (Veselovsky et al. 2023)."
        ),
    }
