"""SM-Turn's qualities and SM-Dialog's questions (Smith et al. 2022, §3.1.2)."""

from __future__ import annotations

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
