"""A weak, repetitive baseline: the kind of bot every evaluation method should rank last."""

from __future__ import annotations

from dialeval.bots.base import Bot, BotContext, ChatMessage, last_user_text
from dialeval.bots.options import RepeatOptions


class RepeatBot(Bot):
    """mode 'fixed' always says `text`; mode 'echo' says `prefix` + the user's last message."""

    type = "repeat"

    def __init__(self, name: str, options: RepeatOptions) -> None:
        super().__init__(name)
        self.options = options

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        if self.options.mode == "echo":
            said = last_user_text(history)
            if said:
                return self.options.prefix + said
        return self.options.text
