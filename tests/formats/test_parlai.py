from __future__ import annotations

import json

import pytest

from dialeval.errors import ImportFormatError
from dialeval.formats.parlai import (
    metadata_path,
    read_parlai_conversations,
    read_parlai_metadata,
    write_parlai_conversations,
)
from dialeval.records import Conversation, Turn


def _write_lines(path, lines):
    path.write_text("\n".join(json.dumps(x) if not isinstance(x, str) else x for x in lines) + "\n")


SELF_CHAT_LINE = {
    "dialog": [
        [
            {"id": "TransformerGenerator_1", "episode_done": False, "text": "what do you do for fun ?"},
            {"id": "TransformerGenerator_2", "episode_done": False, "text": "i play guitar ."},
        ],
        [{"id": "TransformerGenerator_1", "text": "nice , me too ."}],
    ],
    "context": [{"id": "context", "text": "your persona: i like music."}],
    "metadata_path": "/elsewhere/model2.bst.metadata",
}


def test_reads_parlai_self_chat_with_sidecar(tmp_path):
    log = tmp_path / "model2.bst.jsonl"
    _write_lines(log, [SELF_CHAT_LINE, "", SELF_CHAT_LINE])
    (tmp_path / "model2.bst.metadata").write_text(
        json.dumps(
            {
                "date": "2020-12-04",
                "opt": {"task": "bst"},
                "self_chat": True,
                "speakers": ["TransformerGenerator_1", "TransformerGenerator_2"],
                "version": "0.1",
            }
        )
    )
    convs = read_parlai_conversations(log)
    assert [c.id for c in convs] == ["model2.bst-1", "model2.bst-3"]
    conv = convs[0]
    assert conv.source == "self-chat"
    # fast-ACUTE writes <model>.<task>.jsonl: the model is named by the file, not the shared ParlAI id
    assert conv.bots == ["model2"]
    assert [t.text for t in conv.turns] == ["what do you do for fun ?", "i play guitar .", "nice , me too ."]
    assert all(t.speaker == "bot" and t.bot == "model2" for t in conv.turns)
    assert [t.meta["parlai_id"] for t in conv.turns] == [
        "TransformerGenerator_1",
        "TransformerGenerator_2",
        "TransformerGenerator_1",
    ]
    assert conv.turns[0].meta["episode_done"] is False
    assert conv.meta["context"][0]["text"] == "your persona: i like music."
    assert conv.meta["parlai_metadata"]["self_chat"] is True
    assert "opt" not in conv.meta["parlai_metadata"]
    # a bot name given by the user wins
    assert read_parlai_conversations(log, bot="blender90M")[0].bots == ["blender90M"]


def test_human_ids_and_bot_names(tmp_path):
    log = tmp_path / "chats.jsonl"
    _write_lines(
        log,
        [
            {
                "dialog": [
                    [{"id": "human_evaluator", "text": "Hi!"}, {"id": "blender", "text": "Hello!"}],
                    [{"id": "human", "text": "How are you?"}, {"id": "blender", "text": "Fine."}],
                ]
            },
        ],
    )
    (conv,) = read_parlai_conversations(log)  # no sidecar: not a self-chat
    assert conv.source == "import"
    assert conv.bots == ["blender"]
    assert [(t.speaker, t.bot) for t in conv.turns] == [
        ("human", None),
        ("bot", "blender"),
        ("human", None),
        ("bot", "blender"),
    ]
    assert conv.turns[2].meta["parlai_id"] == "human"
    (mapped,) = read_parlai_conversations(log, speaker_map={"blender": "BlenderBot 3B"})
    assert mapped.bots == ["BlenderBot 3B"]


def test_round_trip_keeps_conversations(tmp_path):
    convs = [
        Conversation(
            id="c1",
            bots=["alpha"],
            source="live",
            turns=[
                Turn("human", "Hi!"),
                Turn("bot", "Hello there.", bot="alpha"),
                Turn("human", "Tell me about cats."),
                Turn(
                    "bot",
                    "Cats purr.",
                    bot="alpha",
                    candidates=[{"bot": "alpha", "text": "Cats purr."}, {"bot": "beta", "text": "No."}],
                    chosen=0,
                ),
            ],
            meta={"context": [{"id": "context", "text": "your persona: i love cats."}]},
        ),
        Conversation(
            id="c2",
            bots=["beta"],
            source="self-chat",
            turns=[
                Turn("bot", "I like tea.", bot="beta"),
                Turn("bot", "Me too.", bot="beta"),
                Turn("bot", "Green or black?", bot="beta"),
            ],
        ),
        Conversation(
            id="c3",
            bots=["a", "b"],
            source="bot-bot",
            turns=[Turn("entity0", "Seed line", is_seed=True), Turn("entity1", "reply", bot="b")],
        ),
    ]
    out = write_parlai_conversations(convs, tmp_path / "out" / "logs.jsonl", self_chat=True, opt={"k": 1})
    assert out.exists() and metadata_path(out) == tmp_path / "out" / "logs.metadata"
    sidecar = read_parlai_metadata(out)
    assert sidecar["self_chat"] is True and sidecar["opt"] == {"k": 1} and sidecar["version"] == "0.1"
    assert "human_evaluator" in sidecar["speakers"] and "beta_1" in sidecar["speakers"]
    first = json.loads(out.read_text().splitlines()[0])
    assert len(first["dialog"]) == 2 and [a["id"] for a in first["dialog"][0]] == ["human_evaluator", "alpha"]

    back = read_parlai_conversations(out)
    assert [c.id for c in back] == ["c1", "c2", "c3"]
    for original, read in zip(convs, back):
        assert read.bots == original.bots
        assert read.source == original.source
        assert [(t.speaker, t.text, t.bot, t.is_seed, t.candidates, t.chosen) for t in read.turns] == [
            (t.speaker, t.text, t.bot, t.is_seed, t.candidates, t.chosen) for t in original.turns
        ]
    assert back[0].meta["context"] == convs[0].meta["context"]

    # a second write of what was read gives the same episodes
    again = write_parlai_conversations(back, tmp_path / "again.jsonl", self_chat=True)
    strip = lambda text: [{k: v for k, v in json.loads(x).items() if k != "metadata_path"} for x in text.splitlines()]
    assert strip(again.read_text()) == strip(out.read_text())


