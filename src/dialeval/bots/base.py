"""The Bot interface: every system under evaluation answers a history, one reply at a time."""

from __future__ import annotations

import hashlib
import random
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    """One message as the bot sees it: 'assistant' is the bot's own earlier turn, 'user' its partner."""

    role: Role
    text: str

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"ChatMessage role must be 'user' or 'assistant', not {self.role!r}")


@dataclass
class BotContext:
    """What a bot may know besides the history.

    `seed` and `conversation_id` make replies reproducible: bots derive their randomness from them
    (and the turn index), so a rerun with the same seed gives the same replies. If `rng` is given,
    bots draw from it instead and the caller owns reproducibility.
    """

    persona: list[str] = field(default_factory=list)
    conversation_id: str | None = None
    seed: int | None = None
    rng: random.Random | None = None

    def rng_for(self, *parts: object) -> random.Random:
        """A random generator for one decision, stable across runs and processes.

        Python's hash() is salted per process, so the seed is derived with sha256 instead.
        """
        if self.rng is not None:
            return self.rng
        return random.Random(stable_seed(self.seed, self.conversation_id, *parts))


def stable_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(repr(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def turn_index(history: list[ChatMessage]) -> int:
    """0-based index of the reply being produced: how many times the bot has spoken before."""
    return sum(1 for m in history if m.role == "assistant")


def last_user_text(history: list[ChatMessage], n: int = 1) -> str:
    """The text of the last `n` user messages, oldest first ('' when the user has not spoken)."""
    texts = [m.text for m in history if m.role == "user"]
    return " ".join(texts[-n:]) if texts else ""


class Bot(ABC):
    """A system under evaluation. Subclasses implement `reply`; `stream` defaults to one chunk."""

    type: str = "abstract"

    def __init__(self, name: str) -> None:
        self.name = name

    @abstractmethod
    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        """The bot's next message given the history (from the bot's point of view)."""

    async def stream(self, history: list[ChatMessage], context: BotContext | None = None) -> AsyncIterator[str]:
        """The next message in chunks; joined, the chunks equal what `reply` would return."""
        yield await self.reply(history, context)

    async def aclose(self) -> None:
        """Release connections, threads or models held by the bot."""
        return None  # most bots hold nothing

    async def __aenter__(self) -> Bot:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
