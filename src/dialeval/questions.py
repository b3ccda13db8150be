"""A question preset: a question with a paper's exact wording (a study file may name a preset or give
its own text). The presets themselves belong to their methods (methods/<id>/questions.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    # The choice labels; "{n}" is replaced by the side number (1 or 2).
    choice: str = "{n}"
