"""JSON through msgspec (dialeval.json_text): the standard library's values, its errors where
msgspec refuses a text, and stored values that read back as they went in."""

from __future__ import annotations

import json
import math
import random

import pytest

from dialeval import json_text
from dialeval.errors import ImportFormatError
from dialeval.formats.reading import parse_json

TEXTS = [
    '{"a": 1, "a": 2}',  # a key given twice keeps its last value
    "18446744073709551616",  # past 64 bits: stays an integer
    "-9223372036854775809",
    "1e-400",  # below the smallest double: 0.0, as float() makes it
    "-0.0",
    "0.1",
    '"\\u00e9\\ud83d\\ude00"',
    '{"x": [1.5, -0.0, 1e-5, true, null, {"y": "\u00e9"}]}',
    "  [ ]  ",
]


@pytest.mark.parametrize("text", TEXTS)
def test_loads_gives_the_standard_librarys_values(text):
    got, expected = json_text.loads(text), json.loads(text)
    assert repr(got) == repr(expected) and type(got) is type(expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[NaN]", "NaN is not a JSON value"),
        ("[1e400]", "the number 1e400 is out of range"),
        ('"\ufeff"', None),  # a BOM inside a string is text, not a mark
        ("\ufeff{}", "Unexpected UTF-8 BOM"),
        ('{"a": "x\x00y"}', "Invalid control character"),
        ("1" * 5000, "a number out of range"),
        ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
        ('"\\ud800"', None),  # a lone surrogate: the standard library reads it
    ],
)
def test_texts_msgspec_refuses_are_read_or_named_as_before(text, message):
    if message is None:
        assert parse_json(text, "f.jsonl", 3) == json.loads(text)
        return
    with pytest.raises(ImportFormatError) as caught:
        parse_json(text, "f.jsonl", 3)
    assert message in str(caught.value) and "line 3" in str(caught.value)


def test_msgspec_reads_a_text_only_where_the_standard_library_reads_the_same_value():
    # random edits of JSON texts: wherever msgspec reads one, the strict standard-library reader
    # (NaN and infinities refused, as parse_json) reads it to the same value
    def strict(text):
        def refuse(_):
            raise ValueError

        def finite(x):
            v = float(x)
            if not math.isfinite(v):
                raise ValueError
            return v

        return json.JSONDecoder(parse_constant=refuse, parse_float=finite).decode(text)

    seeds = [*TEXTS, '{"model_a": "m", "turn": 2, "x": [1.5, 1e308], "y": {"z": false}}', "[1,2,]", "01"]
    alphabet = '{}[]":,0123456789.eE+-tfnulrsa\\ \t\n'
    rng = random.Random(7)
    read = 0
    for _ in range(20_000):
        chars = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(chars) + 1)
            if rng.random() < 0.5 and chars:
                chars[min(k, len(chars) - 1)] = rng.choice(alphabet)
            else:
                chars.insert(k, rng.choice(alphabet))
        text = "".join(chars)
        try:
            got = json_text.strict_loads(text)
        except json_text.NOT_READ:
            continue
        read += 1
        assert repr(got) == repr(strict(text)), text
    assert read > 2_000  # the edits leave many texts readable


def test_dumps_writes_what_reads_back_and_falls_back_where_msgspec_cannot():
    value = {"a": [1, 2.5, None, True], "b": {"c": "\u00e9 <script>"}, "big": 2**70}
    assert json.loads(json_text.dumps(value)) == value
    assert json_text.dumps({1: 2, 1.5: 3}) == '{"1":2,"1.5":3}' == json.dumps({1: 2, 1.5: 3}, separators=(",", ":"))
    assert json_text.dumps({"x": math.nan, "y": math.inf}) == '{"x":null,"y":null}'
    assert json_text.dumps({None: 1}) == '{"null":1}'  # msgspec refuses the key; the standard library's text
    assert json_text.dumps("\ud800") == '"\\ud800"'  # a lone surrogate: escaped, as the standard library does
    with pytest.raises(TypeError):
        json_text.dumps({"x": object()})
