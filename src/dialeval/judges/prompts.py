"""The text a judge reads: the material an annotator sees, the annotator's own question, and a strict
answer format (one JSON object)."""

from __future__ import annotations

from collections.abc import Iterable

from ..records import Turn

PREAMBLE = (
    "You are an annotator in a human evaluation of chatbots. Read the material below and answer "
    "the question the way a careful annotator would."
)
FORMAT = "Reply with one JSON object and nothing else, for example: {example}"


def lines(turns: Iterable[Turn], names: dict[str, str], default: str = "Partner") -> str:
    """One 'Name: text' line per turn, speakers renamed as the annotators' page names them."""
    return "\n".join(f"{names.get(t.speaker, default)}: {t.text}" for t in turns)


def compose(*parts: str, example: str) -> str:
    """The preamble, the material and question parts, and the answer format, blank-line separated."""
    return "\n\n".join([PREAMBLE, *(p for p in parts if p), FORMAT.format(example=example)])
