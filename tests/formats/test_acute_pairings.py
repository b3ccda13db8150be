from __future__ import annotations

import json

import pytest

from dialeval.errors import DialevalError, ImportFormatError
from dialeval.formats.acute_pairings import read_acute_pairings, write_acute_pairings
from dialeval.records import Conversation, Turn, Unit

ONBOARDING = {
    "is_onboarding": True,
    "speakers_to_eval": ["model_1", "model_2"],
    "correct_answer": "model_2",
    "tags": ["onboarding0000"],
    "dialogue_dicts": [
        {
            "speakers": ["model_1", "human_evaluator"],
            "dialogue": [{"id": "human_evaluator", "text": "hello"}, {"id": "model_1", "text": "bad reply"}],
        },
        {
            "speakers": ["model_2", "human_evaluator"],
            "dialogue": [{"id": "model_2", "text": "good opener"}, {"id": "human_evaluator", "text": "nice"}],
        },
    ],
}
PAIR = {
    "is_onboarding": False,
    "speakers_to_eval": ["blender", "dialogpt"],
    "dialogue_ids": [3, 8],
    "dialogue_dicts": [
        {
            "speakers": ["blender", "other_speaker"],
            "dialogue": [
                {"id": "blender", "text": "I love hiking."},
                {"id": "other_speaker", "text": "Me too!"},
                {"id": "blender", "text": "Where do you go?"},
            ],
        },
        {
            "speakers": ["human_evaluator", "dialogpt"],
            "dialogue": [{"id": "human_evaluator", "text": "Hi!"}, {"id": "dialogpt", "text": "Hey."}],
        },
    ],
}


def _write(path, lines):
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_reads_pairings_into_dataset(tmp_path):
    path = _write(
        tmp_path / "pairings.jsonl",
        [
            ONBOARDING,
            PAIR,
            dict(
                PAIR,
                dialogue_ids=[8, 3],
                speakers_to_eval=["dialogpt", "blender"],
                dialogue_dicts=PAIR["dialogue_dicts"][::-1],
            ),
        ],
    )
    ds = read_acute_pairings(path)
    assert ds.method == "acute" and ds.judgments == []
    assert [u.kind for u in ds.units] == ["acute-pair"] * 3
    onboarding, pair, swapped = ds.units
    assert onboarding.payload == {
        "speakers_to_eval": ["model_1", "model_2"],
        "is_onboarding": True,
        "correct_answer": "model_2",
        "tags": ["onboarding0000"],
    }
    assert onboarding.conversation_ids == ["pairings-1-a", "pairings-1-b"]
    assert pair.conversation_ids == ["3", "8"] and pair.payload["is_onboarding"] is False
    assert swapped.conversation_ids == ["8", "3"]
    # conversation 3 and 8 appear twice but are kept once
    assert sorted(c.id for c in ds.conversations) == ["3", "8", "pairings-1-a", "pairings-1-b"]
    convs = ds.conversation_map()
    self_chat = convs["3"]
    assert self_chat.bots == ["blender"] and self_chat.source == "self-chat"
    assert [(t.speaker, t.bot, t.meta["evaluated"]) for t in self_chat.turns] == [
        ("bot", "blender", True),
        ("bot", "blender", False),
        ("bot", "blender", True),
    ]
    human_bot = convs["8"]
    assert human_bot.bots == ["dialogpt"] and human_bot.source == "import"
    assert [(t.speaker, t.bot) for t in human_bot.turns] == [("human", None), ("bot", "dialogpt")]
    assert human_bot.meta["speakers"] == ["human_evaluator", "dialogpt"]


def test_round_trip(tmp_path):
    ds = read_acute_pairings(_write(tmp_path / "in.jsonl", [ONBOARDING, PAIR]))
    out = write_acute_pairings(ds.units, ds.conversations, tmp_path / "out.jsonl")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["correct_answer"] == "model_2" and lines[0]["is_onboarding"] is True
    assert lines[1]["speakers_to_eval"] == ["blender", "dialogpt"] and lines[1]["dialogue_ids"] == ["3", "8"]
    assert lines[1]["dialogue_dicts"][0]["dialogue"] == PAIR["dialogue_dicts"][0]["dialogue"]
    assert lines[1]["dialogue_dicts"][1]["speakers"] == ["human_evaluator", "dialogpt"]
    back = read_acute_pairings(out)
    assert [(u.id, u.conversation_ids, u.payload) for u in back.units] == [
        (u.id, u.conversation_ids, u.payload) for u in ds.units
    ]
    key = lambda d: {c.id: (c.bots, c.source, [(t.speaker, t.text, t.bot) for t in c.turns]) for c in d.conversations}
    assert key(back) == key(ds)


