"""Spot The Bot's feature questions (paper 001)."""

from __future__ import annotations

STB_FEATURES = {
    "fluency": "Which speaker's language is more fluent and grammatically correct?",
    "sensibleness": "Which speaker's responses are more sensible?",
    "specificity": "Which speaker's responses are more specific (not generic)?",
}
