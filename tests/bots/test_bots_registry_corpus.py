"""Building bots by type, option validation, the corpus reader and the persona list."""

from __future__ import annotations

import random

import pytest

from dialeval.bots import BOT_TYPES, Bot, ChatMessage, build_bot, validate_bot_options
from dialeval.corpus import first_exchange, load_corpus, random_conversation
from dialeval.errors import BotError, ImportFormatError
from dialeval.personas import all_personas, persona_groups, persona_pairs, sample_persona


def test_every_type_validates_its_defaults_or_names_the_missing_option():
    for type_ in BOT_TYPES:
        try:
            validate_bot_options(type_, {})
        except BotError as exc:
            assert type_ == "openai" and "base_url" in str(exc) and "model" in str(exc)


def test_unknown_type_lists_the_known_ones():
    with pytest.raises(BotError) as info:
        build_bot("mybot", "gpt5", {})
    assert info.value.kind == "config" and info.value.bot == "mybot"
    assert "unknown bot type 'gpt5'" in str(info.value) and "retrieval" in str(info.value)


def test_bad_and_unknown_options_name_the_option_and_what_is_allowed():
    with pytest.raises(BotError) as info:
        build_bot("gpt", "openai", {"base_url": "http://x/v1", "model": "m", "temperature": "hot"})
    assert info.value.kind == "config" and "'temperature'" in str(info.value) and "'hot'" in str(info.value)
    with pytest.raises(BotError) as info:
        build_bot("gpt", "openai", {"base_url": "http://x/v1", "model": "m", "temprature": 0.5})
    message = str(info.value)
    assert "unknown option 'temprature'" in message and "allows:" in message and "temperature" in message
    with pytest.raises(BotError, match="http://"):
        validate_bot_options("openai", {"base_url": "localhost:8000", "model": "m"}, name="gpt")
    with pytest.raises(BotError, match="mapping"):
        validate_bot_options("repeat", ["text"])


def test_build_returns_a_named_bot_of_each_light_type():
    for type_ in ("retrieval", "degraded", "repeat", "eliza", "human"):
        bot = build_bot(f"b-{type_}", type_, {})
        assert isinstance(bot, Bot) and bot.name == f"b-{type_}"


def test_chat_message_rejects_unknown_roles():
    with pytest.raises(ValueError):
        ChatMessage("system", "x")


def test_bundled_corpus_turns_alternate_senders_and_are_cached():
    corpus = load_corpus()
    assert len(corpus) > 3000 and load_corpus() is corpus
    assert all(len(c.turns) >= 2 and all(t.strip() for t in c.turns) for c in corpus[:200])
    assert len(load_corpus(max_conversations=10)) == 10
    conv_id, exchange = first_exchange(random.Random(0))
    assert len(exchange) == 2 and tuple(exchange) == next(c for c in corpus if c.id == conv_id).turns[:2]
    assert random_conversation(random.Random(1)) == random_conversation(random.Random(1))


def test_plain_text_corpus_blocks(tmp_path):
    path = tmp_path / "chats.txt"
    path.write_text("Hi\nHello there\nHow are you?\n\n\nsingle line block\n\nA\nB\n")
    corpus = load_corpus(path)
    assert [c.turns for c in corpus] == [("Hi", "Hello there", "How are you?"), ("A", "B")]


def test_bad_corpus_lines_give_the_line_number(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"turns": ["a", "b"]}\n\n{"turns": ["a", 3]}\n')
    with pytest.raises(ImportFormatError) as info:
        load_corpus(path)
    assert info.value.line == 3 and "turns" in str(info.value)
    path.write_text('{"turns": ["a", "b"]}\nnot json\n')
    with pytest.raises(ImportFormatError, match="line 2"):
        load_corpus(path)
    with pytest.raises(ImportFormatError, match="not found"):
        load_corpus(tmp_path / "missing.jsonl")
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ImportFormatError, match="no conversation"):
        load_corpus(tmp_path / "empty.txt")


def test_bot_with_a_bad_corpus_file_raises_the_import_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("oops\n")
    bot = build_bot("qc", "degraded", {"corpus_path": str(path)})
    with pytest.raises(ImportFormatError, match="line 1"):
        bot.corpus()


def test_personas_are_many_distinct_first_person_sentences():
    sentences = all_personas()
    assert len(sentences) >= 150 and len(set(sentences)) == len(sentences)
    assert all(s.startswith(("I ", "I'", "My ")) and s.endswith(".") for s in sentences)
    assert len(persona_groups()) >= 10


def test_sample_persona_takes_one_sentence_per_topic_and_is_seeded():
    group_of = {s: i for i, g in enumerate(persona_groups()) for s in g}
    for seed in range(20):
        persona = sample_persona(random.Random(seed), k=3)
        assert len({group_of[s] for s in persona}) == 3
    assert sample_persona(random.Random(4)) == sample_persona(random.Random(4))
    with pytest.raises(ValueError):
        sample_persona(random.Random(0), k=1000)


def test_persona_pairs_share_no_sentence():
    pairs = persona_pairs(random.Random(0), n=25)
    assert len(pairs) == 25
    for first, second in pairs:
        assert len(first) == len(second) == 2 and not set(first) & set(second)
