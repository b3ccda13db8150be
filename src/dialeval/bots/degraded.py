"""The quality-control bot of Ji et al. (2022), §4 and Appendix A.1.

Each response is a random utterance from a random corpus dialogue (the user is ignored), whose
meaning is then distorted: a random run of r words is replaced by a run of r words taken from a
different dialogue, where r depends on the response length n. For n >= 3 the run never covers the
first or the last word.
"""

from __future__ import annotations

import asyncio
import random

from dialeval.bots.base import Bot, BotContext, ChatMessage, turn_index
from dialeval.bots.options import DegradedOptions
from dialeval.corpus import CorpusConversation, load_corpus
from dialeval.errors import BotError


def run_length(n: int) -> int:
    """r, the number of words replaced in a response of n words (Appendix A.1)."""
    if n <= 0:
        return 0
    if n <= 3:
        return 1
    if n <= 5:
        return 2
    if n <= 8:
        return 3
    if n <= 15:
        return 4
    if n <= 29:
        return 5
    return n // 5


def distort(words: list[str], donor_words: list[str], rng: random.Random) -> list[str]:
    """`words` with a random run of run_length(n) words replaced by a run from `donor_words`."""
    n = len(words)
    r = run_length(n)
    if r == 0:
        return []
    if not donor_words:
        raise ValueError("distort needs at least one donor word")
    # Keep the first and last word when n >= 3; r <= n - 2 holds for every n >= 3 in the table.
    start = rng.randint(1, n - 1 - r) if n >= 3 else rng.randint(0, n - r)
    if len(donor_words) >= r:
        d = rng.randint(0, len(donor_words) - r)
        run = donor_words[d : d + r]
    else:  # a donor shorter than r words: repeat it (the bot picks long donors, so this is rare)
        run = [donor_words[i % len(donor_words)] for i in range(r)]
    return words[:start] + run + words[start + r :]


class DegradedBot(Bot):
    type = "degraded"

    def __init__(self, name: str, options: DegradedOptions) -> None:
        super().__init__(name)
        self.options = options
        self._corpus: list[CorpusConversation] | None = None

    def corpus(self) -> list[CorpusConversation]:
        if self._corpus is None:
            corpus = load_corpus(self.options.corpus_path, self.options.max_conversations)
            if len(corpus) < 2:
                raise BotError(
                    self.name,
                    "config",
                    "the degraded bot needs a corpus of at least 2 conversations "
                    "(it takes each response and its distortion from two different ones)",
                )
            self._corpus = corpus
        return self._corpus

    def respond(self, rng: random.Random) -> str:
        corpus = self.corpus()
        source = rng.randrange(len(corpus))
        words = rng.choice(corpus[source].turns).split()
        r = run_length(len(words))
        donor = self._donor_words(rng, exclude=source, at_least=r)
        return " ".join(distort(words, donor, rng))

    def _donor_words(self, rng: random.Random, exclude: int, at_least: int) -> list[str]:
        """Words of one utterance of another dialogue, preferably long enough to give r words."""
        corpus = self.corpus()
        best: list[str] = []
        for _ in range(20):
            index = rng.randrange(len(corpus) - 1)
            index += index >= exclude  # uniform over every dialogue but the source
            words = rng.choice(corpus[index].turns).split()
            if len(words) >= at_least:
                return words
            best = max(best, words, key=len)
        return best

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        context = context or BotContext()
        if self._corpus is None:
            await asyncio.to_thread(self.corpus)  # the first load reads a large file: keep the loop free
        rng = context.rng_for("degraded", self.options.seed, turn_index(history))
        return self.respond(rng)
