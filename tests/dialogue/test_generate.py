"""Conversation generation with real bots, including real HTTP bots on loopback."""

from __future__ import annotations

import asyncio

import pytest

from dialeval.bots.registry import build_bot
from dialeval.corpus import CorpusConversation
from dialeval.dialogue.generate import GenerationPlan, generate
from tests.bots.fake_openai_server import closed_port_url, start_fake_openai

CORPUS = [
    CorpusConversation(f"c{i}", (f"opening {i}", f"answer {i}", "more", "and more", "x", "y", "z", "w"))
    for i in range(20)
]


def run(plan, bots, existing=None):
    done = []
    result = asyncio.run(generate(plan, bots, existing=existing, on_done=done.append, corpus=CORPUS))
    return result, {c.id: c for c in done}


def cheap_bots():
    return {"repeat": build_bot("repeat", "repeat", {}), "eliza": build_bot("eliza", "eliza", {})}


def test_self_chat_shape_seed_and_personas():
    plan = GenerationPlan(mode="self-chat", bots=["repeat", "eliza"], conversations=3, turns=4, seed=5)
    result, convs = run(plan, cheap_bots())
    assert len(result.made) == 6 and not result.failed
    c = convs["selfchat-eliza-0001"]
    assert c.bots == ["eliza", "eliza"]
    assert [t.is_seed for t in c.turns[:2]] == [True, True] and all(t.bot is None for t in c.turns[:2])
    assert c.turns[0].text.startswith("opening")
    bot_turns = c.turns[2:]
    assert len(bot_turns) == 8 and all(t.bot == "eliza" for t in bot_turns)
    assert [t.speaker for t in bot_turns] == ["entity0", "entity1"] * 4
    assert len(c.meta["personas"]) == 2 and all(len(p) == 2 for p in c.meta["personas"])


def test_bot_bot_every_pair_with_seeded_coin_flip():
    bots = {**cheap_bots(), "retrieval": build_bot("retrieval", "repeat", {"text": "I retrieve."})}
    plan = GenerationPlan(
        mode="bot-bot", bots=["repeat", "eliza", "retrieval"], conversations=10, turns=2, seed=1, personas=False
    )
    result, convs = run(plan, bots)
    assert len(result.made) == 30
    pairs = {frozenset(c.bots) for c in convs.values()}
    assert len(pairs) == 3
    first_speakers = [c.bots[0] for c in convs.values() if set(c.bots) == {"repeat", "eliza"}]
    assert 0 < first_speakers.count("repeat") < 10  # both orders occur
    # The same seed gives the same conversations.
    again, convs2 = run(plan, bots)
    assert {k: [t.text for t in v.turns] for k, v in convs.items()} == {
        k: [t.text for t in v.turns] for k, v in convs2.items()
    }
    assert [convs[k].bots for k in sorted(convs)] == [convs2[k].bots for k in sorted(convs2)]


def test_rerun_keeps_what_exists_and_retries_failures():
    plan = GenerationPlan(mode="self-chat", bots=["repeat"], conversations=4, turns=1)
    existing = {"selfchat-repeat-0000": None, "selfchat-repeat-0001": "bot 'repeat' timeout: slow"}
    result, convs = run(plan, cheap_bots(), existing)
    assert result.skipped == ["selfchat-repeat-0000"]
    assert sorted(result.made) == ["selfchat-repeat-0001", "selfchat-repeat-0002", "selfchat-repeat-0003"]


def test_human_conversations_are_mixed_in():
    plan = GenerationPlan(mode="bot-bot", bots=["repeat", "eliza"], conversations=1, turns=2, human_conversations=3)
    result, convs = run(plan, cheap_bots())
    humans = [c for c in convs.values() if c.source == "human"]
    assert len(humans) == 3 and all(c.bots == ["human", "human"] for c in humans)
    assert all(len(c.turns) == 6 for c in humans)  # seed exchange + 2 turns per side


def test_http_bot_generates_and_a_dead_bot_fails_alone():
    with start_fake_openai("ok") as url:
        live = build_bot("live", "openai", {"base_url": url, "model": "m", "retries": 0, "timeout": 5})
        dead = build_bot("dead", "openai", {"base_url": closed_port_url(), "model": "m", "retries": 0, "timeout": 2})
        plan = GenerationPlan(mode="bot-bot", bots=["live", "repeat", "dead"], conversations=2, turns=2, concurrency=3)
        result, convs = run(plan, {"live": live, "dead": dead, "repeat": build_bot("repeat", "repeat", {})})
    assert sorted(result.made) == ["botbot-live-repeat-0000", "botbot-live-repeat-0001"]
    assert len(result.failed) == 4
    assert all("refused" in why for why in result.failed.values())
    failed = convs["botbot-live-dead-0000"]
    assert failed.error and failed.turns[:2] and failed.turns[0].is_seed  # kept, with the turns so far
    ok = convs["botbot-live-repeat-0000"]
    assert any(t.bot == "live" and t.text for t in ok.turns)


def test_unknown_mode_is_a_clear_error():
    from dialeval.errors import DialevalError

    with pytest.raises(DialevalError, match="unknown generation mode"):
        GenerationPlan(mode="tri-chat", bots=["a"]).conversation_ids()
