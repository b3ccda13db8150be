"""Question presets with the papers' exact wordings (a study file may name a preset or give its own text).

Sources: ACUTE-Eval optimized questions (paper 003, Table 1; paper 000 §3.1.3), PW-Turn questions
(paper 000 §3.1.2), Direct Assessment statements (paper 002, Figure 1).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    # The choice labels; "{n}" is replaced by the side number (1 or 2).
    choice: str = "{n}"


ACUTE_QUESTIONS = {
    "preference": Question(
        "preference",
        "Who would you prefer to talk to for a long conversation?",
        "I would prefer to talk to Speaker {n}",
    ),
    "interesting": Question(
        "interesting",
        "If you had to say one of these speakers is interesting and one is "
        "boring, who would you say is more interesting?",
        "Speaker {n} is more interesting",
    ),
    "human": Question("human", "Which speaker sounds more human?", "Speaker {n} sounds more human"),
    "knowledgeable": Question(
        "knowledgeable",
        "If you had to say that one speaker is more knowledgeable and one is more ignorant, who is more knowledgeable?",
        "Speaker {n} is more knowledgeable",
    ),
}

PAIRWISE_TURN_QUESTIONS = {
    "preference": Question(
        "preference", "Which next response from your partner would you prefer in a long conversation?"
    ),
    "human": Question("human", "Which next response from your partner sounds more human?"),
    "interesting": Question(
        "interesting",
        "If you had to say one of these responses is interesting and one is "
        "boring, which would you say is more interesting?",
    ),
}

# SM-Turn asks the three qualities of every bot response; SM-Dialog asks them on a 1-5 scale at the end.
SINGLE_MODEL_TURN_QUALITIES = {
    "engaging": "Engaging: you would want to keep talking to your partner after this message",
    "humanlike": "Human-like: this message sounds like a person wrote it",
    "interesting": "Interesting: this message is interesting rather than boring",
}
SINGLE_MODEL_DIALOG_QUESTIONS = {
    "engaging": "How much would you like to talk to your partner for a long conversation?",
    "humanlike": "How much did your partner sound like a human?",
    "interesting": "How interesting was your partner?",
}

# Paper 002 Figure 1: the labels on the left are never shown to annotators, only the statements.
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

STB_FEATURES = {
    "fluency": "Which speaker's language is more fluent and grammatically correct?",
    "sensibleness": "Which speaker's responses are more sensible?",
    "specificity": "Which speaker's responses are more specific (not generic)?",
}

PRESETS = {"acute": ACUTE_QUESTIONS, "pairwise-turn": PAIRWISE_TURN_QUESTIONS}
