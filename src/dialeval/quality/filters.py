"""Worker message filters (Smith et al. 2022, Appendix B / B.4) and the no-reason check (Li et al. 2019).

A crowdworker is dropped from every method when, in their live chats (PW-Turn, SM-Turn), their own
messages (the fixed "Hi!" opener excluded):

- ``short_messages``: have fewer than three words on average;
- ``greeting_first``: start with a greeting in the first message (redundant after the fixed "Hi!");
- ``all_caps``: are written in capitals several times: at least two messages, or the only one;
- ``repeats_first``: repeat the first message later (compared after lower-casing and removing
  punctuation, articles and extra spaces);
- ``offensive_language``: use a word of the offensive word list (one or more messages).

ACUTE-Eval (Li et al. 2019) also drops workers who never give a reason for their choice (``never_gives_reason``).

Filtered annotators are flagged, never deleted (:func:`apply_flags`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

from dialeval.errors import DialevalError
from dialeval.records import Annotator

SHORT_MESSAGES = "short_messages"
GREETING_FIRST = "greeting_first"
ALL_CAPS = "all_caps"
REPEATS_FIRST = "repeats_first"
OFFENSIVE_LANGUAGE = "offensive_language"
NEVER_GIVES_REASON = "never_gives_reason"
MESSAGE_CHECKS = (SHORT_MESSAGES, GREETING_FIRST, ALL_CAPS, REPEATS_FIRST, OFFENSIVE_LANGUAGE)

MIN_AVERAGE_WORDS = 3.0
MIN_CAPS_MESSAGES = 2
DEFAULT_WORDLIST = "offensive_words.txt"

# first words that open a greeting ("hi", "hiii", "hey", "heyyy", "hello", "helloo", "hiya", ...)
_GREETING_WORD = re.compile(r"^(?:h+i+(?:ya)?|ha+i+|he+y+a?|hel+o+|hal+o+|hol+a+|howdy|greetings|yo+|sup)$")
_GREETING_PHRASES = ("good morning", "good afternoon", "good evening", "good day", "nice to meet you")

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_NON_WORD = re.compile(r"[^\w\s]|_")
# answers that say nothing, as justifications
_NON_ANSWERS = frozenset(
    {
        "na",
        "n a",
        "none",
        "nothing",
        "no reason",
        "idk",
        "i dont know",
        "dont know",
        "no",
        "nope",
        "ok",
        "okay",
        "yes",
        "asdf",
        "test",
        "because",
        "just because",
        "reason",
        "no comment",
    }
)


def normalize(text: str) -> str:
    """Lower-case, punctuation and articles (a, an, the) removed, whitespace collapsed."""
    text = _NON_WORD.sub(" ", text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=1)
def _default_words() -> tuple[str, ...]:
    try:
        resource = resources.files("dialeval.quality").joinpath(DEFAULT_WORDLIST)
        return _parse_wordlist(resource.read_text(encoding="utf-8"))
    except (FileNotFoundError, OSError):
        raise DialevalError(
            f"the bundled word list dialeval/quality/{DEFAULT_WORDLIST} is missing from this install; "
            "reinstall dialeval or pass wordlist= a file of your own"
        ) from None


def _parse_wordlist(text: str) -> tuple[str, ...]:
    words = []
    for line in text.splitlines():
        entry = line.split("#", 1)[0].strip().lower()
        if entry:
            words.append(" ".join(entry.split()))
    return tuple(words)


def load_wordlist(path: str | Path | None = None) -> tuple[str, ...]:
    """The entries of a word-list file (one a line, ``#`` comments); the bundled list when `path` is None."""
    if path is None:
        return _default_words()
    path = Path(path)
    try:
        return _parse_wordlist(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DialevalError(f"cannot read the offensive word list '{path}': {exc.strerror}; check the path") from None


WordList = str | Path | Iterable[str] | None


def _pattern(wordlist: WordList) -> re.Pattern[str] | None:
    if wordlist is None or isinstance(wordlist, (str, Path)):
        words = load_wordlist(wordlist)
    else:
        words = tuple(" ".join(w.lower().split()) for w in wordlist if w and w.strip())
    if not words:
        return None
    alternatives = sorted((r"\s+".join(re.escape(part) for part in w.split()) for w in words), key=len, reverse=True)
    return re.compile(r"(?<![\w])(?:" + "|".join(alternatives) + r")(?:e?s)?(?![\w])")


def _is_greeting(message: str) -> bool:
    words = message.split()
    if not words:
        return False
    first = re.sub(r"[^\w]", "", words[0].lower())
    if _GREETING_WORD.match(first):
        return True
    start = normalize(" ".join(words[:4]))
    return any(start.startswith(phrase) for phrase in _GREETING_PHRASES)


def _is_all_caps(message: str) -> bool:
    letters = [c for c in message if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def check_messages(
    messages: Sequence[str],
    *,
    wordlist: WordList = None,
    checks: Iterable[str] = MESSAGE_CHECKS,
    min_average_words: float = MIN_AVERAGE_WORDS,
    min_caps_messages: int = MIN_CAPS_MESSAGES,
) -> list[str]:
    """Reasons to drop a worker given their own messages of one conversation, in order.

    `messages` excludes the fixed "Hi!" opener. An empty list passes (a disconnect). `wordlist` is a
    path to a word-list file, an iterable of words, or None for the bundled list. Returns reason
    codes in the order of ``MESSAGE_CHECKS``; an empty list means the worker passes.
    """
    checks = _known_checks(checks)
    pattern = _pattern(wordlist) if OFFENSIVE_LANGUAGE in checks else None
    return _check(messages, checks, pattern, min_average_words, min_caps_messages)


def _known_checks(checks: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(checks)
    unknown = chosen - set(MESSAGE_CHECKS)
    if unknown:
        raise DialevalError(f"unknown message checks {sorted(unknown)}; known: {', '.join(MESSAGE_CHECKS)}")
    return chosen


def _check(
    messages: Sequence[str],
    checks: frozenset[str],
    pattern: re.Pattern[str] | None,
    min_average_words: float = MIN_AVERAGE_WORDS,
    min_caps_messages: int = MIN_CAPS_MESSAGES,
) -> list[str]:
    messages = [m if isinstance(m, str) else str(m) for m in messages]
    if not messages:
        return []
    reasons: list[str] = []
    if SHORT_MESSAGES in checks:
        average = sum(len(m.split()) for m in messages) / len(messages)
        if average < min_average_words:
            reasons.append(SHORT_MESSAGES)
    if GREETING_FIRST in checks and _is_greeting(messages[0]):
        reasons.append(GREETING_FIRST)
    if ALL_CAPS in checks:
        caps = sum(_is_all_caps(m) for m in messages)
        if caps >= min_caps_messages or (caps == 1 and len(messages) == 1):
            reasons.append(ALL_CAPS)
    if REPEATS_FIRST in checks and len(messages) >= 2:
        first = normalize(messages[0])
        if first and any(normalize(m) == first for m in messages[1:]):
            reasons.append(REPEATS_FIRST)
    if OFFENSIVE_LANGUAGE in checks and pattern is not None and any(pattern.search(m.lower()) for m in messages):
        reasons.append(OFFENSIVE_LANGUAGE)
    return reasons


def never_gives_reason(justifications: Sequence[str | None], *, min_letters: int = 3, identical_min: int = 3) -> bool:
    """True when a worker never gave a real reason for their choices (Li et al. 2019: such workers are dropped).

    That is: no justifications at all; or every one is empty, has fewer than `min_letters` letters or
    is a non-answer ("n/a", "idk", "none", "ok"...); or there are at least `identical_min` and all are
    the same text (after normalising case, punctuation and articles).
    """
    texts = [normalize(j or "") for j in justifications]
    if not texts:
        return True
    if all(_no_reason(t, min_letters) for t in texts):
        return True
    return len(texts) >= identical_min and len(set(texts)) == 1


def _no_reason(normalized: str, min_letters: int) -> bool:
    """A justification that is not a reason: too few letters, or a non-answer ("n/a", "idk"...)."""
    return sum(c.isalpha() for c in normalized) < min_letters or normalized in _NON_ANSWERS


def reasons_settled(justifications: Sequence[str | None], *, min_letters: int = 3) -> bool:
    """True when no justification added later can make never_gives_reason true: one is a real
    reason (not trivial) and two differ. (Each of its conditions -- none at all, all trivial, all
    the same -- only stays true as texts are added, never becomes true again once false.)"""
    texts = [normalize(j or "") for j in justifications]
    return len(set(texts)) >= 2 and not all(_no_reason(t, min_letters) for t in texts)


def _conversations(messages: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    """A flat list of messages is one conversation; a list of lists is several."""
    if messages and all(not isinstance(m, str) for m in messages):
        return [list(conv) for conv in messages]
    return [list(messages)]  # type: ignore[arg-type]


def filter_annotators(
    messages_by_annotator: Mapping[str, Sequence[str] | Sequence[Sequence[str]]],
    justifications_by_annotator: Mapping[str, Sequence[str | None]] | None = None,
    wordlist: WordList = None,
    *,
    checks: Iterable[str] = MESSAGE_CHECKS,
) -> dict[str, list[str]]:
    """Reasons to drop each annotator (empty list = keep), for every annotator named in either mapping.

    A value of `messages_by_annotator` is that annotator's own messages of one conversation (list of
    str) or of several (list of lists); each conversation is checked on its own (the greeting and
    repeat rules concern a conversation's first message) and the reasons are combined. When
    `justifications_by_annotator` is given, an annotator found there who never gives a reason gets
    ``never_gives_reason``.
    """
    checks = _known_checks(checks)
    pattern = _pattern(wordlist) if OFFENSIVE_LANGUAGE in checks else None
    justifications_by_annotator = justifications_by_annotator or {}
    result: dict[str, list[str]] = {}
    for annotator in list(messages_by_annotator) + [
        a for a in justifications_by_annotator if a not in messages_by_annotator
    ]:
        reasons: list[str] = []
        for conversation in _conversations(messages_by_annotator.get(annotator, [])):
            for reason in _check(conversation, checks, pattern):
                if reason not in reasons:
                    reasons.append(reason)
        if annotator in justifications_by_annotator and never_gives_reason(justifications_by_annotator[annotator]):
            reasons.append(NEVER_GIVES_REASON)
        result[annotator] = reasons
    return result


def apply_flags(annotators: Iterable[Annotator], reasons: Mapping[str, Sequence[str]]) -> list[Annotator]:
    """Record filter results on the annotators (in place) and return those flagged.

    Each annotator found in `reasons` gets ``meta["filter_reasons"]``; one with reasons also gets
    ``meta["flagged"] = True``. Nobody is removed, and an earlier flag is never cleared.
    """
    flagged = []
    for annotator in annotators:
        if annotator.id not in reasons:
            continue
        found = list(reasons[annotator.id])
        annotator.meta["filter_reasons"] = found
        if found:
            annotator.meta["flagged"] = True
            flagged.append(annotator)
    return flagged
