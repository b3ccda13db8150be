"""PW-Turn's question presets (Smith et al. 2022, §3.1.2)."""

from __future__ import annotations

from ...questions import Question

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
