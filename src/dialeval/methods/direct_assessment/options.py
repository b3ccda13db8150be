"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...plugin import StrictModel


class DirectAssessmentOptions(StrictModel):
    min_inputs: int = Field(10, ge=1, le=1000)  # annotator messages before the chat may end (server-checked)
    qc_bot: str = "qc"  # the name of the study's degraded quality-control bot
    topic: Literal["free", "icebreaker"] = "free"  # free: the annotator names a topic; icebreaker: a given one
    hits_per_annotator: int = Field(1, ge=1, le=1000)  # whole HITs in one annotator's session

    def check_study(self, config: Any) -> None:
        """The quality-control bot is shown in every HIT: it must be one of the study's bots."""
        names = [b.name for b in config.bots]
        if self.qc_bot not in names:
            raise ValueError(
                f"protocol.qc_bot names '{self.qc_bot}', which is not in bots ({', '.join(names)}); the quality "
                f"control shows its degraded replies in every HIT: add it under bots: (e.g. - {{name: {self.qc_bot}, "
                "type: degraded}) or name another of the bots"
            )
