"""Conversation generation: self-chat (one bot, both roles) and bot-bot (every pair of bots).

Every conversation gets a deterministic id and its own random stream derived from (seed, id), so a
rerun skips what exists and regenerates only what is missing or failed, with the same result.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..asyncrun import run_blocking
from ..bots.base import Bot, BotContext, ChatMessage
from ..errors import DialevalError
from ..records import Conversation, Turn

ENTITIES = ("entity0", "entity1")


@dataclass
class GenerationPlan:
    """What to generate. `conversations` is per bot (self-chat) or per pair (bot-bot)."""

    mode: str  # self-chat | bot-bot
    bots: Sequence[str]
    conversations: int = 10
    turns: int = 6  # per side, not counting the seed exchange
    personas: bool = True
    seed_from_corpus: bool = True
    human_conversations: int = 0
    concurrency: int = 4
    seed: int = 0

    def conversation_ids(self) -> list[tuple[str, list[str]]]:
        """(id, bots in entity order) for every conversation of the plan, bots not yet coin-flipped."""
        if self.mode == "self-chat":
            return [(f"selfchat-{b}-{k:04d}", [b, b]) for b in self.bots for k in range(self.conversations)]
        if self.mode == "bot-bot":
            if len(self.bots) < 2:
                raise DialevalError("bot-bot generation needs at least two bots")
            return [
                (f"botbot-{a}-{b}-{k:04d}", [a, b])
                for a, b in itertools.combinations(self.bots, 2)
                for k in range(self.conversations)
            ]
        raise DialevalError(f"unknown generation mode {self.mode!r}: use self-chat or bot-bot")

    def human_ids(self) -> list[str]:
        return [f"human-{k:04d}" for k in range(self.human_conversations)]


@dataclass
class GenerationResult:
    made: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # id -> why


def conversation_rng(seed: int, conversation_id: str) -> random.Random:
    # str seeds are hashed with SHA-512 by random.seed, so this is stable across processes.
    return random.Random(f"{seed}:{conversation_id}")


def _seed_turns(rng: random.Random, corpus) -> tuple[list[Turn], str | None]:
    from ..corpus import first_exchange

    conv_id, (first, second) = first_exchange(rng, corpus)
    return (
        [
            Turn(ENTITIES[0], first, is_seed=True, meta={"corpus_id": conv_id}),
            Turn(ENTITIES[1], second, is_seed=True, meta={"corpus_id": conv_id}),
        ],
        conv_id,
    )


def _history_for(turns: list[Turn], speaker: str) -> list[ChatMessage]:
    """The conversation from one side's point of view: its own turns are the assistant's."""
    return [ChatMessage(role="assistant" if t.speaker == speaker else "user", text=t.text) for t in turns]


async def chat(
    conversation_id: str,
    bots: Sequence[Bot],
    turns_per_side: int,
    rng: random.Random,
    corpus=None,
    personas: list[list[str]] | None = None,
    source: str = "bot-bot",
) -> Conversation:
    """Let two bots (or one bot twice) talk; entity0 speaks first after the seed exchange.

    A bot error stops this conversation, keeps its turns so far and records why in `error`.
    """
    turns: list[Turn] = []
    meta: dict = {"personas": personas or [[], []]}
    if corpus is not None:
        seed_turns, corpus_id = _seed_turns(rng, corpus)
        turns.extend(seed_turns)
        meta["seed_corpus_id"] = corpus_id
    conversation = Conversation(id=conversation_id, bots=[b.name for b in bots], turns=turns, source=source, meta=meta)
    for step in range(2 * turns_per_side):
        side = step % 2
        speaker, bot = ENTITIES[side], bots[side]
        context = BotContext(
            persona=(personas or [[], []])[side], conversation_id=conversation_id, seed=rng.randrange(2**31)
        )
        try:
            text = await bot.reply(_history_for(turns, speaker), context)
        except DialevalError as exc:
            conversation.error = str(exc)
            return conversation
        turns.append(Turn(speaker, text, bot=bot.name))
    return conversation


def human_conversation(conversation_id: str, rng: random.Random, corpus, turns_per_side: int) -> Conversation:
    """A human-human conversation of the corpus, cut to the same length as the bot conversations."""
    from ..corpus import random_conversation

    source = random_conversation(rng, corpus)
    texts = source.turns[: 2 * turns_per_side + 2]
    return Conversation(
        id=conversation_id,
        bots=["human", "human"],
        source="human",
        turns=[Turn(ENTITIES[i % 2], t) for i, t in enumerate(texts)],
        meta={"corpus_id": source.id},
    )


async def generate(
    plan: GenerationPlan,
    bots: dict[str, Bot],
    existing: dict[str, str | None] | None = None,
    on_done: Callable[[Conversation], None] | None = None,
    corpus=None,
) -> GenerationResult:
    """Generate the plan's conversations, skipping ids in `existing` that have no error.

    `on_done` is called with each finished conversation (failed ones too, with `error` set) as soon
    as it is ready, so the caller can store it before the next one finishes.
    """
    from .. import personas as persona_lib
    from ..corpus import load_corpus

    existing = existing or {}
    result = GenerationResult()
    if corpus is None and (plan.seed_from_corpus or plan.human_conversations):
        corpus = load_corpus()
    throttled = throttle(bots, plan.concurrency)

    async def one(conversation_id: str, pair: list[str]) -> None:
        rng = conversation_rng(plan.seed, conversation_id)
        if plan.mode == "bot-bot" and rng.random() < 0.5:  # who speaks first: a seeded coin flip
            pair = [pair[1], pair[0]]
        personas = [persona_lib.sample_persona(rng, 2), persona_lib.sample_persona(rng, 2)] if plan.personas else None
        conv = await chat(
            conversation_id,
            [throttled[pair[0]], throttled[pair[1]]],
            plan.turns,
            rng,
            corpus if plan.seed_from_corpus else None,
            personas,
            source=plan.mode,
        )
        if conv.error:
            result.failed[conversation_id] = conv.error
        else:
            result.made.append(conversation_id)
        if on_done:
            on_done(conv)

    todo = []
    for conversation_id, pair in plan.conversation_ids():
        if conversation_id in existing and existing[conversation_id] is None:
            result.skipped.append(conversation_id)
            continue
        todo.append((conversation_id, pair))
    for conversation_id in plan.human_ids():
        if conversation_id in existing and existing[conversation_id] is None:
            result.skipped.append(conversation_id)
            continue
        conv = human_conversation(conversation_id, conversation_rng(plan.seed, conversation_id), corpus, plan.turns)
        result.made.append(conversation_id)
        if on_done:
            on_done(conv)
    await _run_interleaved(todo, one, {name: _bot_limit(bot) for name, bot in bots.items()}, plan.concurrency)
    return result


def _bot_limit(bot: Bot) -> float:
    """A bot's own limit on requests in flight (OpenAI-compatible bots: max_concurrency), else none."""
    limit = getattr(getattr(bot, "options", None), "max_concurrency", None)
    return float(limit) if isinstance(limit, int) and limit > 0 else math.inf