def test_writes_generated_conversations(tmp_path):
    a = Conversation(
        "sc-a",
        ["alpha"],
        [Turn("bot", "one", bot="alpha"), Turn("bot", "two", bot="alpha")],
        source="self-chat",
    )
    b = Conversation("hb-b", ["beta"], [Turn("human", "Hi!"), Turn("bot", "Hello", bot="beta")], source="live")
    units = [
        Unit("u1", "acute-pair", ["sc-a", "hb-b"], {"speakers_to_eval": ["alpha", "beta"]}),
        Unit("other", "segment", ["sc-a"]),
    ]
    out = write_acute_pairings(units, {c.id: c for c in (a, b)}, tmp_path / "gen.jsonl")
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert [d["id"] for d in line["dialogue_dicts"][0]["dialogue"]] == ["alpha", "other_speaker"]
    assert [d["id"] for d in line["dialogue_dicts"][1]["dialogue"]] == ["human_evaluator", "beta"]
    back = read_acute_pairings(out)
    assert back.units[0].id == "u1"
    assert back.conversation_map()["sc-a"].source == "self-chat"
    assert [t.bot for t in back.conversation_map()["sc-a"].turns] == ["alpha", "alpha"]
    with pytest.raises(DialevalError, match="missing-conv"):
        write_acute_pairings([Unit("u2", "acute-pair", ["sc-a", "missing-conv"])], [a], tmp_path / "x.jsonl")


@pytest.mark.parametrize(
    "line, field",
    [
        ({k: v for k, v in PAIR.items() if k != "speakers_to_eval"}, "speakers_to_eval"),
        ({k: v for k, v in PAIR.items() if k != "dialogue_dicts"}, "dialogue_dicts"),
        (dict(PAIR, speakers_to_eval=["only-one"]), "speakers_to_eval"),
        (
            dict(PAIR, dialogue_dicts=[{"speakers": []}, PAIR["dialogue_dicts"][1]]),
            "dialogue_dicts[0].dialogue",
        ),
        (
            dict(PAIR, dialogue_dicts=[PAIR["dialogue_dicts"][0], {"dialogue": [{"id": "x"}]}]),
            "dialogue_dicts[1].dialogue[0].text",
        ),
    ],
)
def test_errors_name_line_and_field(tmp_path, line, field):
    path = _write(tmp_path / "bad.jsonl", [PAIR, line])
    with pytest.raises(ImportFormatError) as info:
        read_acute_pairings(path)
    assert info.value.line == 2 and info.value.field == field


def test_malformed_json_line(tmp_path):
    path = _write(tmp_path / "bad.jsonl", [PAIR, PAIR, "{oops"])
    with pytest.raises(ImportFormatError) as info:
        read_acute_pairings(path)
    assert info.value.line == 3


def test_reads_the_first_published_shape_with_speaker(tmp_path):
    # ParlAI 2019 (parlai/mturk/tasks/acute_eval/example/pairings.jsonl): turns name `speaker`, not
    # `id`, and the line has no dialogue_ids
    old = json.loads(json.dumps(PAIR))
    old.pop("dialogue_ids", None)
    for dialogue in old["dialogue_dicts"]:
        for turn in dialogue["dialogue"]:
            turn["speaker"] = turn.pop("id")
    new_ds = read_acute_pairings(_write(tmp_path / "new.jsonl", [PAIR]))
    old_ds = read_acute_pairings(_write(tmp_path / "old.jsonl", [old]))
    assert [c.bots for c in old_ds.conversations] == [c.bots for c in new_ds.conversations]
    assert [[(t.speaker, t.bot, t.text) for t in c.turns] for c in old_ds.conversations] == [
        [(t.speaker, t.bot, t.text) for t in c.turns] for c in new_ds.conversations
    ]
    assert "speaker" not in old_ds.conversations[0].turns[0].meta
