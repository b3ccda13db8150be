"""A small ELIZA: keyword patterns, pronoun reflection and stock replies (our own rules).

Deterministic given the seed, the conversation id and the turn, and it avoids saying the same
thing twice in a row when another template is available.
"""

from __future__ import annotations

import re

from dialeval.bots.base import Bot, BotContext, ChatMessage, last_user_text, turn_index
from dialeval.bots.options import ElizaOptions

REFLECTIONS = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "am": "are",
    "i'm": "you are",
    "im": "you are",
    "i've": "you have",
    "i'll": "you will",
    "i'd": "you would",
    "you": "I",
    "your": "my",
    "yours": "mine",
    "yourself": "myself",
    "are": "am",
    "you're": "I am",
    "you've": "I have",
    "you'll": "I will",
    "was": "were",
    "we": "you",
    "our": "your",
}

# (pattern, templates); {0} is the reflected text captured by the pattern's first group.
RULES: list[tuple[re.Pattern[str], list[str]]] = [
    (re.compile(p, re.IGNORECASE), t)
    for p, t in [
        (
            r"^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening))\b",
            [
                "Hello! What would you like to talk about today?",
                "Hi there. How are you feeling today?",
                "Hello. What is on your mind?",
            ],
        ),
        (
            r"\bi need (.+)",
            ["Why do you need {0}?", "Would it really help you to get {0}?", "Are you sure you need {0}?"],
        ),
        (
            r"\bi (?:feel|am feeling) (.+)",
            ["Why do you feel {0}?", "How long have you felt {0}?", "Do you often feel {0}?"],
        ),
        (
            r"\bi am (.+)|\bi'm (.+)",
            ["How long have you been {0}?", "Why do you say you are {0}?", "Do you enjoy being {0}?"],
        ),
        (
            r"\bi (?:like|love|enjoy) (.+)",
            ["What do you like most about {0}?", "How did you start to like {0}?", "Tell me more about {0}."],
        ),
        (
            r"\bi (?:hate|dislike|can't stand) (.+)",
            ["What bothers you about {0}?", "Have you always disliked {0}?"],
        ),
        (
            r"\bi (?:want|would like) (.+)",
            ["What would it mean to you if you got {0}?", "Why do you want {0}?"],
        ),
        (
            r"\bare you (.+)",
            ["Why does it matter whether I am {0}?", "Would you prefer it if I were not {0}?"],
        ),
        (r"\bbecause (.+)", ["Is that the real reason?", "What other reasons come to mind?"]),
        (
            r"\b(?:mother|father|mom|dad|sister|brother|family|parents?)\b",
            ["Tell me more about your family.", "How do you get along with your family?"],
        ),
        (
            r"\b(?:work|job|boss|office)\b",
            ["How do you feel about your work?", "What is a normal day at work like for you?"],
        ),
        (
            r"\b(?:sorry|apologi[sz]e)\b",
            ["There is no need to apologise.", "What makes you feel you should apologise?"],
        ),
        (r"\b(?:yes|yeah|yep)\b", ["You seem quite sure.", "I see. Can you tell me more?"]),
        (r"\b(?:no|nope|not really)\b", ["Why not?", "You are being a bit negative."]),
        (r"(.+)\?\s*$", ["Why do you ask that?", "What do you think?", "What answer would please you most?"]),
    ]
]

FALLBACK = [
    "Please tell me more.",
    "How does that make you feel?",
    "I see. Go on.",
    "Why do you say that?",
    "That is interesting. What else?",
]


def reflect(text: str) -> str:
    words = re.findall(r"[\w']+|[^\w\s]", text.lower())
    return " ".join(REFLECTIONS.get(w, w) for w in words).strip(" .!?,")


class ElizaBot(Bot):
    type = "eliza"

    def __init__(self, name: str, options: ElizaOptions) -> None:
        super().__init__(name)
        self.options = options

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        context = context or BotContext()
        rng = context.rng_for("eliza", self.options.seed, turn_index(history))
        said = last_user_text(history)
        previous = next((m.text for m in reversed(history) if m.role == "assistant"), None)
        templates, fragment = FALLBACK, ""
        for pattern, candidates in RULES:
            match = pattern.search(said)
            if match:
                group = next((g for g in match.groups() if g), "") if match.groups() else ""
                templates, fragment = candidates, reflect(group)
                break
        options = [t.format(fragment) for t in templates]
        fresh = [o for o in options if o != previous] or options
        return rng.choice(fresh)
