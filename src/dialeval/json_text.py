"""JSON text read and written through msgspec (BSD-3-Clause; a C encoder and decoder, 3-5 times
the standard library's speed on the small objects of a battle or a judgment: a million of them in
an import or a report).

The standard library stays the reference. msgspec refuses what strict JSON refuses (NaN,
Infinity, a lone surrogate, a number out of a double's range, a byte-order mark); `loads` then
hands the text to the standard library, which reads it as it always did (or raises its own
error, with line and column). Where msgspec reads a text, its values are the standard library's:
integers of any size stay integers, floats are correctly rounded, a key given twice keeps its
last value.

`dumps` writes compact UTF-8 JSON (no spaces, no \\u escapes for non-ASCII) with keys that are
not strings written as strings, as the standard library does. It differs in one value: NaN and
the infinities become null (the standard library writes NaN and Infinity, which are not JSON and
which PostgreSQL's json type refuses). A value msgspec cannot encode (a type it does not know, a
key that is neither text nor a number, a lone surrogate) goes to the standard library. msgspec
writes a set as a list and bytes as base64, where the standard library raises.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
# a key that is neither text nor a number, a lone surrogate (not UTF-8), an unknown type: the
# standard library's text (ASCII, with its escapes) or its error
_CANNOT_ENCODE = (TypeError, ValueError, OverflowError, msgspec.EncodeError)


# what msgspec raises on a text it does not read (a nesting deeper than its limit raises
# RecursionError); the standard library then reads it or says what is wrong
NOT_READ = (msgspec.DecodeError, RecursionError)


def strict_loads(text: str | bytes) -> Any:
    """The value of strict JSON `text`, as the standard library reads it; one of NOT_READ where msgspec
    refuses the text (the caller then asks the standard library, for its value or its error)."""
    return _decode(text)


def loads(text: str | bytes) -> Any:
    """`json.loads(text)`, through msgspec when it reads the text."""
    try:
        return _decode(text)
    except NOT_READ:
        return json.loads(text)


def dumps(value: Any) -> str:
    """Compact JSON text of `value` (see the module's note on NaN)."""
    try:
        return _encode(value).decode()
    except _CANNOT_ENCODE:
        return json.dumps(value, separators=(",", ":"))


def dumps_bytes(value: Any) -> bytes:
    """`dumps(value)` as UTF-8 bytes (what a hash takes)."""
    try:
        return _encode(value)
    except _CANNOT_ENCODE:
        return json.dumps(value, separators=(",", ":")).encode()
