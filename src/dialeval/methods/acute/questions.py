"""ACUTE-Eval's question presets: the optimized questions (Li et al. 2019, Table 1; Smith et al. 2022, §3.1.3)."""

from __future__ import annotations

from ...questions import Question

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
