"""The degraded quality-control bot: the length table and the meaning distortion of Ji et al. (2022)."""

from __future__ import annotations

import json
import random

import pytest

from dialeval.bots import BotContext, ChatMessage, build_bot
from dialeval.bots.degraded import distort, run_length
from dialeval.corpus import load_corpus


@pytest.mark.parametrize(
    ("n", "r"),
    [
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 2),
        (5, 2),
        (6, 3),
        (8, 3),
        (9, 4),
        (15, 4),
        (16, 5),
        (29, 5),
        (30, 6),
        (34, 6),
        (35, 7),
        (100, 20),
    ],
)
def test_run_length_table(n, r):
    assert run_length(n) == r


def test_run_length_of_nothing_is_zero():
    assert run_length(0) == 0 and distort([], ["x"], random.Random(0)) == []


@pytest.mark.parametrize("n", [3, 4, 5, 6, 9, 16, 30, 47])
def test_distort_keeps_length_first_and_last_word_and_replaces_a_contiguous_run(n):
    words = [f"w{i}" for i in range(n)]
    donor = [f"d{i}" for i in range(40)]
    for seed in range(30):
        out = distort(words, donor, random.Random(seed))
        assert len(out) == n
        assert out[0] == "w0" and out[-1] == f"w{n - 1}"
        changed = [i for i in range(n) if out[i] != words[i]]
        r = run_length(n)
        assert len(changed) == r and changed == list(range(changed[0], changed[0] + r))
        # the run comes from the donor as one contiguous, in-order piece
        first = int(out[changed[0]][1:])
        assert [out[i] for i in changed] == [f"d{first + j}" for j in range(r)]


@pytest.mark.parametrize("n", [1, 2])
def test_distort_short_responses_replace_one_word(n):
    words = ["a", "b"][:n]
    positions = set()
    for seed in range(20):
        out = distort(words, ["X", "Y"], random.Random(seed))
        assert len(out) == n and sum(o != w for o, w in zip(out, words, strict=True)) == 1
        positions.add(next(i for i in range(n) if out[i] != words[i]))
    assert positions == set(range(n))  # for n = 2 either word may go


def test_distort_with_a_short_donor_still_keeps_the_length():
    out = distort([f"w{i}" for i in range(20)], ["only", "two"], random.Random(1))
    assert len(out) == 20 and out[0] == "w0" and out[-1] == "w19"


def test_distort_is_seeded():
    words, donor = "one two three four five six seven eight nine ten".split(), "a b c d e f g h".split()
    assert distort(words, donor, random.Random(5)) == distort(words, donor, random.Random(5))


def _corpus_file(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = []
    for c in range(6):
        turns = [" ".join(f"c{c}t{t}w{w}" for w in range(3 + 2 * t)) for t in range(5)]
        lines.append(json.dumps({"turns": turns}))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


async def test_degraded_bot_ignores_the_user_distorts_with_another_dialogue_and_is_reproducible(tmp_path):
    path = _corpus_file(tmp_path)
    bot = build_bot("qc", "degraded", {"corpus_path": path, "seed": 3})
    history = [ChatMessage("user", "Tell me about your dogs please")]
    ctx = BotContext(conversation_id="conv-1", seed=7)
    text = await bot.reply(history, ctx)
    words = text.split()
    source = {w.split("t")[0] for w in (words[0], words[-1])}
    assert len(source) == 1  # first and last word come from one corpus utterance
    original = next(t for conv in load_corpus(path) for t in conv.turns if t.split()[0] == words[0])
    assert len(words) == len(original.split())
    prefix = source.pop() + "t"
    foreign = [w for w in words if not w.startswith(prefix)]
    assert len(foreign) == run_length(len(words))  # the replaced run comes from a different dialogue
    assert "dogs" not in text
    # same seed, conversation and turn: same reply; another conversation: (almost surely) another
    assert await bot.reply(history, ctx) == text
    others = {await bot.reply(history, BotContext(conversation_id=f"c{i}", seed=7)) for i in range(10)}
    assert len(others) > 3


async def test_degraded_bot_on_the_bundled_corpus():
    bot = build_bot("qc", "degraded", {"max_conversations": 200})
    replies = [await bot.reply([ChatMessage("user", "Hi!")], BotContext(conversation_id=str(i))) for i in range(5)]
    assert all(r.strip() for r in replies)
