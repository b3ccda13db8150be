"""Deterministic answering rules for the loopback OpenAI-compatible judge (tests/bots/fake_openai_server.py).

Each rule reads the prompt `dialeval judge` sent (the last user message) and answers in the requested
JSON format: `always_first` picks the option shown first (pure position bias); `prefer_longer`
picks the option whose text is longer (a verbosity bias, consistent in both side orders).
"""

from __future__ import annotations

import json
import re
from typing import Any

DA = ("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic")
SM = ("engaging", "humanlike", "interesting")


def prompt_of(body: dict[str, Any]) -> str:
    return [m["content"] for m in body["messages"] if m["role"] == "user"][0]


def _text_of(prompt: str, label: str) -> int:
    """Characters written by `label` (e.g. 'Speaker 1', 'Response 2', 'Assistant A') in the prompt."""
    return sum(len(m.group(1)) for m in re.finditer(rf"^{re.escape(label)}: (.*)$", prompt, re.M))


def _block_of(prompt: str, name: str) -> int:
    """Characters of the block headed `[Answer NAME]` (the prompts method's answers), up to the next
    block or the question."""
    found = re.search(rf"^\[Answer {re.escape(name)}\]\n(.*?)(?=\n\s*\n\[|\n\s*\nQuestion:|\Z)", prompt, re.M | re.S)
    return len(found.group(1).strip()) if found else 0


def _other(prompt: str) -> str | None:
    if '"speaker_a"' in prompt:
        return json.dumps(
            {"speaker_a": "bot", "speaker_b": "human", "fluency": "A", "sensibleness": "tie", "specificity": "B"}
        )
    if '"robotic"' in prompt:
        return json.dumps({c: 80 for c in DA})
    if "from 1 (not at all) to 5" in prompt:
        return json.dumps({q: 4 for q in SM})
    if '"engaging": true' in prompt:
        return json.dumps({"engaging": True, "humanlike": False, "interesting": True})
    return None


def always_first(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    if '"winner"' in prompt:
        return '{"winner": "A"}'
    if '"choice"' in prompt:
        return 'Sure! ```json\n{"choice": 1}\n```'
    return _other(prompt) or "?"


def prefer_longer(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    if '"winner"' in prompt:
        if "[Answer A]" in prompt:  # the prompts method: two answers to one prompt
            a, b = _block_of(prompt, "A"), _block_of(prompt, "B")
        else:  # the arena: two assistants' turns
            a, b = _text_of(prompt, "Assistant A"), _text_of(prompt, "Assistant B")
        return json.dumps({"winner": "A" if a > b else "B" if b > a else "tie"})
    if '"choice"' in prompt:
        for first, second in (("Speaker 1", "Speaker 2"), ("Response 1", "Response 2")):
            a, b = _text_of(prompt, first), _text_of(prompt, second)
            if a or b:
                return json.dumps({"choice": 1 if a >= b else 2})
    return _other(prompt) or "?"
