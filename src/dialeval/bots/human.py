"""Replays human-human conversations from a corpus, for methods that mix real people's chats in.

Turn i of the conversation being built is turn i of one corpus conversation, whatever the partner
actually said: the point is to show human-written turns, as Spot The Bot mixes in human dialogues.
When the history opens like a corpus conversation (a chat seeded from the corpus), that one continues.
"""

from __future__ import annotations

import asyncio

from dialeval.bots.base import Bot, BotContext, ChatMessage, stable_seed
from dialeval.bots.options import HumanOptions
from dialeval.corpus import CorpusConversation, load_corpus
from dialeval.errors import BotError


class HumanReplayBot(Bot):
    type = "human"

    def __init__(self, name: str, options: HumanOptions) -> None:
        super().__init__(name)
        self.options = options
        self._pool: list[CorpusConversation] | None = None
        self._by_opening: dict[tuple[str, str], CorpusConversation] = {}

    def pool(self) -> list[CorpusConversation]:
        """The corpus conversations long enough to replay (at least min_turns turns)."""
        if self._pool is None:
            corpus = load_corpus(self.options.corpus_path, self.options.max_conversations)
            pool = [c for c in corpus if len(c.turns) >= self.options.min_turns]
            if not pool:
                raise BotError(
                    self.name,
                    "config",
                    f"no corpus conversation has {self.options.min_turns} turns "
                    "or more; lower min_turns or use a corpus with longer conversations",
                )
            self._by_opening = {(c.turns[0], c.turns[1]): c for c in reversed(corpus)}
            self._pool = pool
        return self._pool

    def corpus_conversation(self, seed: int | None = None, conversation_id: str | None = None) -> CorpusConversation:
        """The corpus conversation replayed for this seed and conversation id (stable across runs)."""
        pool = self.pool()
        return pool[stable_seed("human", self.options.seed, seed, conversation_id) % len(pool)]

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        context = context or BotContext()
        if self._pool is None:
            await asyncio.to_thread(self.pool)  # the first load reads a large file: keep the loop free
        conv = None
        if len(history) >= 2:
            conv = self._by_opening.get((history[0].text, history[1].text))
        if conv is None:
            conv = self.corpus_conversation(context.seed, context.conversation_id)
        position = len(history)
        if position >= len(conv.turns):
            raise BotError(
                self.name,
                "config",
                f"corpus conversation {conv.id} has only {len(conv.turns)} turns "
                f"and turn {position + 1} was asked for; raise min_turns to {position + 1} or more",
            )
        return conv.turns[position]
