"""Onboarding and practice rows: recognised by what they are, in every analysis.

A practice answer is never a judgment of the systems, and never a malformed one. It is known by its
question (`onboarding`, `practice`: what the protocols store), by the kind of its unit
(`acute-onboarding`, any `*-practice`), or by the flags an importer may set in `meta`. Its time
still counts in annotator-hours: onboarding is part of what a study costs (Smith et al. 2022, Appendix F).
"""

from __future__ import annotations

from dialeval.records import Judgment, Unit

PRACTICE_QUESTIONS = frozenset({"onboarding", "practice"})
PRACTICE_KIND_SUFFIXES = ("onboarding", "practice")


def is_practice(judgment: Judgment, unit: Unit | None = None) -> bool:
    """True for an onboarding or practice answer (see the module docstring for how it is known)."""
    meta = judgment.meta or {}
    if meta.get("onboarding") or meta.get("is_onboarding") or meta.get("practice"):
        return True
    if str(judgment.question or "").lower() in PRACTICE_QUESTIONS:
        return True
    if unit is None:
        return False
    return str(unit.kind or "").lower().endswith(PRACTICE_KIND_SUFFIXES) or bool(
        (unit.payload or {}).get("is_onboarding")
    )
