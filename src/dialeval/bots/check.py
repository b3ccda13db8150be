"""Checking a study's endpoints once before work starts (`serve`, `generate`, `judge`).

Without it, the first to find a wrong base_url, key or model name is a paid crowdworker. Each
OpenAI-compatible bot is checked once, without retries and with a short timeout, all at once:

1. ``GET <base_url>/models`` with the bot's key: no answer, or 401/403, is a failure; a list that
   names the bot's model is a pass (no tokens spent, no chat request made);
2. otherwise (no /models route, or a model the list does not name: Ollama answers to "llama3" but
   lists "llama3:latest") the bot is asked what a worker's first message would ask (its model,
   key, extra_body, streaming) and the check stops at the first chunk: about one token.

Local bots (the bundled ones, local-llm) have no endpoint and are not checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import cast

from ..errors import BotError
from .base import Bot, ChatMessage
from .openai_compat import OpenAIBot

CHECK_TIMEOUT_S = 15.0  # connect and first token; a bot's own `timeout` applies if shorter
CHECK_MESSAGE = "Hi"


@dataclass(frozen=True)
class EndpointFailure:
    bot: str
    url: str
    reason: str

    def line(self) -> str:
        return f"bot '{self.bot}' at {self.url}: {self.reason}"


async def _listed(probe: OpenAIBot) -> bool:
    """True when GET /models answers with a list naming the bot's model; BotError when the endpoint
    cannot be reached or refuses the key (what a chat request would meet too)."""
    import httpx

    client, _ = probe._resources()
    url = probe.options.base_url + "/models"
    try:
        response = await client.get(url, headers=probe._headers())
    except httpx.HTTPError as exc:
        error = probe._transport_error(exc)
        raise BotError(probe.name, error.kind, error.message) from None
    if response.status_code in (401, 403):
        probe._check_status(response.status_code, response.text, response.headers)
    if response.status_code != 200:
        return False
    try:
        ids = {m.get("id") for m in response.json().get("data", []) if isinstance(m, dict)}
    except (ValueError, AttributeError):
        return False
    return probe.options.model in ids


async def _check_one(bot: OpenAIBot) -> EndpointFailure | None:
    options = bot.options.model_copy(update={"retries": 0, "timeout": min(bot.options.timeout, CHECK_TIMEOUT_S)})
    probe = OpenAIBot(bot.name, options)
    try:
        if await _listed(probe):
            return None
        stream = cast(AsyncGenerator[str, None], probe.stream([ChatMessage(role="user", text=CHECK_MESSAGE)]))
        async with aclosing(stream) as chunks:
            async for _ in chunks:
                break  # the endpoint answers: that is all the check needs
        return None
    except Exception as exc:  # any failure is reported on its line, never as a traceback
        reason = str(exc)
        prefix = f"bot '{bot.name}' "
        return EndpointFailure(bot.name, options.base_url, reason.removeprefix(prefix))
    finally:
        await probe.aclose()


async def check_endpoints(bots: Iterable[Bot]) -> list[EndpointFailure]:
    """The failing endpoints among `bots` (OpenAI-compatible ones; the others have none), in order."""
    remote = [b for b in bots if isinstance(b, OpenAIBot)]
    results = await asyncio.gather(*(_check_one(b) for b in remote))
    return [r for r in results if r is not None]


def check_endpoints_blocking(bots: Iterable[Bot]) -> list[EndpointFailure]:
    from ..asyncrun import run_blocking

    bots = list(bots)
    if not any(isinstance(b, OpenAIBot) for b in bots):
        return []  # nothing to ask: no event loop needed (the demo's bots are all local)
    return run_blocking(lambda: check_endpoints(bots))
