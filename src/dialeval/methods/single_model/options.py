"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from pydantic import Field

from ...plugin import StrictModel


class SingleModelOptions(StrictModel):
    bot_turns: int = Field(6, ge=1, le=30)  # bot replies in one conversation, each rated
    first_message: str = "Hi!"  # the annotator's fixed first message
    conversations_per_bot: int = Field(50, ge=1, le=100_000)  # target conversations per bot
