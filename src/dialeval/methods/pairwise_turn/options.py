"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from pydantic import Field

from ...config import _Strict


class PairwiseTurnOptions(_Strict):
    pairs: list[tuple[str, str]] | None = None
    bot_turns: int = Field(6, ge=1, le=30)
    first_message: str = "Hi!"
    conversations_per_pair: int = Field(50, ge=1)
