"""A bot behind any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp, Ollama...).

Transient failures (timeouts, connection errors, 5xx, 429) are retried with exponential backoff;
everything else fails at once. Every failure becomes a BotError whose kind says what went wrong.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import ssl
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx

from dialeval.bots.base import Bot, BotContext, ChatMessage
from dialeval.bots.options import OpenAIOptions
from dialeval.errors import BotError

_DNS_HINTS = (
    "name or service not known",
    "nodename nor servname",
    "getaddrinfo",
    "name resolution",
    "no address associated",
)


# httpcore 1.0.x runs `import sniffio` every time it sets up a lock or an event (several per request).
# anyio >= 4.11 no longer installs sniffio, and Python does not cache a failed import, so each of
# those calls searched sys.path again: ~1 ms of CPU per request, a third of the client's time against
# a local endpoint (encode/httpcore discussion #1102, PR #1103). A None entry in sys.modules makes
# the import fail at once; httpcore then assumes asyncio, which is what we run.
if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
    sys.modules["sniffio"] = None  # type: ignore[assignment]

_SHARED_SSL: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    """One SSL context (httpx's default: certifi, or SSL_CERT_FILE / SSL_CERT_DIR) for every bot's
    client: loading the CA bundle takes ~0.1 s, which each new client paid again."""
    global _SHARED_SSL
    if _SHARED_SSL is None:
        _SHARED_SSL = httpx.create_ssl_context()
    return _SHARED_SSL


class _Retryable(Exception):
    """A transient failure; carries the BotError to raise once the retries are used up."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.message, self.retry_after = kind, message, retry_after


class OpenAIBot(Bot):
    type = "openai"

    def __init__(self, name: str, options: OpenAIOptions) -> None:
        super().__init__(name)
        self.options = options
        self.url = options.base_url + "/chat/completions"
        # The client and semaphore belong to one event loop; they are made on first use in that loop.
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- requests -------------------------------------------------------------------------

    def messages(self, history: list[ChatMessage], context: BotContext | None) -> list[dict[str, str]]:
        system = [self.options.system_prompt] if self.options.system_prompt else []
        if context and context.persona:
            system.append("Your persona: " + " ".join(context.persona))
        out = [{"role": "system", "content": "\n".join(system)}] if system else []
        return out + [{"role": m.role, "content": m.text} for m in history]

    def payload(self, history: list[ChatMessage], context: BotContext | None, stream: bool) -> dict[str, Any]:
        o = self.options
        body: dict[str, Any] = {"model": o.model, "messages": self.messages(history, context)}
        for key in ("temperature", "top_p", "max_tokens"):
            if getattr(o, key) is not None:
                body[key] = getattr(o, key)
        if stream:
            body["stream"] = True
        body.update(o.extra_body)
        return body

    def _headers(self) -> dict[str, str]:
        env = self.options.api_key_env
        if not env:
            return {}
        key = os.environ.get(env)
        if not key:  # checked only when a request is made: validating a study needs no secrets
            raise BotError(
                self.name,
                "config",
                f"environment variable {env} (api_key_env) is not set; "
                f"export {env}=<your API key> or remove api_key_env",
            )
        return {"Authorization": f"Bearer {key}"}

    def _resources(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.options.timeout),
                verify=_ssl_context(),
            )
            self._semaphore = asyncio.Semaphore(self.options.max_concurrency)
            self._loop = loop
        assert self._semaphore is not None
        return self._client, self._semaphore

    async def _with_retries(self, attempt_once, limit: bool = True):
        """Run attempt_once() until it succeeds, fails for good, or the retries are used up.

        With `limit`, each attempt holds a slot of max_concurrency (the backoff sleep does not).
        """
        o = self.options
        _, semaphore = self._resources()
        for attempt in range(o.retries + 1):
            try:
                if not limit:
                    return await attempt_once()
                async with semaphore:
                    return await attempt_once()
            except _Retryable as exc:
                if attempt == o.retries:
                    suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                    raise BotError(self.name, exc.kind, exc.message + suffix) from None
                delay = o.backoff * 2**attempt
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, 30.0))
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        body = self.payload(history, context, stream=False)
        headers = self._headers()

        async def once() -> str:
            client, _ = self._resources()
            try:
                response = await client.post(self.url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                raise self._transport_error(exc) from None
            self._check_status(response.status_code, response.text, response.headers)
            return self._content(response.text)

        return await self._with_retries(once)

    async def stream(self, history: list[ChatMessage], context: BotContext | None = None) -> AsyncIterator[str]:
        """Real server-sent-event streaming; retries happen only before the first chunk arrives."""
        body = self.payload(history, context, stream=True)
        headers = self._headers()

        # The response is opened inside the retry loop; chunks are read after it is known to be good.
        async def open_stream():
            client, _ = self._resources()
            request = client.build_request("POST", self.url, json=body, headers=headers)
            try:
                response = await client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise self._transport_error(exc) from None
            if response.status_code >= 400:
                text = (await response.aread()).decode("utf-8", "replace")
                await response.aclose()
                self._check_status(response.status_code, text, response.headers)
            return response

        _, semaphore = self._resources()
        async with semaphore:  # held until the stream ends: a stream is one request in flight
            response = await self._with_retries(open_stream, limit=False)
            async for chunk in self._read_stream(response):
                yield chunk

    async def _read_stream(self, response: httpx.Response) -> AsyncIterator[str]:
        try:
            if "text/event-stream" not in response.headers.get("content-type", ""):
                # A server that ignores "stream": true answers with one JSON body.
                text = (await response.aread()).decode("utf-8", "replace")
                yield self._content(text)
                return
            async for line in response.aiter_lines():
                chunk = self._sse_chunk(line)
                if chunk is None:
                    break
                if chunk:
                    yield chunk
        except httpx.TimeoutException:
            raise BotError(
                self.name,
                "timeout",
                f"the stream from {self.options.base_url} stalled for more than {self.options.timeout:g} s",
            ) from None
        except httpx.HTTPError as exc:
            raise BotError(self.name, "server", f"the stream from {self.options.base_url} broke: {exc}") from None
        finally:
            await response.aclose()

    def _sse_chunk(self, line: str) -> str | None:
        """The text in one SSE line; '' for lines without text, None at the end of the stream."""
        if not line.startswith("data:"):
            return ""  # blank separators, comments, event names
        data = line[5:].strip()
        if data == "[DONE]":
            return None
        try:
            event = json.loads(data)
            choices = event.get("choices") or []
            if not choices:
                return ""  # e.g. a final usage-only event
            return choices[0].get("delta", {}).get("content") or ""
        except (json.JSONDecodeError, AttributeError, TypeError):
            raise BotError(
                self.name,
                "malformed",
                f"{self.url} sent a stream event that is not a chat completion chunk: {data[:200]!r}",
            ) from None

    # ---- classification -------------------------------------------------------------------

    def _transport_error(self, exc: httpx.HTTPError) -> _Retryable:
        base = self.options.base_url
        if isinstance(exc, httpx.TimeoutException):
            what = "connection" if isinstance(exc, httpx.ConnectTimeout) else "answer"
            return _Retryable("timeout", f"no {what} from {base} within {self.options.timeout:g} s (option timeout)")
        if isinstance(exc, httpx.ConnectError):
            if any(hint in str(exc).lower() for hint in _DNS_HINTS):
                host = httpx.URL(base).host
                return _Retryable("refused", f"cannot resolve the host '{host}' of {base} — is base_url spelt right?")
            return _Retryable("refused", f"nothing is listening at {base} — is the server running?")
        # The connection broke half-way (server crashed, proxy hung up): transient, like a 5xx.
        return _Retryable("server", f"the connection to {base} broke: {type(exc).__name__} {exc}".strip())

    def _check_status(self, status: int, text: str, headers: httpx.Headers) -> None:
        if status < 400:
            return
        detail = _server_message(text)
        if status == 429:
            retry_after = _float_or_none(headers.get("retry-after"))
            raise _Retryable("client", f"rate limited by {self.options.base_url} (HTTP 429): {detail}", retry_after)
        if status >= 500:
            raise _Retryable("server", f"{self.url} answered HTTP {status}: {detail}")
        hint = {
            401: " — check the API key (api_key_env)",
            403: " — check the API key (api_key_env)",
            404: " — check base_url (it should end before /chat/completions, e.g. .../v1) and model",
        }
        raise BotError(self.name, "client", f"{self.url} answered HTTP {status}: {detail}{hint.get(status, '')}")

    def _content(self, text: str) -> str:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise BotError(self.name, "malformed", f"{self.url} did not answer JSON: {text[:200]!r}") from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BotError(
                self.name,
                "malformed",
                f"{self.url} answered JSON without choices[0].message.content: {text[:200]!r}",
            ) from None
        if not isinstance(content, str):
            raise BotError(self.name, "malformed", f"choices[0].message.content is {content!r}, not text")
        return content

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            try:
                await client.aclose()
            except RuntimeError:
                pass  # its event loop is already closed; the sockets went with it


def _server_message(text: str) -> str:
    """The error message an OpenAI-style server put in its body, else the start of the body."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text.strip()[:300] or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return str(err)[:300]
    return text.strip()[:300]


def _float_or_none(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