class _Throttled(Bot):
    """A bot whose replies wait for a slot of the bot's own limit, then of the global one: a reply
    queued behind its bot's limit never holds one of the global slots."""

    def __init__(self, bot: Bot, own: asyncio.Semaphore | None, shared: asyncio.Semaphore) -> None:
        super().__init__(bot.name)
        self.bot, self.own, self.shared = bot, own, shared

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        if self.own is None:
            async with self.shared:
                return await self.bot.reply(history, context)
        async with self.own, self.shared:
            return await self.bot.reply(history, context)


def throttle(bots: dict[str, Bot], concurrency: int) -> dict[str, Bot]:
    shared = asyncio.Semaphore(max(int(concurrency), 1))
    out: dict[str, Bot] = {}
    for name, bot in bots.items():
        limit = _bot_limit(bot)
        out[name] = _Throttled(bot, None if math.isinf(limit) else asyncio.Semaphore(int(limit)), shared)
    return out


async def _run_interleaved(todo: list[tuple[str, list[str]]], run, limits: dict[str, float], concurrency: int) -> None:
    """Run the conversations with enough of them open to keep every bot's limit and the global
    limit busy: the next one to open is taken round-robin over the bot pairs, skipping pairs whose
    bot already has twice its limit open (a conversation waits on one bot at a time). Conversations
    finish (and are saved) steadily rather than all at the end."""
    lanes: dict[tuple[str, ...], collections.deque] = {}
    for item in todo:
        lanes.setdefault(tuple(dict.fromkeys(item[1])), collections.deque()).append(item)
    order = collections.deque(lanes)
    window = 2 * max(int(concurrency), 1)
    open_per_bot: collections.Counter = collections.Counter()
    running: dict[asyncio.Task, tuple[str, ...]] = {}

    def admissible(key: tuple[str, ...]) -> bool:
        return all(open_per_bot[b] < 2 * limits.get(b, math.inf) for b in key)

    while order or running:
        misses = 0  # lanes looked at in a row that could not open one more conversation
        while order and len(running) < window and misses < len(order):
            key = order[0]
            order.rotate(-1)
            if not admissible(key):
                misses += 1
                continue
            misses = 0
            item = lanes[key].popleft()
            if not lanes[key]:
                order.remove(key)
            for b in key:
                open_per_bot[b] += 1
            running[asyncio.ensure_future(run(*item))] = key
        if not running:  # nothing admissible can happen only with empty lanes
            break
        done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            for b in running.pop(task):
                open_per_bot[b] -= 1
            task.result()  # surface unexpected errors (bot errors are recorded by chat)


def study_plan(config, bots: Sequence[str] | None = None, **overrides) -> GenerationPlan:
    """The generation plan a study file asks for; `overrides` (mode, conversations, turns, personas,
    concurrency) replace the file's values when not None. Quality-control and imported bots never chat."""
    g = config.generation
    chosen = list(bots) if bots else [b.name for b in config.bots if b.type not in ("degraded", "imported")]
    values = {
        "mode": g.mode,
        "conversations": g.conversations,
        "turns": g.turns,
        "personas": g.personas,
        "concurrency": g.concurrency,
    }
    values.update({k: v for k, v in overrides.items() if v is not None})
    if values["mode"] == "none":
        raise DialevalError(
            f"study '{config.name}': generation.mode is none; set it to self-chat or bot-bot (or import logs)"
        )
    return GenerationPlan(
        bots=chosen,
        seed_from_corpus=g.seed_from_corpus,
        human_conversations=g.human_conversations,
        seed=config.seed,
        **values,
    )


def generate_study(
    opened, plan: GenerationPlan, on_done: Callable[[Conversation], None] | None = None
) -> GenerationResult:
    """Generate a study's missing conversations into its store; each is saved as soon as it is ready."""
    from ..bots.registry import build_bot

    config = opened.config
    bots = {name: build_bot(name, config.bot(name).type, config.bot(name).options) for name in plan.bots}

    def save(conversation: Conversation) -> None:
        opened.store.save_conversation(opened.id, conversation)
        if on_done:
            on_done(conversation)

    existing = opened.store.conversation_status(opened.id)
    return run_blocking(lambda: generate(plan, bots, existing=existing, on_done=save))
