"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from pydantic import Field

from ...config import _Strict


class SingleModelOptions(_Strict):
    bot_turns: int = Field(6, ge=1, le=30)
    first_message: str = "Hi!"
    conversations_per_bot: int = Field(50, ge=1)
