"""Conversation generation: self-chat and bot-bot, seeding from a corpus (live chat is protocols/live.py)."""
