"""Unit tests of the text hygiene helpers (the HTTP and CLI paths are in tests/web/test_integrity.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from dialeval.errors import ImportFormatError
from dialeval.formats.tidy import neutralise_formula, neutralise_formulas
from dialeval.textclean import clean_imported, clean_text, clean_value, set_import_text_limit


def test_clean_text_keeps_tabs_and_newlines_only():
    assert clean_text("a\x00b\x07c\td\r\ne\rf\x1b[31m\x85\ud800") == "abc\td\ne\nf[31m"
    assert clean_value({"k\x00": ["x\x00", 3, None]}) == {"k": ["x", 3, None]}


def test_imported_text_over_the_limit_names_line_and_field():
    set_import_text_limit(5)
    try:
        with pytest.raises(ImportFormatError, match=r"f.jsonl, line 7, field 'dialog\[0\].text'"):
            clean_imported({"dialog": [{"text": "123456"}]}, "f.jsonl", 7)
        assert clean_imported({"dialog": [{"text": "1\x0023"}]}, "f.jsonl", 7) == {"dialog": [{"text": "123"}]}
    finally:
        set_import_text_limit(None)


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-cmd", "@SUM(A1)", "\tx", "\rx"])
def test_formula_prefixes_are_neutralised(cell):
    assert neutralise_formula(cell) == "'" + cell


def test_numbers_and_plain_text_are_left_alone():
    frame = pd.DataFrame({"n": [-1.5, 2.0], "t": ["fine", "=2"]})
    out = neutralise_formulas(frame)
    assert out["n"].tolist() == [-1.5, 2.0] and out["t"].tolist() == ["fine", "'=2"]
