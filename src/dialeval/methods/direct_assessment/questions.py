"""Direct Assessment's statements and scale (Ji et al. 2022, Figure 1)."""

from __future__ import annotations

# Ji et al. 2022, Figure 1: the labels on the left are never shown to annotators, only the statements.
DA_STATEMENTS = {
    "robotic": "It was obvious that I was talking to a chatbot as opposed to another human user.",
    "interesting": "The conversation with the chatbot was interesting.",
    "fun": "The conversation with the chatbot was fun/enjoyable.",
    "consistent": "The chatbot was consistent throughout the conversation.",
    "fluent": "The chatbot's English was fluent and natural throughout the conversation.",
    "repetitive": "I felt that the chatbot kept being repetitive during the conversation.",
    "topic": "The chatbot stays on topic.",
}
DA_SCALE_LABELS = ("strongly disagree", "strongly agree")
