"""Bots: the systems under evaluation, behind one interface (see base.Bot) and built by type name."""

from dialeval.bots.base import Bot, BotContext, ChatMessage
from dialeval.bots.registry import BOT_TYPES, build_bot, validate_bot_options

__all__ = ["BOT_TYPES", "Bot", "BotContext", "ChatMessage", "build_bot", "validate_bot_options"]
