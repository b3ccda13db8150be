"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...config import _Strict


class DirectAssessmentOptions(_Strict):
    min_inputs: int = Field(10, ge=1)
    qc_bot: str = "qc"
    topic: Literal["free", "icebreaker"] = "free"
    hits_per_annotator: int = Field(1, ge=1)
