"""The repeat, eliza and human replay bots, and the default stream()."""

from __future__ import annotations

import json

import pytest

from dialeval.bots import BotContext, ChatMessage, build_bot
from dialeval.bots.eliza import reflect
from dialeval.errors import BotError

U = ChatMessage


async def test_repeat_fixed_and_echo():
    fixed = build_bot("r", "repeat", {"text": "I don't know."})
    assert await fixed.reply([U("user", "What is your name?")]) == "I don't know."
    assert await fixed.reply([]) == "I don't know."
    echo = build_bot("e", "repeat", {"mode": "echo", "prefix": "You said: "})
    history = [U("user", "Hi!"), U("assistant", "You said: Hi!"), U("user", "I like tea")]
    assert await echo.reply(history) == "You said: I like tea"


async def test_default_stream_yields_the_reply_once():
    bot = build_bot("r", "repeat", {})
    assert [c async for c in bot.stream([U("user", "x")])] == ["That is interesting. Tell me more."]


def test_reflect_swaps_persons():
    assert reflect("I am worried about my job") == "you are worried about your job"


async def test_eliza_uses_keywords_reflection_and_is_deterministic():
    bot = build_bot("eliza", "eliza", {"seed": 1})
    text = await bot.reply([U("user", "I need a holiday with my family.")], BotContext(seed=2))
    assert "a holiday with your family" in text
    assert await bot.reply([U("user", "hello there")]) in {
        "Hello! What would you like to talk about today?",
        "Hi there. How are you feeling today?",
        "Hello. What is on your mind?",
    }
    ctx = BotContext(conversation_id="c", seed=5)
    history = [U("user", "Why is the sky blue?")]
    assert await bot.reply(history, ctx) == await bot.reply(history, ctx)
    fallback = await bot.reply([U("user", "the weather")], ctx)
    assert fallback and "{0}" not in fallback


async def test_eliza_does_not_say_the_same_thing_twice_in_a_row():
    bot = build_bot("eliza", "eliza", {})
    history = [U("user", "hmm")]
    for turn in range(6):
        text = await bot.reply(history, BotContext(seed=turn))
        assert history[-1].role == "user"
        if len(history) > 1:
            assert text != history[-2].text
        history += [U("assistant", text), U("user", "hmm")]


def _long_corpus(tmp_path):
    path = tmp_path / "human.jsonl"
    rows = [{"id": f"h{c}", "turns": [f"h{c} turn {t}" for t in range(6 + c)]} for c in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


async def test_human_replay_follows_one_corpus_conversation(tmp_path):
    bot = build_bot("people", "human", {"corpus_path": _long_corpus(tmp_path), "min_turns": 6})
    ctx = BotContext(conversation_id="conv-9", seed=4)
    conv = bot.corpus_conversation(4, "conv-9")
    assert conv == bot.corpus_conversation(4, "conv-9")
    history = [U("user", "Hi!")]
    assert await bot.reply(history, ctx) == conv.turns[1]
    history += [U("assistant", conv.turns[1]), U("user", "whatever")]
    assert await bot.reply(history, ctx) == conv.turns[3]
    assert await bot.reply([], ctx) == conv.turns[0]
    picked = {bot.corpus_conversation(s).id for s in range(30)}
    assert len(picked) > 1


async def test_human_replay_continues_a_conversation_seeded_from_the_corpus(tmp_path):
    bot = build_bot("people", "human", {"corpus_path": _long_corpus(tmp_path), "min_turns": 6})
    history = [U("user", "h2 turn 0"), U("assistant", "h2 turn 1"), U("user", "h2 turn 2")]
    assert await bot.reply(history, BotContext(seed=99)) == "h2 turn 3"


async def test_human_replay_out_of_turns_and_no_long_conversations(tmp_path):
    bot = build_bot("people", "human", {"corpus_path": _long_corpus(tmp_path), "min_turns": 9})
    conv = bot.corpus_conversation(0)
    assert conv.id == "h3"
    with pytest.raises(BotError, match="raise min_turns"):
        await bot.reply([U("user", "x")] * 9, BotContext(seed=0))
    none = build_bot("people", "human", {"corpus_path": _long_corpus(tmp_path), "min_turns": 50})
    with pytest.raises(BotError) as info:
        await none.reply([U("user", "x")])
    assert info.value.kind == "config" and "min_turns" in str(info.value)
