"""The study file's `protocol:` block of an arena study.

An imported study (``dialeval import arena``) needs none of it; a live one (annotators chat with two
anonymous bots side by side) reads every field. Plain pydantic here (not config.StrictModel) so that
reading the registry never imports the study-file module.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ArenaOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # a misspelt key is an error

    # default: every pair of bots
    pairs: list[tuple[str, str]] | None = None
    # "per-turn": a vote after both bots answered each message; "end": one vote per battle
    vote: Literal["per-turn", "end"] = "per-turn"
    # per-turn only: "chosen" = the preferred reply continues both conversations (as PW-Turn does; a
    # tie or "both bad" continues with a reply drawn at random), "own" = each bot keeps its own history
    continue_with: Literal["chosen", "own"] = "own"
    turns: int = Field(3, ge=1, le=30, description="messages the annotator writes in one battle (at most)")
    battles_per_pair: int = Field(20, ge=1, le=100_000, description="battles per bot pair (each by another annotator)")
    # other names a bot may give itself ({bot: [alias, ...]}); its configured name always counts
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    change_seconds: float = Field(10.0, ge=0, le=120, description="a vote can be changed this long, then it is final")

    @model_validator(mode="after")
    def _consistent(self) -> ArenaOptions:
        if self.continue_with == "chosen" and self.vote != "per-turn":
            raise ValueError("continue_with: chosen needs vote: per-turn (there is no choice before the end)")
        return self
