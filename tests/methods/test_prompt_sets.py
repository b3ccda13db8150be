"""Reading prompt sets (JSONL and CSV) and where a system answers in a multi-turn prompt."""

from __future__ import annotations

import pytest

from dialeval.errors import DialevalError
from dialeval.methods.prompts.options import PromptsOptions
from dialeval.methods.prompts.promptset import answer_conversation, load_prompts, parse_prompts


def test_csv_prompts_with_text_messages_category_and_reference():
    text = (
        "id,prompt,messages,category,reference\n"
        'a,Say hi,,greet,"hi!"\n'
        'b,,"[{""role"": ""user"", ""content"": ""x""}, {""role"": ""assistant"", ""content"": ""y""}, '
        '{""role"": ""user"", ""content"": ""z""}]",,\n'
    )
    a, b = parse_prompts(text, "p.csv")
    assert (a.id, a.messages, a.category, a.reference) == ("a", (("user", "Say hi"),), "greet", "hi!")
    # a fixed earlier exchange: only the last user turn is answered, both sides share the rest
    assert b.slots() == [2] and b.shared() == b.messages and b.category is None


def test_mt_bench_turns_are_all_answered():
    (p,) = parse_prompts('{"question_id": 81, "turns": ["one", "two"], "category": "writing"}\n', "q.jsonl")
    assert p.id == "81" and p.slots() == [0, 1] and p.shared() == (("user", "one"),)
    conv = answer_conversation(p, "m", ["A1", "A2"], source="import")
    assert [(t.speaker, t.text) for t in conv.turns] == [("user", "one"), ("bot", "A1"), ("user", "two"), ("bot", "A2")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n', "prompt id 'a' appears twice"),
        ('{"prompt": "x"}\n', "p.jsonl line 1: no 'id'"),
        ('{"id": "a", "messages": [{"role": "system", "content": "s"}]}\n', "system messages are not supported"),
        (
            '{"id": "a", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "r"}]}\n',
            "the last message must be the user's",
        ),
        ('{"id": "a", "prompt": "  "}\n', "'prompt' must be non-empty text"),
        ("", "no prompts"),
    ],
)
def test_bad_prompt_sets_are_named(text, message):
    with pytest.raises(DialevalError, match=message):
        parse_prompts(text, "p.jsonl")


def test_the_bundled_set_has_thirty_prompts_in_five_categories(tmp_path):
    prompts = load_prompts(PromptsOptions(), tmp_path)
    assert len(prompts) == 30
    categories = {p.category for p in prompts}
    assert len(categories) == 5 and all(sum(p.category == c for p in prompts) >= 5 for c in categories)
