"""Generation fills every bot's own limit and the global one (issue 14, part 4), against a real
OpenAI-compatible server on loopback that answers after a delay."""

from __future__ import annotations

import asyncio

from dialeval.bots.registry import build_bot
from dialeval.dialogue.generate import GenerationPlan, generate
from tests.bots.fake_openai_server import start_fake_openai


def test_conversations_are_interleaved_so_the_global_limit_is_filled():
    # two bots with max_concurrency 4 each, global concurrency 8: queued bot by bot, the first bot's
    # own limit held the shared slots and at most 4 requests were ever in flight
    with start_fake_openai(mode="slow", delay=0.5, reply="ok then") as url:
        bots = {
            n: build_bot(n, "openai", {"base_url": url, "model": "m", "max_concurrency": 4, "timeout": 30})
            for n in ("first", "second")
        }
        plan = GenerationPlan(
            mode="self-chat",
            bots=list(bots),
            conversations=8,
            turns=2,
            personas=False,
            seed_from_corpus=False,
            concurrency=8,
        )
        result = asyncio.run(generate(plan, bots))
        assert len(result.made) == 16 and not result.failed
        assert url.state.requests == 16 * 4
        # more than one bot's limit at once (impossible when one bot's queue holds the shared slots),
        # never above the global limit (8 when the machine keeps up; the server counts arrivals)
        assert 4 < url.state.max_in_flight <= 8


def test_a_bot_limit_is_never_exceeded_and_the_global_limit_holds_with_many_bots():
    with start_fake_openai(mode="slow", delay=0.2, reply="sure") as url:
        bots = {
            n: build_bot(n, "openai", {"base_url": url, "model": n, "max_concurrency": 2, "timeout": 30})
            for n in ("a", "b", "c", "d", "e")
        }
        plan = GenerationPlan(
            mode="bot-bot",
            bots=list(bots),
            conversations=2,
            turns=2,
            personas=False,
            seed_from_corpus=False,
            concurrency=6,
        )
        result = asyncio.run(generate(plan, bots))
        assert len(result.made) == 20 and not result.failed
        assert 2 < url.state.max_in_flight <= 6