def test_malformed_json_names_the_line(tmp_path):
    log = tmp_path / "bad.jsonl"
    _write_lines(log, [SELF_CHAT_LINE, '{"dialog": [[{"id": "a", "text": "x"}]', SELF_CHAT_LINE])
    with pytest.raises(ImportFormatError) as info:
        read_parlai_conversations(log)
    assert info.value.line == 2
    assert "line 2" in str(info.value) and "bad.jsonl" in str(info.value)


@pytest.mark.parametrize(
    "line, field",
    [
        ({"context": []}, "dialog"),
        ({"dialog": [[{"id": "a"}]]}, "dialog[0][0].text"),
        ({"dialog": [[{"id": "a", "text": "x"}], [{"text": "y"}]]}, "dialog[1][0].id"),
        ({"dialog": "nope"}, "dialog"),
    ],
)
def test_missing_field_is_named(tmp_path, line, field):
    log = tmp_path / "x.jsonl"
    _write_lines(log, [SELF_CHAT_LINE, line])
    with pytest.raises(ImportFormatError) as info:
        read_parlai_conversations(log)
    assert info.value.line == 2 and info.value.field == field
    assert f"field '{field}'" in str(info.value)


def test_bad_sidecar_and_missing_file(tmp_path):
    log = tmp_path / "y.jsonl"
    _write_lines(log, [SELF_CHAT_LINE])
    (tmp_path / "y.metadata").write_text("{not json")
    with pytest.raises(ImportFormatError, match="metadata"):
        read_parlai_conversations(log)
    with pytest.raises(ImportFormatError, match="not found"):
        read_parlai_conversations(tmp_path / "missing.jsonl")


def test_self_chat_not_named_like_fast_acute_keeps_the_shared_id(tmp_path):
    log = tmp_path / "chats.jsonl"
    _write_lines(log, [SELF_CHAT_LINE])
    (tmp_path / "chats.metadata").write_text(json.dumps({"opt": {"task": "bst"}, "self_chat": True}))
    assert read_parlai_conversations(log)[0].bots == ["TransformerGenerator"]


MODEL_CHAT = {
    "personas": None,
    "dialog": [
        {"episode_done": False, "id": "Worker", "text": "Hi!", "fake_start": True, "agent_idx": 0},
        {
            "agent_idx": 1,
            "text": "hello there",
            "id": "TransformerGenerator",
            "problem_data": {"bucket_0": False, "none_all_good": True},
        },
        {"agent_idx": 0, "text": "how are you?", "id": "Worker"},
        {"agent_idx": 1, "text": "fine", "id": "TransformerGenerator"},
    ],
    "workers": ["W1"],
    "hit_ids": ["H1"],
}


def test_model_chat_results_and_folders(tmp_path):
    # model_chat writes one pretty-printed JSON object per conversation; the worker is agent 0
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "1_live.json").write_text(json.dumps(MODEL_CHAT, indent=4))
    conv = read_parlai_conversations(tmp_path / "a" / "1_live.json")[0]
    assert [t.speaker for t in conv.turns] == ["human", "bot", "human", "bot"]
    assert conv.bots == ["TransformerGenerator"] and conv.turns[0].meta["fake_start"] is True
    assert conv.turns[1].meta["problem_data"]["none_all_good"] is True
    both = read_parlai_conversations(tmp_path)
    assert [c.id for c in both] == ["a/1_live-1", "b/1_live-1"]  # equal file names do not clash


def test_older_logs_name_the_speaker_speaker(tmp_path):
    log = tmp_path / "chat_example1.jsonl"
    episode = {
        "assignment_id_hashed": "e5c9",
        "dialog": [
            {"speaker": "human_evaluator", "text": "i have never gotten into e-books"},
            {"speaker": "model", "text": "Same here."},
        ],
    }
    _write_lines(log, [json.dumps(episode)])
    conv = read_parlai_conversations(log)[0]
    assert [(t.speaker, t.bot) for t in conv.turns] == [("human", None), ("bot", "model")]
    assert conv.turns[1].meta["parlai_id"] == "model"
