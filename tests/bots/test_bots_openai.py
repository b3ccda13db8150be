"""The openai connector against real HTTP servers on loopback."""

from __future__ import annotations

import asyncio
import time

import pytest

from dialeval.bots import BotContext, ChatMessage, build_bot
from dialeval.errors import BotError
from tests.bots.fake_openai_server import closed_port_url, start_fake_openai

HISTORY = [ChatMessage("user", "Hi!")]


def make(base_url: str, **options):
    return build_bot("gpt", "openai", {"base_url": base_url, "model": "fake", "backoff": 0.01, **options})


async def test_ok_reply_sends_persona_history_and_sampling_options():
    with start_fake_openai("ok") as url:
        bot = make(url, system_prompt="Be brief.", temperature=0.3, max_tokens=20)
        history = [
            ChatMessage("user", "Hi!"),
            ChatMessage("assistant", "Hello."),
            ChatMessage("user", "How are you?"),
        ]
        text = await bot.reply(history, BotContext(persona=["I have two dogs."]))
        await bot.aclose()
    assert text == "reply to: How are you?"
    body = url.state.bodies[0]
    assert body["model"] == "fake" and body["temperature"] == 0.3 and body["max_tokens"] == 20
    assert body["messages"][0]["role"] == "system"
    assert "Be brief." in body["messages"][0]["content"] and "I have two dogs." in body["messages"][0]["content"]
    assert [m["role"] for m in body["messages"][1:]] == ["user", "assistant", "user"]
    assert "stream" not in body


async def test_stream_yields_several_chunks_that_join_to_the_reply():
    with start_fake_openai("ok", reply="one two three four") as url:
        bot = make(url)
        chunks = [c async for c in bot.stream(HISTORY, BotContext())]
        await bot.aclose()
    assert len(chunks) == 4
    assert "".join(chunks) == "one two three four"
    assert url.state.bodies[0]["stream"] is True


async def test_slow_server_times_out_after_retries():
    with start_fake_openai("slow", delay=1.0) as url:
        bot = make(url, timeout=0.2, retries=1)
        with pytest.raises(BotError) as info:
            await bot.reply(HISTORY)
        await bot.aclose()
        attempts = url.state.requests
    assert info.value.kind == "timeout"
    assert attempts == 2
    assert "0.2 s" in str(info.value) and "after 2 attempts" in str(info.value)


async def test_error500_is_retried_then_kind_server():
    with start_fake_openai("error500") as url:
        bot = make(url, retries=2)
        with pytest.raises(BotError) as info:
            await bot.reply(HISTORY)
        await bot.aclose()
    assert info.value.kind == "server"
    assert url.state.requests == 3
    assert "HTTP 500" in str(info.value) and "the model crashed" in str(info.value)


async def test_flaky_server_succeeds_on_retry():
    with start_fake_openai("flaky", fail_first=2) as url:
        bot = make(url, retries=2)
        assert await bot.reply(HISTORY) == "reply to: Hi!"
        await bot.aclose()
    assert url.state.requests == 3


async def test_garbage_is_malformed_without_retry():
    with start_fake_openai("garbage") as url:
        bot = make(url, retries=3)
        with pytest.raises(BotError) as info:
            await bot.reply(HISTORY)
        await bot.aclose()
    assert info.value.kind == "malformed"
    assert url.state.requests == 1


async def test_json_without_choices_is_malformed():
    with start_fake_openai("no_content") as url:
        bot = make(url)
        with pytest.raises(BotError) as info:
            await bot.reply(HISTORY)
        await bot.aclose()
    assert info.value.kind == "malformed" and "choices[0].message.content" in str(info.value)


async def test_bad_request_is_client_with_server_message_and_not_retried():
    with start_fake_openai("bad_request") as url:
        bot = make(url, retries=3)
        for call in (bot.reply(HISTORY), _drain(bot.stream(HISTORY))):
            with pytest.raises(BotError) as info:
                await call
            assert info.value.kind == "client"
            assert "model 'nope' does not exist" in str(info.value) and "HTTP 400" in str(info.value)
        await bot.aclose()
    assert url.state.requests == 2  # one per call: a 4xx is not retried


