"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from pydantic import Field

from ...config import _Strict


class AcuteOptions(_Strict):
    comparisons_per_unit: int = Field(5, ge=1, le=50)
    annotations_per_pair: int = Field(50, ge=1, description="target judgments per bot pair and question")
    pairs: list[tuple[str, str]] | None = None  # default: every pair of bots
    onboarding_weak_bot: str | None = None
