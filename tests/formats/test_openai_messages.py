from __future__ import annotations

import json

import pytest

from dialeval.errors import ImportFormatError
from dialeval.formats.openai_messages import read_openai_messages, write_openai_messages
from dialeval.records import Conversation, Turn


def _write(path, lines):
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_reads_roles_bot_names_and_system(tmp_path):
    path = _write(
        tmp_path / "chats.jsonl",
        [
            {
                "id": "c1",
                "model": "gpt-x",
                "temperature": 0.7,
                "messages": [
                    {"role": "system", "content": "You are friendly."},
                    {"role": "user", "content": "Hi!"},
                    {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "!"}],
                    },
                ],
            },
            {
                "bot": "retrieval",
                "messages": [{"role": "user", "content": "Hey"}, {"role": "assistant", "content": "Yo"}],
            },
            {
                "messages": [
                    {"role": "developer", "content": "Be brief."},
                    {"role": "assistant", "content": "Hi."},
                ]
            },
        ],
    )
    c1, c2, c3 = read_openai_messages(path, default_bot="fallback")
    assert c1.id == "c1" and c1.bots == ["gpt-x"]
    assert [(t.speaker, t.bot, t.text) for t in c1.turns] == [
        ("human", None, "Hi!"),
        ("bot", "gpt-x", "Hello!"),
    ]
    assert c1.meta == {"temperature": 0.7, "system": "You are friendly."}
    assert c2.id == "chats-2" and c2.bots == ["retrieval"] and c2.turns[1].bot == "retrieval"
    assert c3.bots == ["fallback"] and c3.meta["system"] == "Be brief." and len(c3.turns) == 1


def test_round_trip(tmp_path):
    convs = [
        Conversation(
            "a",
            ["m1"],
            [Turn("human", "Hi!"), Turn("bot", "Hello, I like jazz.", bot="m1")],
            source="live",
            meta={"system": "persona: jazz fan", "study": "s1"},
        ),
        Conversation(
            "b",
            ["m1", "m2"],
            [Turn("bot", "seed", bot="m1"), Turn("bot", "reply", bot="m2")],
            source="bot-bot",
        ),
    ]
    out = write_openai_messages(convs, tmp_path / "o" / "msgs.jsonl")
    first, second = [json.loads(x) for x in out.read_text().splitlines()]
    assert first["model"] == "m1" and first["messages"][0] == {
        "role": "system",
        "content": "persona: jazz fan",
    }
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    assert [m.get("name") for m in second["messages"]] == ["m1", "m2"] and "model" not in second
    back = read_openai_messages(out)
    for original, read in zip(convs, back):
        assert (read.id, read.bots, read.source, read.meta) == (
            original.id,
            original.bots,
            original.source,
            original.meta,
        )
        assert [(t.speaker, t.text, t.bot) for t in read.turns] == [(t.speaker, t.text, t.bot) for t in original.turns]


@pytest.mark.parametrize(
    "line, field",
    [
        ({"model": "x"}, "messages"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"content": "x"}]}, "messages[0].role"),
        (
            {"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}]},
            "messages[1].role",
        ),
        ({"messages": [{"role": "assistant", "content": None}]}, "messages[0].content"),
    ],
)
def test_errors_name_line_and_field(tmp_path, line, field):
    path = _write(tmp_path / "bad.jsonl", [{"messages": []}, line])
    with pytest.raises(ImportFormatError) as info:
        read_openai_messages(path)
    assert info.value.line == 2 and info.value.field == field


def test_malformed_json(tmp_path):
    path = _write(tmp_path / "bad.jsonl", ["[1, 2]"])
    with pytest.raises(ImportFormatError, match="line 1"):
        read_openai_messages(path)
