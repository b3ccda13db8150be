"""The options each bot type accepts, as pydantic models (validated without building the bot)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt option must fail, not be ignored


class OpenAIOptions(_Options):
    """Any OpenAI-compatible server: base_url is the part before /chat/completions, e.g. .../v1."""

    base_url: str  # the part before /chat/completions, e.g. http://127.0.0.1:8000/v1
    model: str  # the model name the server expects
    api_key_env: str | None = None  # the environment variable holding the API key
    system_prompt: str | None = None  # a system message before the conversation
    temperature: float | None = Field(default=None, ge=0, le=2)  # None: the server's default
    top_p: float | None = Field(default=None, gt=0, le=1)  # None: the server's default
    max_tokens: int | None = Field(default=None, ge=1)  # None: the server's default
    timeout: float = Field(default=60.0, gt=0, description="seconds per attempt")
    retries: int = Field(default=2, ge=0, le=10, description="extra attempts after a transient failure")
    backoff: float = Field(default=0.5, ge=0, description="seconds before the first retry; doubles each time")
    max_concurrency: int = Field(default=4, ge=1)  # requests in flight to this bot
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)")
        return v.rstrip("/")


class CorpusOptions(_Options):
    corpus_path: str | None = Field(default=None, description="JSONL or blank-line separated text; default: bundled")
    max_conversations: int | None = Field(default=3000, ge=1)  # conversations read from the corpus
    seed: int = 0  # seeds the bot's random choices


class RetrievalOptions(CorpusOptions):
    context_turns: int = Field(default=1, ge=1, le=5, description="previous utterances matched")
    top_k: int = Field(default=3, ge=1, le=50, description="pick among the k best matches (seeded)")
    response_weight: float = Field(default=0.3, ge=0, le=5, description="weight of query-response similarity")


class DegradedOptions(CorpusOptions):
    pass


class HumanOptions(CorpusOptions):
    min_turns: int = Field(default=14, ge=2, description="only replay conversations at least this long")


class RepeatOptions(_Options):
    mode: Literal["fixed", "echo"] = "fixed"  # fixed: always says text; echo: prefix + the user's message
    text: str = "That is interesting. Tell me more."  # what mode fixed says
    prefix: str = "You said: "  # what mode echo puts before the user's message


class ElizaOptions(_Options):
    seed: int = 0  # seeds the bot's random choices


class LocalLLMOptions(_Options):
    # a system message before the conversation
    system_prompt: str | None = "You are a friendly person chatting casually. Answer in one or two short sentences."
    max_new_tokens: int = Field(default=48, ge=1, le=1024)  # longest reply, in tokens
    temperature: float = Field(default=0.7, ge=0, le=2, description="0 = greedy")
    top_p: float = Field(default=0.9, gt=0, le=1)  # nucleus sampling
    seed: int = 0  # seeds sampling
    max_history: int = Field(default=8, ge=1, description="only the last N messages are given to the model")