async def _drain(agen):
    return [c async for c in agen]


async def test_closed_port_is_refused_with_a_helpful_message():
    url = closed_port_url()
    bot = make(url, retries=1)
    with pytest.raises(BotError) as info:
        await bot.reply(HISTORY)
    await bot.aclose()
    assert info.value.kind == "refused"
    assert f"nothing is listening at {url}" in str(info.value) and "is the server running?" in str(info.value)
    assert str(info.value).startswith("bot 'gpt' refused:")


async def test_max_concurrency_is_honoured():
    with start_fake_openai("slow", delay=0.15) as url:
        bot = make(url, max_concurrency=2)
        start = time.monotonic()
        replies = await asyncio.gather(*(bot.reply([ChatMessage("user", f"m{i}")]) for i in range(6)))
        elapsed = time.monotonic() - start
        await bot.aclose()
    assert replies == [f"reply to: m{i}" for i in range(6)]
    assert url.state.max_in_flight == 2
    assert elapsed >= 0.4  # 6 requests, 2 at a time, 0.15 s each


async def test_api_key_env_is_sent_and_missing_env_is_a_config_error(monkeypatch):
    with start_fake_openai("ok") as url:
        bot = make(url, api_key_env="DIALEVAL_TEST_KEY")
        monkeypatch.delenv("DIALEVAL_TEST_KEY", raising=False)
        with pytest.raises(BotError) as info:
            await bot.reply(HISTORY)
        assert info.value.kind == "config" and "DIALEVAL_TEST_KEY" in str(info.value)
        monkeypatch.setenv("DIALEVAL_TEST_KEY", "sekrit")
        await bot.reply(HISTORY)
        await bot.aclose()
    assert url.state.headers[-1]["authorization"] == "Bearer sekrit"


def test_bot_works_across_event_loops():
    # Generation code may call asyncio.run once per conversation; the client must follow the loop.
    with start_fake_openai("ok") as url:
        bot = make(url)
        assert asyncio.run(bot.reply(HISTORY)) == "reply to: Hi!"
        assert asyncio.run(bot.reply(HISTORY)) == "reply to: Hi!"


async def test_rate_limit_is_retried_then_kind_client():
    with start_fake_openai("rate_limit") as url:
        bot = make(url, retries=1)
        with pytest.raises(BotError) as info:
            await bot.reply(HISTORY)
        await bot.aclose()
    assert info.value.kind == "client" and "429" in str(info.value) and "slow down" in str(info.value)
    assert url.state.requests == 2


async def test_stream_from_a_server_that_does_not_stream_still_gives_the_reply():
    with start_fake_openai("ok", ignore_stream=True) as url:
        bot = make(url)
        chunks = [c async for c in bot.stream(HISTORY)]
        await bot.aclose()
    assert chunks == ["reply to: Hi!"]


async def test_stream_retries_before_the_first_chunk():
    with start_fake_openai("flaky", fail_first=1) as url:
        bot = make(url, retries=1)
        assert "".join([c async for c in bot.stream(HISTORY)]) == "reply to: Hi!"
        await bot.aclose()
    assert url.state.requests == 2


async def test_unknown_host_is_refused_and_says_so():
    bot = make("http://no-such-host.invalid/v1", retries=0, timeout=5)
    with pytest.raises(BotError) as info:
        await bot.reply(HISTORY)
    await bot.aclose()
    assert info.value.kind in ("refused", "timeout")
    if info.value.kind == "refused":
        assert "no-such-host.invalid" in str(info.value)


async def test_max_concurrency_also_limits_streams():
    with start_fake_openai("slow", delay=0.1) as url:
        bot = make(url, max_concurrency=1)

        async def consume(i):
            return "".join([c async for c in bot.stream([ChatMessage("user", f"s{i}")])])

        assert await asyncio.gather(*(consume(i) for i in range(3))) == [f"reply to: s{i}" for i in range(3)]
        await bot.aclose()
    assert url.state.max_in_flight == 1
