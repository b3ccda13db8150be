from __future__ import annotations

import pytest

from dialeval.errors import DialevalError
from dialeval.quality.filters import (
    ALL_CAPS,
    GREETING_FIRST,
    NEVER_GIVES_REASON,
    OFFENSIVE_LANGUAGE,
    REPEATS_FIRST,
    SHORT_MESSAGES,
    apply_flags,
    check_messages,
    filter_annotators,
    load_wordlist,
    never_gives_reason,
)
from dialeval.records import Annotator

GOOD = [
    "I spent the weekend hiking with my dog.",
    "Mostly mountains, the views are amazing.",
    "Do you have any pets at home?",
]


def test_good_worker_passes():
    assert check_messages(GOOD) == []
    assert check_messages([]) == []  # a disconnect is not held against the worker


def test_average_under_three_words():
    assert SHORT_MESSAGES in check_messages(["ok", "yes sure", "cool"])
    # 2, 4 -> average 3.0: not under three
    assert SHORT_MESSAGES not in check_messages(["yes sure", "I like that one"])
    assert SHORT_MESSAGES in check_messages(["yes sure", "I like that"])  # 2.5


@pytest.mark.parametrize(
    "first",
    [
        "Hello! I like dogs.",
        "hi there, how is it going?",
        "Hiii what do you do",
        "Hey, nice to chat with you",
        "heyyy I am a nurse",
        "Good morning, I am Bob",
        "Nice to meet you, I am a teacher",
    ],
)
def test_greeting_first_trips(first):
    assert GREETING_FIRST in check_messages([first] + GOOD[1:])


@pytest.mark.parametrize(
    "first",
    [
        "I have a hive of bees in my garden.",
        "History is my favourite subject.",
        "They said hello to me yesterday at the shop.",
        "Whichever you like best.",
    ],
)
def test_greeting_first_does_not_trip(first):
    assert GREETING_FIRST not in check_messages([first] + GOOD[1:])


def test_greeting_only_counts_in_the_first_message():
    assert GREETING_FIRST not in check_messages([GOOD[0], "Hello again, what about you?"])


def test_all_caps_several_messages():
    assert ALL_CAPS in check_messages(["I LOVE DOGS SO MUCH", "WHAT ABOUT YOU THEN", "fine thanks for asking"])
    assert ALL_CAPS in check_messages(["I LOVE DOGS SO MUCH"])  # the only message
    # one shouting message among several, and short words like "I" or "OK", do not count
    assert ALL_CAPS not in check_messages(["I LOVE DOGS SO MUCH", "what about you then?", "I", "123 456 789"])
    assert ALL_CAPS not in check_messages(GOOD)


def test_later_message_repeats_first():
    assert REPEATS_FIRST in check_messages(
        ["I like the beach a lot.", "Tell me more about it.", "i like THE beach a lot"]
    )
    assert REPEATS_FIRST not in check_messages(["I like the beach a lot.", "I like the mountains a lot."])
    assert REPEATS_FIRST not in check_messages(["Tell me more about it."])
    # repeating a later message (not the first) is not this rule
    assert REPEATS_FIRST not in check_messages(["First thing here.", "Say it again now.", "Say it again now."])


def test_offensive_language_default_list():
    words = load_wordlist()
    assert "shit" in words and len(words) < 60
    assert OFFENSIVE_LANGUAGE in check_messages(GOOD + ["That movie was shit honestly."])
    assert OFFENSIVE_LANGUAGE in check_messages(["You are all BITCHES here, really"])  # case and plural
    # words that merely contain a listed word are fine
    assert OFFENSIVE_LANGUAGE not in check_messages(
        ["I read Dickens in class.", "We visited Scunthorpe and Shitake farms"]
    )
    assert OFFENSIVE_LANGUAGE not in check_messages(GOOD)


def test_offensive_language_custom_list(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("# my list\nbroccoli\nrotten egg  # phrase\n\n")
    assert load_wordlist(path) == ("broccoli", "rotten egg")
    assert OFFENSIVE_LANGUAGE in check_messages(["I had broccoli for dinner today"], wordlist=path)
    assert OFFENSIVE_LANGUAGE in check_messages(["You smell like a Rotten   Egg today"], wordlist=path)
    assert OFFENSIVE_LANGUAGE not in check_messages(["That movie was shit honestly."], wordlist=path)
    assert OFFENSIVE_LANGUAGE in check_messages(["so much kale in here"], wordlist=["kale"])
    with pytest.raises(DialevalError, match="word list"):
        check_messages(GOOD, wordlist=tmp_path / "missing.txt")


def test_choose_checks():
    assert check_messages(["hi", "hi"], checks=[SHORT_MESSAGES]) == [SHORT_MESSAGES]
    with pytest.raises(DialevalError, match="unknown message checks"):
        check_messages(GOOD, checks=["nope"])


def test_never_gives_reason():
    assert never_gives_reason([])
    assert never_gives_reason(["", None, "  "])
    assert never_gives_reason(["n/a", "idk", ".", "ok"])
    assert never_gives_reason(["more engaging", "More engaging.", "more engaging!"])  # same text every time
    assert not never_gives_reason(["more engaging", "more engaging"])  # two alike are not enough
    assert not never_gives_reason(["", "Speaker 2 asked me questions back"])
    assert not never_gives_reason(["funnier", "knew about music", "asked questions"])


def test_filter_annotators_and_flags():
    result = filter_annotators(
        {
            "good": GOOD,
            "greeter": ["Hello! How are you doing?"] + GOOD[1:],
            # two conversations: a repeat inside the second one only
            "repeater": [GOOD, ["I love cooking pasta.", "What do you cook?", "I love cooking pasta!"]],
        },
        justifications_by_annotator={"good": ["more fun", "asked questions"], "silent": ["", ""]},
    )
    assert result == {
        "good": [],
        "greeter": [GREETING_FIRST],
        "repeater": [REPEATS_FIRST],
        "silent": [NEVER_GIVES_REASON],
    }
    annotators = [
        Annotator("good"),
        Annotator("greeter", meta={"flagged": True}),
        Annotator("silent"),
        Annotator("unknown"),
    ]
    flagged = apply_flags(annotators, result)
    assert [a.id for a in flagged] == ["greeter", "silent"]
    assert annotators[0].meta == {"filter_reasons": []}
    assert annotators[1].meta == {"flagged": True, "filter_reasons": [GREETING_FIRST]}
    apply_flags(annotators[1:2], {"greeter": []})  # a later clean pass never clears a flag
    assert annotators[1].meta["flagged"] is True
    assert annotators[2].meta == {"filter_reasons": [NEVER_GIVES_REASON], "flagged": True}
    assert annotators[3].meta == {}


def test_reasons_settled_is_final():
    """Once reasons_settled says yes, no justification added later makes never_gives_reason true
    (the protocol stops reading a settled annotator's justifications): every sequence of up to five
    texts from a vocabulary of each kind."""
    import itertools

    from dialeval.quality.filters import reasons_settled

    vocabulary = ["", None, "n/a", "ok", "more engaging", "More engaging!", "asked me questions back"]
    settled_seen = 0
    for n in range(1, 6):
        for texts in itertools.product(vocabulary, repeat=n):
            for k in range(1, n + 1):
                if reasons_settled(texts[:k]):
                    settled_seen += 1
                    assert not never_gives_reason(list(texts)), texts
    assert settled_seen > 1000
    assert not reasons_settled(["more engaging", "More engaging."])  # the same reason twice: not yet
    assert not reasons_settled(["n/a", "ok"])
    assert reasons_settled(["more engaging", "ok"])
