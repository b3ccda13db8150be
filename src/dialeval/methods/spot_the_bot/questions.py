"""Spot The Bot's feature questions (Deriu et al. 2020)."""

from __future__ import annotations

STB_FEATURES = {
    "fluency": "Which speaker's language is more fluent and grammatically correct?",
    "sensibleness": "Which speaker's responses are more sensible?",
    "specificity": "Which speaker's responses are more specific (not generic)?",
}
