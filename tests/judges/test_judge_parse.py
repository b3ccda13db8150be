"""The strict reading of judges' answers: one JSON object, or one clear error."""

from __future__ import annotations

import pytest

from dialeval.judges import parse as p


def test_an_object_is_found_in_fences_and_prose():
    assert p.json_object('Sure!\n```json\n{"choice": 2, "why": "a {brace} in text"}\n```') == {
        "choice": 2,
        "why": "a {brace} in text",
    }
    assert p.choice({"choice": "1"}, "choice", (1, 2), "") == 1
    assert p.choice({"winner": "both BAD"}, "winner", ("A", "B", "tie", "both bad"), "") == "both bad"
    assert p.number({"fun": "73"}, "fun", 0, 100, "") == 73.0
    assert p.boolean({"engaging": "yes"}, "engaging", "") is True


@pytest.mark.parametrize(
    ("text", "call", "message"),
    [
        ("I prefer the first one.", lambda o, t: None, "no JSON object in the answer"),
        ('{"choice": 1,}', lambda o, t: None, "invalid JSON"),
        ('{"pick": 1}', lambda o, t: p.choice(o, "choice", (1, 2), t), "has no 'choice' field"),
        ('{"choice": 3}', lambda o, t: p.choice(o, "choice", (1, 2), t), "'choice' is 3, not one of [1, 2]"),
        ('{"fun": 120}', lambda o, t: p.number(o, "fun", 0, 100, t), "outside 0..100"),
        ('{"fun": 2.5}', lambda o, t: p.number(o, "fun", 1, 5, t, integer=True), "not a whole number"),
        ('{"engaging": 1}', lambda o, t: p.boolean(o, "engaging", t), "not true or false"),
    ],
)
def test_each_failure_says_what_was_expected(text, call, message):
    with pytest.raises(p.JudgeParseError, match=message.replace("[", r"\[").replace("]", r"\]")):
        call(p.json_object(text), text)
