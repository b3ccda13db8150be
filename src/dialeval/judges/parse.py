"""Reading a judge's answer: one JSON object, checked field by field, or one clear error.

Models wrap JSON in code fences or add a sentence around it; the first balanced ``{...}`` is taken,
anything else (no object, invalid JSON, a missing or out-of-range field) is a `JudgeParseError`
whose message says what was expected and quotes the start of the answer.
"""

from __future__ import annotations

import json
from typing import Any


class JudgeParseError(ValueError):
    """The answer does not follow the requested format."""


def quote(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "…")


def json_object(text: str) -> dict[str, Any]:
    """The first balanced JSON object in `text`."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for end in range(start, len(text)):
            ch = text[end]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start : end + 1])
                    except json.JSONDecodeError as exc:
                        raise JudgeParseError(f"invalid JSON ({exc.msg}) in the answer {quote(text)}") from None
                    if isinstance(value, dict):
                        return value
                    break
        start = text.find("{", start + 1)
    raise JudgeParseError(f"no JSON object in the answer {quote(text)}")


def choice(obj: dict[str, Any], key: str, allowed: tuple[Any, ...], text: str) -> Any:
    """obj[key], which must be one of `allowed` (strings compared case-insensitively; "1" reads as 1)."""
    if key not in obj:
        raise JudgeParseError(f"the answer has no '{key}' field (expected one of {list(allowed)}): {quote(text)}")
    value = obj[key]
    for option in allowed:
        if value == option and type(value) is type(option):
            return option
        if isinstance(value, str) and str(option).lower() == value.strip().lower():
            return option
    raise JudgeParseError(f"'{key}' is {value!r}, not one of {list(allowed)}: {quote(text)}")


def number(obj: dict[str, Any], key: str, low: float, high: float, text: str, integer: bool = False) -> float | int:
    """obj[key] as a number in [low, high] (an integer when `integer`)."""
    if key not in obj:
        raise JudgeParseError(f"the answer has no '{key}' field (a number from {low:g} to {high:g}): {quote(text)}")
    value = obj[key]
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise JudgeParseError(f"'{key}' is {obj[key]!r}, not a number: {quote(text)}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JudgeParseError(f"'{key}' is {value!r}, not a number: {quote(text)}")
    if not low <= value <= high:
        raise JudgeParseError(f"'{key}' is {value!r}, outside {low:g}..{high:g}: {quote(text)}")
    if integer:
        if value != int(value):
            raise JudgeParseError(f"'{key}' is {value!r}, not a whole number: {quote(text)}")
        return int(value)
    return float(value)


def boolean(obj: dict[str, Any], key: str, text: str) -> bool:
    """obj[key] as true/false (also "yes"/"no")."""
    if key not in obj:
        raise JudgeParseError(f"the answer has no '{key}' field (true or false): {quote(text)}")
    value = obj[key]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise JudgeParseError(f"'{key}' is {value!r}, not true or false: {quote(text)}")
