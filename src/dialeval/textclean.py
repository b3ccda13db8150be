"""Text hygiene at the edges: control characters out, sizes bounded, before anything is stored.

Every text that enters dialeval from outside (web forms and JSON bodies, imported files, bot
replies) goes through :func:`clean_text`: NUL and the other C0/C1 control characters (tab and
newline kept, carriage returns turned into newlines) and unpaired UTF-16 surrogates are removed.
PostgreSQL refuses NUL in text (a DataError mid-request) and SQLite would keep it, so the two stores
would disagree; nobody types them on purpose.

Size limits: an imported text longer than :func:`import_text_limit` characters is refused with an
error naming the file, line (JSONL formats) or conversation and turn; a bot reply longer than
the study's ``limits.bot_reply_chars`` is cut at a word boundary and ends with :data:`CUT_MARKER`,
so the worker sees that it was shortened and the stored text says so too (:func:`cut_reply`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import ImportFormatError, TextTooLongError

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
DEFAULT_IMPORT_TEXT_CHARS = 20_000
IMPORT_LIMIT_ENV = "DIALEVAL_MAX_TEXT_CHARS"
_import_limit: int | None = None
# Ends every bot reply cut at limits.bot_reply_chars: shown to the worker, kept in the stored text
# (what was judged), counted by the admin page and the report (`was_cut`).
CUT_MARKER = " … [answer shortened]"


def clean_text(text: str) -> str:
    """`text` without control characters (tab and newline kept; CR and CRLF become newlines)."""
    if text.isprintable():  # no control character, CR or surrogate: the common case, as it is
        return text
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


def clean_value(value: Any) -> Any:
    """clean_text applied to every string inside dicts and lists (keys included)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_value(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


def import_text_limit() -> int:
    """Longest text (characters) an import accepts: set_import_text_limit, else $DIALEVAL_MAX_TEXT_CHARS,
    else 20,000."""
    if _import_limit is not None:
        return _import_limit
    raw = os.environ.get(IMPORT_LIMIT_ENV)
    try:
        return int(raw) if raw else DEFAULT_IMPORT_TEXT_CHARS
    except ValueError:
        return DEFAULT_IMPORT_TEXT_CHARS


def set_import_text_limit(chars: int | None) -> None:
    """Set (or with None reset) the import limit for this process (the import command's --max-text-chars)."""
    global _import_limit
    _import_limit = chars


@contextmanager
def import_text_limit_of(chars: int | None) -> Iterator[None]:
    """Use `chars` (None: the default) as the import limit inside the block, then restore it."""
    global _import_limit
    before = _import_limit
    if chars is not None:
        _import_limit = chars
    try:
        yield
    finally:
        _import_limit = before


def clean_imported(obj: Any, path: str, line: int | None = None, field: str = "") -> Any:
    """One parsed record of an import, cleaned; ImportFormatError when a text is over the limit."""
    return clean_imported_within(obj, path, line, field, import_text_limit())


def clean_imported_within(obj: Any, path: str, line: int | None, field: str, limit: int) -> Any:
    # the limit is looked up once per record, not once per string (an environment lookup each)
    if isinstance(obj, str):
        if len(obj) > limit:
            raise TextTooLongError(
                path,
                f"a text of {len(obj):,} characters is longer than the limit of "
                f"{limit:,} (--max-text-chars or ${IMPORT_LIMIT_ENV})",
                len(obj),
                limit,
                line=line,
                field=field or None,
            )
        return clean_text(obj)
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            # plain short strings (most values of most records) need nothing; the field's name is
            # built only for what is looked into
            if not (isinstance(v, str) and len(v) <= limit and v.isprintable()) and isinstance(v, (str, dict, list)):
                v = clean_imported_within(v, path, line, f"{field}.{k}" if field else str(k), limit)
            out[k] = v
        return out
    if isinstance(obj, list):
        return [clean_imported_within(v, path, line, f"{field}[{i}]", limit) for i, v in enumerate(obj)]
    return obj


def clean_dataset(dataset: Any, source: str) -> Any:
    """Clean every turn text and justification of an imported Dataset in place; refuse texts over the
    limit with an error naming the conversation and turn (formats without line numbers)."""
    limit = import_text_limit()
    for conv in dataset.conversations:
        for i, turn in enumerate(conv.turns):
            if len(turn.text) > limit:
                raise ImportFormatError(
                    source,
                    f"conversation '{conv.id}', turn {i + 1}: a text of "
                    f"{len(turn.text):,} characters is longer than the limit of "
                    f"{limit:,} (--max-text-chars or ${IMPORT_LIMIT_ENV})",
                )
            turn.text = clean_text(turn.text)
            if turn.candidates:
                turn.candidates = clean_value(turn.candidates)
    for k, j in enumerate(dataset.judgments):
        if isinstance(j.justification, str):
            if len(j.justification) > limit:
                raise ImportFormatError(
                    source,
                    f"judgment {k + 1} (annotator '{j.annotator_id}'): a "
                    f"justification of {len(j.justification):,} characters is longer "
                    f"than the limit of {limit:,} (--max-text-chars or "
                    f"${IMPORT_LIMIT_ENV})",
                )
            j.justification = clean_text(j.justification)
        j.value = clean_value(j.value)
    return dataset


def cut_reply(text: str, max_chars: int, more: bool = False) -> tuple[str, bool]:
    """(`text`, False) when it fits in `max_chars` and nothing follows it; else its start cut at the
    last word boundary before `max_chars` (a single word longer than that is cut inside), plus
    CUT_MARKER, and True. `more`: the reply went on after `text` (its reading stopped there).

    >>> cut_reply("one two three", 9)
    ('one two … [answer shortened]', True)
    >>> cut_reply("one two", 9), cut_reply("one two", 9, more=True)[0]
    (('one two', False), 'one … [answer shortened]')
    """
    if len(text) <= max_chars and not more:
        return text, False
    limit = min(max_chars, len(text))
    head = text[:limit]
    # inside a word unless a space follows the limit (unknown when reading stopped right there)
    inside = not text[limit].isspace() if limit < len(text) else not head[-1:].isspace()
    if inside:
        boundary = max(head.rfind(c) for c in (" ", "\n", "\t"))
        if boundary > 0:
            head = head[:boundary]
    return head.rstrip() + CUT_MARKER, True


def was_cut(text: str) -> bool:
    """True for a bot reply that cut_reply shortened."""
    return text.endswith(CUT_MARKER)
