"""Bot types by name: validate a study file's bot options and build the bots."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from dialeval.bots import options as opt
from dialeval.bots.base import Bot
from dialeval.errors import BotError


@dataclass(frozen=True)
class BotType:
    options: type[BaseModel]
    target: str  # "module:Class", imported only when a bot is built (torch, sklearn stay unloaded)
    summary: str


BOT_TYPES: dict[str, BotType] = {
    "openai": BotType(
        opt.OpenAIOptions,
        "dialeval.bots.openai_compat:OpenAIBot",
        "any OpenAI-compatible /v1/chat/completions server",
    ),
    "retrieval": BotType(
        opt.RetrievalOptions,
        "dialeval.bots.retrieval:RetrievalBot",
        "TF-IDF nearest-context retrieval over a corpus",
    ),
    "degraded": BotType(
        opt.DegradedOptions,
        "dialeval.bots.degraded:DegradedBot",
        "quality-control bot: random corpus responses with meaning distortion (Ji et al. 2022)",
    ),
    "repeat": BotType(
        opt.RepeatOptions,
        "dialeval.bots.repeat:RepeatBot",
        "weak baseline: a fixed line or the user's message echoed",
    ),
    "eliza": BotType(opt.ElizaOptions, "dialeval.bots.eliza:ElizaBot", "a small ELIZA"),
    "human": BotType(
        opt.HumanOptions, "dialeval.bots.human:HumanReplayBot", "replays human-human corpus conversations"
    ),
    "local-llm": BotType(
        opt.LocalLLMOptions,
        "dialeval.bots.local_llm:LocalLLMBot",
        "SmolLM2-135M-Instruct on CPU (extra 'llm')",
    ),
}


def validate_bot_options(type: str, options: dict[str, Any] | None, name: str = "?") -> BaseModel:
    """The validated options of a bot; BotError(kind='config') says which option is wrong and why."""
    bot_type = BOT_TYPES.get(type)
    if bot_type is None:
        raise BotError(name, "config", f"unknown bot type '{type}'; known types: {', '.join(BOT_TYPES)}")
    if options is not None and not isinstance(options, dict):
        raise BotError(name, "config", f"options must be a mapping of option: value, not {options!r}")
    try:
        return bot_type.options.model_validate(options or {})
    except ValidationError as exc:
        raise BotError(name, "config", _explain(type, bot_type.options, exc)) from None


def _explain(type: str, model: type[BaseModel], exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        option = ".".join(str(p) for p in err["loc"]) or "options"
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown option '{option}'")
        elif err["type"] == "missing":
            problems.append(f"option '{option}' is required")
        else:
            problems.append(f"option '{option}' = {err.get('input')!r}: {err['msg']}")
    allowed = ", ".join(model.model_fields)
    return f"{'; '.join(problems)} (type '{type}' allows: {allowed})"


def build_bot(name: str, type: str, options: dict[str, Any] | None = None) -> Bot:
    """A ready bot. Heavy resources (corpus index, model weights) are loaded on first use."""
    validated = validate_bot_options(type, options, name)
    module_name, class_name = BOT_TYPES[type].target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(name, validated)
