"""The TF-IDF retrieval bot."""

from __future__ import annotations

import json

from dialeval.bots import BotContext, ChatMessage, build_bot
from dialeval.bots.retrieval import get_index

CONVERSATIONS = [
    [
        "Do you have any pets?",
        "Yes, I have two dogs and a cat.",
        "What are their names?",
        "Rex, Bella and Tom.",
    ],
    ["What is your favorite food?", "I love spicy Thai curry.", "Do you cook it yourself?", "Every Sunday."],
    ["Do you like football?", "I watch every match of my team.", "Which team?", "The local club, of course."],
    [
        "Where did you go on holiday?",
        "We went hiking in the mountains.",
        "Was it cold?",
        "Freezing at night.",
    ],
    ["Do you have any pets?", "No pets, my flat is too small.", "That is a pity.", "I know."],
]


def corpus(tmp_path):
    path = tmp_path / "pets.jsonl"
    path.write_text("".join(json.dumps({"turns": t}) + "\n" for t in CONVERSATIONS))
    return str(path)


async def test_returns_the_response_of_the_most_similar_context(tmp_path):
    bot = build_bot("ir", "retrieval", {"corpus_path": corpus(tmp_path), "top_k": 1})
    assert (
        await bot.reply([ChatMessage("user", "What food do you like best? Your favorite?")])
        == "I love spicy Thai curry."
    )
    assert await bot.reply([ChatMessage("user", "Tell me the names of them")]) == "Rex, Bella and Tom."


async def test_does_not_repeat_its_own_replies(tmp_path):
    bot = build_bot("ir", "retrieval", {"corpus_path": corpus(tmp_path), "top_k": 1})
    first = await bot.reply([ChatMessage("user", "Do you have pets?")])
    assert first in {"Yes, I have two dogs and a cat.", "No pets, my flat is too small."}
    history = [
        ChatMessage("user", "Do you have pets?"),
        ChatMessage("assistant", first),
        ChatMessage("user", "Do you have pets?"),
    ]
    second = await bot.reply(history)
    assert second != first
    assert second in {"Yes, I have two dogs and a cat.", "No pets, my flat is too small."}


async def test_seeded_choice_among_top_k_and_fallback_without_overlap(tmp_path):
    bot = build_bot("ir", "retrieval", {"corpus_path": corpus(tmp_path), "top_k": 2})
    history = [ChatMessage("user", "any pets?")]
    picks = {await bot.reply(history, BotContext(conversation_id=str(i), seed=1)) for i in range(20)}
    assert picks == {"Yes, I have two dogs and a cat.", "No pets, my flat is too small."}
    ctx = BotContext(conversation_id="x", seed=1)
    assert await bot.reply(history, ctx) == await bot.reply(history, ctx)
    odd = await bot.reply([ChatMessage("user", "zzzz qqqq")], ctx)  # no word in common: still a corpus line
    assert any(odd in c[1:] for c in CONVERSATIONS)


async def test_bot_speaking_first_opens_with_a_first_turn(tmp_path):
    bot = build_bot("ir", "retrieval", {"corpus_path": corpus(tmp_path)})
    assert await bot.reply([], BotContext(seed=3)) in {c[0] for c in CONVERSATIONS}


PETS = {"dog", "dogs", "cat", "cats", "parrot", "pet", "pets", "fish", "puppy", "bird"}
MUSIC = {"music", "listen", "pop", "rock", "rap", "song", "songs", "band", "genre", "jazz", "country"}


async def test_bundled_corpus_gives_relevant_answers_and_the_index_is_shared():
    options = {"max_conversations": 400, "top_k": 1}
    bot = build_bot("ir", "retrieval", options)
    for question, topic in (
        ("Do you have any pets? I have a dog.", PETS),
        ("What music do you listen to?", MUSIC),
    ):
        text = await bot.reply([ChatMessage("user", question)])
        assert set(text.lower().replace(",", " ").replace(".", " ").split()) & topic, (question, text)
    index = get_index(None, 400, 1)
    assert text in index.responses
    other = build_bot("ir2", "retrieval", options)
    await other.reply([ChatMessage("user", "hello")])
    assert other.index() is bot.index() is index


def test_best_first_is_the_stable_order_of_the_positive_scores():
    """The few best of a partial sort are exactly the start of the full stable sort (ties in corpus
    order, a tie at the cut included), so a reply is the same as when every score was sorted."""
    import numpy as np

    from dialeval.bots.retrieval import best_first

    rng = np.random.default_rng(0)
    for _ in range(200):
        # few distinct values: many ties, also across the cut; zeros and negatives are never picked
        scores = rng.integers(-2, 6, size=int(rng.integers(1, 300))).astype(np.float32) / 4
        full = np.argsort(-scores, kind="stable")
        full = full[scores[full] > 0]
        for n in (1, 3, 10, 1000):
            order = best_first(scores, n)
            assert len(order) >= min(n, len(full))
            assert np.array_equal(order, full[: len(order)])
