"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from pydantic import Field, field_validator

from ...plugin import StrictModel


class SpotTheBotOptions(StrictModel):
    # segments: the first k exchanges of a conversation, per k
    segment_exchanges: list[int] = Field(default_factory=lambda: [2, 3, 5])
    bot_segments_per_package: int = Field(20, ge=1, le=1000)  # bot-bot segments in one package
    human_segments_per_package: int = Field(5, ge=0, le=1000)  # human-human segments in one package
    packages_per_annotator: int = Field(3, ge=1, le=1000)  # whole packages in one annotator's session
    annotations_per_segment: int = Field(2, ge=1, le=1000)  # annotators per segment, each another person

    @field_validator("segment_exchanges")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        if not value or sorted(set(value)) != value or value[0] < 1:
            raise ValueError("must be increasing positive exchange counts, e.g. [2, 3, 5]")
        return value
