"""The live chat engine shared by PW-Turn, SM-Turn/SM-Dialog, Direct Assessment and the Arena.

An annotator chats with one bot (or, in PW-Turn and the Arena, with two bots answering at once). The
engine keeps three promises:

- nothing typed is lost: the annotator's message is stored (Store.append_turn) *before* any bot is
  asked, and a bot's reply is stored as soon as it is complete;
- a bot error never ends the conversation: it is shown with a Retry button, and a retry asks the
  bot again for exactly the same history;
- a refreshed page resumes exactly where the annotator was: the page is rebuilt from the stored
  turns and the assignment's `state` (stage, pending candidates, pending checkboxes).

Bot replies come from a :class:`Generation`: an asyncio task that runs independently of the HTTP
request that started it (closing the tab does not cancel it), records its chunks, and stores the
result when every bot has answered. The page follows a generation by long-polling the ``watch``
action, which returns the chunks since a cursor as soon as there are any, so the reply appears
as it is produced (bots that stream give several chunks; the others one):

    {"event": "start", "slots": 2}
    {"event": "chunk", "slot": 0, "text": "Hel"}
    {"event": "chunk", "slot": 0, "text": "lo", "html": "<p>Hello</p>"}
    {"event": "error", "message": "Your partner could not answer; try again.", "retry": true}
    {"event": "done"}

A chunk may carry ``html``: the sanitised Markdown of that slot's whole reply so far
(bot_markdown.render_html), made at most every RENDER_EVERY_S per slot; the page shows it and, after
it, the text of the chunks since (app.js ``showBotChunk``). Rendering here, on the server, keeps one
renderer and one sanitiser for stored and streamed text alike (no Markdown library in the page),
and the throttle keeps the work and the bytes sent small for long replies.

Bots are built once per process by ``StudyContext.bot`` (bots.registry.build_bot) and reused.
:class:`LiveProtocol` holds what the live methods share: the conversation of an assignment, the
``send`` / ``reply`` / ``watch`` actions, message rate limiting (``rate_limited_actions``) and the
worker message filters when a conversation ends.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import aclosing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, ParamSpec, TypeVar, cast

from .. import clock
from ..bot_markdown import render_html
from ..bots.base import Bot, BotContext, ChatMessage
from ..errors import BotError, JudgmentError, StoreError
from ..personas import sample_persona
from ..quality import typing as input_signals
from ..records import Conversation, Turn
from ..textclean import CUT_MARKER, clean_text, cut_reply
from .base import Outcome, session_progress

if TYPE_CHECKING:
    import random
    from datetime import datetime

    from ..config import StudyConfig
    from ..store.facade import StudyStore, Transaction
    from ..store.store import Store
    from ..store.work import AnnotatorInfo, AssignmentInfo
    from .base import StudyContext

log = logging.getLogger(__name__)
P = ParamSpec("P")

# The live chats one task page has read (LiveProtocol.page_reads): render and progress each read the
# chat, two statements each, and on a chat's first page the chat was read, stored and read again.
_page_conversations: ContextVar[dict[str, Conversation] | None] = ContextVar("page_conversations", default=None)
R = TypeVar("R")

HUMAN = "human"
BOT = "bot"
MAX_MESSAGE_CHARS = 2000
WATCH_TIMEOUT_S = 20.0
# A generation that another worker process started is assumed lost after this long.
STALE_GENERATION_S = 180.0
# A streamed reply's Markdown is rendered again at most this often per slot (plus a little more for
# long replies, whose every rendering costs more).
RENDER_EVERY_S = 0.25
RENDER_EVERY_S_PER_KCHAR = 0.03


# -- conversations as the bots see them ------------------------------------------------------


def history_for(turns: Sequence[Turn]) -> list[ChatMessage]:
    """The live conversation from the bot's side: the annotator is 'user', the bot 'assistant'.

    In PW-Turn a bot turn's `text` is the chosen candidate, so both bots see the same history.
    """
    return [ChatMessage(role="user" if t.speaker == HUMAN else "assistant", text=t.text) for t in turns]


def bot_context(conversation: Conversation, seed: int) -> BotContext:
    return BotContext(
        persona=list(conversation.meta.get("bot_persona") or []), conversation_id=conversation.id, seed=seed
    )


def human_messages(conversation: Conversation, skip_fixed: bool = True) -> list[str]:
    """The annotator's own messages; the fixed opener ("Hi!") left out when `skip_fixed`."""
    return [t.text for t in conversation.turns if t.speaker == HUMAN and not (skip_fixed and t.meta.get("fixed"))]


def bot_turn_count(conversation: Conversation) -> int:
    return sum(1 for t in conversation.turns if t.speaker == BOT)


def awaiting_bot(conversation: Conversation) -> bool:
    """True when the last stored turn is the annotator's: a bot still owes an answer."""
    return bool(conversation.turns) and conversation.turns[-1].speaker == HUMAN


def clean_message(text: Any, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """An annotator's message, trimmed; JudgmentError when empty or too long."""
    if not isinstance(text, str) or not text.strip():
        raise JudgmentError("Write a message first.")
    message = text.strip()
    if len(message) > max_chars:
        raise JudgmentError(f"A message can have at most {max_chars} characters.")
    return message


def watch_timeout(value: Any) -> float:
    """The long-poll wait a `watch` asks for, in seconds: absent, null or "" = WATCH_TIMEOUT_S, a
    number (or a numeric string, as a form sends it) ≥ 0 is capped at WATCH_TIMEOUT_S; anything else
    (an object, a list, true, NaN, a negative number) is the client's error (400), never a 500.

    >>> watch_timeout(None), watch_timeout(2), watch_timeout("0.5"), watch_timeout(600)
    (20.0, 2.0, 0.5, 20.0)
    """
    if value is None or value == "":
        return WATCH_TIMEOUT_S
    number = math.nan
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            pass
    if not number >= 0:  # NaN fails too
        raise JudgmentError("timeout must be a number of seconds.")
    return min(WATCH_TIMEOUT_S, number)


def form_turn(data: dict[str, Any]) -> int:
    """The bot turn a posted rating or choice is for (0 when the form names none)."""
    try:
        return int(data.get("turn") or 0)
    except (TypeError, ValueError):
        raise JudgmentError("The form names no turn; reload the page.") from None


def persona_state(rng: random.Random) -> dict[str, list[str]]:
    """The two personas of a persona chat (PW-Turn, SM): the annotator's, and a different one the bot
    is given, drawn in that order at assignment."""
    persona = sample_persona(rng, 2)
    return {"persona": persona, "bot_persona": sample_persona(rng, 2, exclude=set(persona))}


def generating_state(state: dict[str, Any], turns: int) -> dict[str, Any]:
    """The assignment's state once bots are asked to answer a conversation of `turns` turns: when, so
    that a worker process not running the generation can tell a lost one (STALE_GENERATION_S)."""
    state = dict(state)
    state.pop("bot_error", None)
    state["generating"] = {"at": now_ts(), "turns": turns}
    return state


def now_ts() -> float:
    return clock.timestamp()


def iso_now() -> str:
    return clock.iso_now()


# -- generations: bot replies that outlive the request that asked for them -----------------------

OnComplete = Callable[[list[str]], Awaitable[None]]
# a method's own page action (LiveProtocol.page_actions): (annotator, assignment, posted form) -> outcome
PageAction = Callable[["AnnotatorInfo", "AssignmentInfo", dict[str, Any]], Outcome]


@dataclass
class Generation:
    """One round of bot replies (one slot per bot), followed by any number of watchers."""

    key: str
    slots: int
    texts: list[str] = field(default_factory=list)
    error: str | None = None
    done: bool = False
    task: asyncio.Task[None] | None = None
    log: list[dict[str, Any]] = field(default_factory=list)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def __post_init__(self) -> None:
        self.texts = [""] * self.slots

    async def emit(self, event: dict[str, Any]) -> None:
        async with self._changed:
            self.log.append(event)
            self._changed.notify_all()

    async def wait_events(
        self, cursor: int, timeout: float = WATCH_TIMEOUT_S
    ) -> tuple[list[dict[str, Any]], int, bool]:
        """Events after `cursor` (waiting up to `timeout` for the first), the new cursor, finished?"""
        async with self._changed:
            if cursor >= len(self.log) and not self.done:
                try:
                    await asyncio.wait_for(self._changed.wait(), timeout)
                except TimeoutError:
                    pass
            events = self.log[cursor:]
            return events, len(self.log), self.done


_generations: dict[str, Generation] = {}
# the latest generation of each conversation ("<scope>:<conversation id>"), so that a watch naming no
# generation finds a running one without reading the conversation to make its key
_latest: dict[str, Generation] = {}


KEEP_FINISHED_S = 60.0  # a finished generation stays readable this long, so no watcher misses a chunk


def running_generation(key: str) -> Generation | None:
    gen = _generations.get(key)
    return gen if gen is not None and not gen.done else None


def find_generation(key: str) -> Generation | None:
    """The generation of that key, running or finished less than KEEP_FINISHED_S ago."""
    return _generations.get(key)


def running_in(conversation_key: str) -> Generation | None:
    """The generation running in this process for a conversation ("<scope>:<conversation id>")."""
    gen = _latest.get(conversation_key)
    return gen if gen is not None and not gen.done else None


PARTNER_FAILED = "Your partner could not answer; try again."


@dataclass(frozen=True)
class BotFailure:
    """Why one bot of a generation gave no reply: for the server log and the admin page only. The
    worker is told only `failure_notice(slots)` of the protocol, never a bot's name, URL or error
    (in the Arena a name would end the battle's anonymity)."""

    slot: int
    bot: str
    kind: str
    reason: str


def start_generation(
    key: str,
    bots: Sequence[Bot],
    history: list[ChatMessage],
    context: BotContext,
    on_complete: OnComplete,
    on_error: Callable[[str, list[BotFailure]], Awaitable[None]] | None = None,
    max_chars: int | None = None,
    render: Callable[[str], str] | None = None,
    failure_notice: Callable[[list[int]], str] | None = None,
    on_cut: Callable[[list[tuple[str, int]]], Awaitable[None]] | None = None,
) -> tuple[Generation, bool]:
    """Ask every bot of `bots` for its reply to `history`, concurrently, in a task of its own.

    Returns (generation, started). A generation already running under `key` is returned instead of
    starting a second one (a page reloaded while the bot was typing joins it). When every bot has
    answered, `on_complete(texts)` stores the replies; when a bot fails (or anything else does) the
    generation ends with `error` set to `failure_notice(failed slots)` (a neutral sentence), the
    details are logged and passed to `on_error(notice, failures)`, and nothing is stored.
    A reply longer than `max_chars` is read no further, cut at a word boundary with CUT_MARKER
    (textclean.cut_reply), and `on_cut([(bot, chars read), ...])` records it.
    `render` (the reply so far -> sanitised HTML) adds ``html`` to some chunks (module docstring).
    """
    existing = running_generation(key)
    if existing is not None:
        return existing, False
    gen = Generation(key=key, slots=len(bots))
    _generations[key] = gen
    conversation_key = key.rsplit(":", 1)[0]
    _latest[conversation_key] = gen
    notice = failure_notice or (lambda slots: PARTNER_FAILED)
    more = [False] * len(bots)  # a reply read no further than max_chars (it went on)

    async def one(slot: int, bot: Bot) -> None:
        rendered_at = -math.inf
        # a stream left early (the limit reached, the round cancelled) is closed now: its HTTP response too
        async with aclosing(cast(AsyncGenerator[str, None], bot.stream(list(history), context))) as chunks:
            async for chunk in chunks:
                if not chunk:
                    continue
                if max_chars is not None and len(gen.texts[slot]) + len(chunk) > max_chars:
                    # enough read: keep one character over the limit (is the word at the limit whole?)
                    gen.texts[slot] += chunk[: max_chars + 1 - len(gen.texts[slot])]
                    more[slot] = True
                    await gen.emit({"event": "chunk", "slot": slot, "text": CUT_MARKER})
                    return
                gen.texts[slot] += chunk
                event = {"event": "chunk", "slot": slot, "text": chunk}
                so_far = gen.texts[slot]
                now = time.monotonic()
                wait = RENDER_EVERY_S + RENDER_EVERY_S_PER_KCHAR * len(so_far) / 1000
                if render is not None and now - rendered_at >= wait:
                    event["html"] = render(so_far)
                    rendered_at = now
                await gen.emit(event)

    async def run() -> None:
        await gen.emit({"event": "start", "slots": gen.slots})
        failures: list[BotFailure] = []
        try:
            tasks = [asyncio.ensure_future(one(i, b)) for i, b in enumerate(bots)]
            _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in pending:  # one bot failed: the round is lost, the others need not finish
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for slot, (bot, task) in enumerate(zip(bots, tasks)):
                outcome = None if task in pending else task.exception()
                if outcome is not None:
                    if not isinstance(outcome, BotError):
                        log.error("bot %s failed in generation %s", bot.name, key, exc_info=outcome)
                    kind = outcome.kind if isinstance(outcome, BotError) else "error"
                    reason = str(outcome).removeprefix(f"bot '{bot.name}' {kind}: ")
                    failures.append(BotFailure(slot, bot.name, kind, reason or type(outcome).__name__))
            if failures:
                raise _Failed()  # the round is lost; the other bots were cancelled
            # control characters out and the length bounded before a reply is stored (textclean.py)
            texts: list[str] = []
            cut: list[tuple[str, int]] = []
            for bot, raw, went_on in zip(bots, gen.texts, more):
                text, shortened = clean_text(raw), False
                if max_chars is not None:
                    text, shortened = cut_reply(text, max_chars, went_on)
                texts.append(text.strip())
                if shortened:
                    cut.append((bot.name, len(raw)))
            for slot, (bot, text) in enumerate(zip(bots, texts)):
                if not text:
                    failures.append(BotFailure(slot, bot.name, "malformed", "the reply was empty"))
            if failures:
                raise _Failed()
            if cut:
                log.warning("generation %s: replies cut at %s characters (bot, read): %s", key, max_chars, cut)
                if on_cut is not None:
                    await on_cut(cut)
            await on_complete(texts)
            await gen.emit({"event": "done"})
        except Exception as exc:  # a failing bot must never lose the conversation
            if not isinstance(exc, _Failed):
                log.exception("live generation %s failed", key)
                failures = failures or [BotFailure(-1, "-", "error", f"the reply could not be made ({exc})")]
            slots = sorted({f.slot for f in failures if f.slot >= 0})
            gen.error = notice(slots)
            for f in failures:
                log.warning("bot %r failed in live generation %s: %s: %s", f.bot, key, f.kind, f.reason)
            if on_error is not None:
                try:
                    await on_error(gen.error, failures)
                except Exception:
                    log.exception("recording the bot error of %s failed", key)
            await gen.emit({"event": "error", "message": gen.error, "retry": True})
        finally:
            async with gen._changed:
                gen.done = True
                gen._changed.notify_all()

            def forget() -> None:
                if _generations.get(key) is gen:
                    del _generations[key]
                if _latest.get(conversation_key) is gen:
                    del _latest[conversation_key]

            asyncio.get_running_loop().call_later(KEEP_FINISHED_S, forget)

    gen.task = asyncio.get_running_loop().create_task(run())
    return gen, True


class _Failed(Exception):
    """Some bot of a generation failed (its BotFailure says which and why)."""


# -- the part of a protocol shared by the live methods -----------------------------------------------


def run_in_thread(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, R]:
    return asyncio.to_thread(fn, *args, **kwargs)


class LiveProtocol:
    """Mixin for protocols.base.Protocol subclasses whose units are live chats.

    Subclasses implement:
      - ``chat_bots(assignment, state) -> list[str]``: the bot(s) that answer now, in shown order;
      - ``can_send(conversation, state) -> str | None``: why the annotator may not write now, or None;
      - ``store_replies(annotator, assignment, conversation, bots, texts)``: keep the replies
        (append the bot turn, or hold PW-Turn candidates in the state);
      - ``page_actions() -> {action: handler}``: the method's own form actions (run after the
        shared ``send`` / ``reply`` / ``watch``), each in a worker thread.
    A conversation's id is ``live-<assignment id>`` (``current_conversation_id``; Direct Assessment,
    with several chats per assignment, adds ``-<k>``), its meta names the annotator.
    """

    rate_limited_actions: ClassVar[frozenset[str]] = frozenset({"send", "reply"})
    fixed_opener: ClassVar[bool] = True  # PW-Turn and SM start with options.first_message

    if TYPE_CHECKING:  # for the type checker only: what protocols.base.Protocol and the subclass provide
        study: StudyContext

        @property
        def store(self) -> Store: ...
        @property
        def db(self) -> StudyStore: ...
        @property
        def config(self) -> StudyConfig: ...
        @property
        def options(self) -> Any: ...
        def save_state(self, assignment: AssignmentInfo, state: dict[str, Any]) -> None: ...
        def expiry(self) -> datetime: ...
        def check_live_messages(self, annotator_id: int) -> list[str]: ...
        def chat_bots(self, assignment: AssignmentInfo, state: dict[str, Any]) -> list[str]: ...
        def can_send(self, conv: Conversation, state: dict[str, Any]) -> str | None: ...
        def store_replies(
            self,
            annotator: AnnotatorInfo,
            assignment: AssignmentInfo,
            conv: Conversation,
            state: dict[str, Any],
            names: list[str],
            texts: list[str],
        ) -> None: ...
        def finish(self, assignment: AssignmentInfo, state: dict[str, Any] | None = None) -> None: ...

        method: ClassVar[str]

    # -- conversations --------------------------------------------------------------------------
    def current_conversation_id(self, assignment: AssignmentInfo, state: dict[str, Any]) -> str:
        return f"live-{assignment.id}"

    def fresh_state(self, assignment: AssignmentInfo) -> dict[str, Any]:

        fresh = self.db.get_assignment(assignment.id)
        state = dict(fresh.state) if fresh is not None else dict(assignment.state)
        assignment.state = state
        return state

    @contextmanager
    def page_reads(self) -> Iterator[None]:
        """Inside, a live chat is read from the store once (load_conversation): render and progress
        of one task page see the same chat, at most milliseconds apart in one thread."""
        token = _page_conversations.set({})
        try:
            yield
        finally:
            _page_conversations.reset(token)

    def load_conversation(self, conversation_id: str) -> Conversation | None:
        page = _page_conversations.get()
        if page is not None and conversation_id in page:
            return page[conversation_id]
        try:
            conversation = self.db.get_conversation(conversation_id)
        except StoreError:
            return None
        if page is not None:
            page[conversation_id] = conversation
        return conversation

    def create_conversation(
        self, conversation_id: str, annotator: AnnotatorInfo, bots: list[str], meta: dict[str, Any]
    ) -> Conversation:
        """The live conversation, made on first use (with the fixed opener when the method has one).
        Made: one insert that keeps a chat another request stored first, and no read back."""
        existing = self.load_conversation(conversation_id)
        if existing is not None:
            return existing
        made = self.unsaved_conversation(conversation_id, annotator, bots, meta)
        if not self.db.add_conversation(made):
            return self.load_conversation(conversation_id) or made  # another tab's request made it
        page = _page_conversations.get()
        if page is not None:
            page[conversation_id] = made
        return made

    def new_conversation(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, state: dict[str, Any]
    ) -> Conversation | None:
        """The conversation the annotator's first message starts, not stored yet: it is stored with
        that message (one commit). None (the default): the conversation is made before anyone writes."""
        return None

    def unsaved_conversation(
        self, conversation_id: str, annotator: AnnotatorInfo, bots: list[str], meta: dict[str, Any]
    ) -> Conversation:
        """The live conversation as create_conversation stores it (not stored here)."""
        turns = []
        if self.fixed_opener:
            turns.append(Turn(HUMAN, self.options.first_message, meta={"fixed": True}))
        conv = Conversation(
            id=conversation_id,
            bots=list(bots),
            turns=turns,
            source="live",
            meta={"annotator_id": annotator.id, "annotator": annotator.external_id, "started_at": iso_now(), **meta},
        )
        return conv

    def persona_conversation(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, state: dict[str, Any], bots: list[str], **meta: Any
    ) -> Conversation:
        """The assignment's chat in a persona setting (PW-Turn, SM): the personas drawn at assignment
        (persona_state) are kept in the conversation's meta, with the method, `meta` and the unit."""
        return self.create_conversation(
            self.current_conversation_id(assignment, state),
            annotator,
            bots,
            {
                "method": self.method,
                **meta,
                "persona": state.get("persona", []),
                "bot_persona": state.get("bot_persona", []),
                "unit": assignment.unit_external_id,
            },
        )

    def append_turn(
        self,
        conversation: Conversation,
        turn: Turn,
        at: int | None = None,
        also: Callable[[Transaction], None] | None = None,
        create: bool = False,
    ) -> int | None:
        """Store `turn` at the end of the conversation (with `at`: only if it has exactly `at` turns,
        so a turn two requests both add is added once; None when it was not added). `also(session)`
        writes what goes with the turn in the same transaction (Store.append_turn); with `create`,
        the conversation itself is stored first when it is not yet (new_conversation)."""
        idx = self.db.append_turn(conversation.id, turn, at=at, also=also, create=conversation if create else None)
        if idx is not None:
            conversation.turns.append(turn)
        return idx

    def saving_state(self, assignment: AssignmentInfo, state: dict[str, Any]) -> Callable[[Transaction], None]:
        """save_state as a part of another write's transaction (append_turn's `also`)."""
        expires_at = self.expiry()

        def save(session: Transaction) -> None:
            self.db.update_state(assignment.id, state, expires_at=expires_at, session=session)
            assignment.state = state

        return save

    def generation_key(self, conversation: Conversation) -> str:
        return f"{self.generation_scope()}:{conversation.id}:{len(conversation.turns)}"

    @cached_property
    def _generation_scope(self) -> str:
        folder = str(Path(self.study.folder).resolve())
        return f"{hashlib.sha256(folder.encode('utf-8')).hexdigest()[:12]}-{self.study.study_id}"

    def generation_scope(self) -> str:
        """What keeps the generations of this study apart from every other study's in the process.

        The study's database id is not enough: each study folder has its own SQLite file, so every
        study served by one process (the demo serves all its methods) is study 1 there, and its first
        live chat is "live-1" in each: an annotator of one study joined the other's running
        generation. A digest of the study folder (the same for every worker of a host, and not
        the path itself, which the page must not see) tells them apart.
        """
        return self._generation_scope

    # -- actions shared by the live methods --------------------------------------------------------
    async def act_send(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]
    ) -> dict[str, Any]:
        """Store the annotator's message, then ask the bot(s). Idempotent per request_id."""
        text = clean_message(data.get("text"), self.config.limits.message_chars)
        request_id = data.get("request_id")
        state = await run_in_thread(self.fresh_state, assignment)
        conv = await run_in_thread(self.load_conversation, self.current_conversation_id(assignment, state))
        first = conv is None  # a conversation the first message starts (new_conversation)
        if conv is None:
            conv = self.new_conversation(annotator, assignment, state)
        if conv is None:
            raise JudgmentError("The conversation has not started yet; reload the page.")
        if any(t.speaker == HUMAN and t.meta.get("request_id") == request_id for t in conv.turns):
            return await self.act_reply(annotator, assignment, data)  # a repeated send: follow its reply
        why_not = self.can_send(conv, state)
        if why_not:
            raise JudgmentError(why_not)
        turn = Turn(HUMAN, text, meta={"request_id": request_id, "at": iso_now()})
        signals = input_signals.current()
        if signals is not None:  # how the message was entered (quality/typing.py): counts only
            turn.meta["input"] = signals
        # stored before any bot is asked, with the state saying a generation is under way (one commit)
        state = generating_state(state, len(conv.turns) + 1)
        await run_in_thread(self.append_turn, conv, turn, None, self.saving_state(assignment, state), first)
        return await self._start(annotator, assignment, conv, state, state_saved=True)

    async def act_reply(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]
    ) -> dict[str, Any]:
        """Ask the bot(s) for the stored history: the first answer after a page load, or a Retry."""
        state = await run_in_thread(self.fresh_state, assignment)
        conv = await run_in_thread(self.load_conversation, self.current_conversation_id(assignment, state))
        if conv is None or not awaiting_bot(conv) or self.replies_pending(state):
            return {"finished": True}
        return await self._start(annotator, assignment, conv, state)

    async def act_watch(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]
    ) -> dict[str, Any]:
        """Long-poll: the events of the running generation after `cursor`."""
        timeout = watch_timeout(data.get("timeout"))
        try:
            cursor = max(0, int(data.get("cursor") or 0))
        except (TypeError, ValueError):
            cursor = 0
        # A generation of this conversation that this process runs is followed from memory: each
        # chunk's watch reads nothing from the database (the assignment's own state, read with the
        # request, names the conversation).
        conversation_key = f"{self.generation_scope()}:{self.current_conversation_id(assignment, assignment.state)}"
        key = data.get("generation")
        named = isinstance(key, str) and key.startswith(f"{conversation_key}:")
        gen = find_generation(key) if named and isinstance(key, str) else running_in(conversation_key)
        if gen is not None:
            events, cursor, finished = await gen.wait_events(cursor, timeout)
            return {"events": events, "cursor": cursor, "finished": finished}
        state = await run_in_thread(self.fresh_state, assignment)
        conv = await run_in_thread(self.load_conversation, self.current_conversation_id(assignment, state))
        if conv is None:
            return {"events": [], "cursor": 0, "finished": True}
        if not (isinstance(key, str) and key.startswith(f"{self.generation_scope()}:{conv.id}:")):
            key = self.generation_key(conv)
        gen = find_generation(key)
        if gen is not None:
            events, cursor, finished = await gen.wait_events(cursor, timeout)
            return {"events": events, "cursor": cursor, "finished": finished}
        # Not running here: finished (stored), failed (error in the state), or run by another worker.
        if not awaiting_bot(conv) or self.replies_pending(state):
            return {"events": [{"event": "done"}], "cursor": cursor, "finished": True}
        error = state.get("bot_error")
        if error and error.get("turns") == len(conv.turns):
            return {
                "events": [{"event": "error", "message": self.stored_notice(error), "retry": True}],
                "cursor": cursor,
                "finished": True,
            }
        started = (state.get("generating") or {}).get("at", 0)
        if now_ts() - started > STALE_GENERATION_S:
            return {"events": [{"event": "idle"}], "cursor": cursor, "finished": True}
        await asyncio.sleep(0.5)
        return {"events": [], "cursor": cursor, "finished": False}

    async def event_stream(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, generation: str | None, cursor: int
    ) -> AsyncIterator[tuple[dict[str, Any] | None, int]]:
        """The events of a generation after `cursor`, as they happen: (event, new cursor) pairs.

        Server-Sent Events read this (web/routes_live.py ``/events``): a chunk reaches the page as soon as
        the bot produced it. Ends after "done" or "error"; yields (None, cursor) as a keep-alive.
        """
        while True:
            data = {"generation": generation or "", "cursor": str(cursor), "timeout": "15"}
            res = await self.act_watch(annotator, assignment, data)
            for i, event in enumerate(res["events"]):
                yield event, cursor + i + 1  # each event's id: a reconnect resumes right after it
            cursor = res["cursor"]
            if res["finished"]:
                if not any(e.get("event") in ("done", "error", "idle") for e in res["events"]):
                    yield {"event": "done"}, cursor
                return
            if not res["events"]:
                yield None, cursor

    def generation_bots(self, conv: Conversation, names: list[str]) -> tuple[list[Bot], list[ChatMessage]]:
        """The bots of a generation (one per slot) and the history they answer: by default every
        bot answers the stored conversation (the Arena gives each side a history of its own)."""
        return [self.study.bot(n) for n in names], history_for(conv.turns)

    async def _start(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        conv: Conversation,
        state: dict[str, Any],
        state_saved: bool = False,
    ) -> dict[str, Any]:
        names = self.chat_bots(assignment, state)
        bots, history = self.generation_bots(conv, names)
        key = self.generation_key(conv)
        context = bot_context(conv, self.config.seed)
        snapshot = Conversation(
            id=conv.id, bots=conv.bots, turns=list(conv.turns), source=conv.source, meta=dict(conv.meta)
        )

        async def on_complete(texts: list[str]) -> None:
            await run_in_thread(self._complete, annotator, assignment, snapshot, names, texts)

        async def on_error(notice: str, failures: list[BotFailure]) -> None:
            await run_in_thread(self._failed, annotator, assignment, snapshot, names, notice, failures)

        async def on_cut(cut: list[tuple[str, int]]) -> None:
            await run_in_thread(self._cut, annotator, snapshot, cut)

        if running_generation(key) is None and not state_saved:
            await run_in_thread(self.save_state, assignment, generating_state(state, len(conv.turns)))
        gen, started = start_generation(
            key,
            bots,
            history,
            context,
            on_complete,
            on_error,
            max_chars=self.config.limits.bot_reply_chars,
            render=render_html if self.config.pages.markdown else None,
            failure_notice=self.failure_notice,
            on_cut=on_cut,
        )
        return {"started": started, "slots": gen.slots, "cursor": 0, "generation": key}

    def _complete(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        conv: Conversation,
        names: list[str],
        texts: list[str],
    ) -> None:
        state = self.fresh_state(assignment)
        current = self.load_conversation(conv.id)
        if current is None or len(current.turns) != len(conv.turns):
            return  # answered meanwhile (another worker); keep what is stored
        state.pop("generating", None)
        state.pop("bot_error", None)
        self.store_replies(annotator, assignment, current, state, names, texts)

    def failure_notice(self, slots: list[int]) -> str:
        """What the worker reads when bots of these slots could not answer: neutral, never a bot's
        name, URL or error (the Arena names its side)."""
        return PARTNER_FAILED

    def _failed(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        conv: Conversation,
        names: list[str],
        notice: str,
        failures: list[BotFailure],
    ) -> None:
        state = self.fresh_state(assignment)
        state.pop("generating", None)
        state["bot_error"] = {"notice": notice, "turns": len(conv.turns), "at": iso_now()}
        self.save_state(assignment, state)
        for f in failures:  # one event per failing bot: the admin page counts them per bot, with the reason
            self.db.log_event(
                "bot-error",
                {"conversation": conv.id, "bot": f.bot, "kind": f.kind, "reason": f.reason, "turns": len(conv.turns)},
                annotator_id=annotator.id,
            )

    def _cut(self, annotator: AnnotatorInfo, conv: Conversation, cut: list[tuple[str, int]]) -> None:
        for bot, chars in cut:
            self.db.log_event(
                "bot-reply-cut",
                {"conversation": conv.id, "bot": bot, "read_chars": chars, "limit": self.config.limits.bot_reply_chars},
                annotator_id=annotator.id,
            )

    def replies_pending(self, state: dict[str, Any]) -> bool:
        """True when replies were made and wait for the annotator (PW-Turn candidates)."""
        return False

    # -- page pieces ----------------------------------------------------------------------------------
    def chat_error(self, conv: Conversation | None, state: dict[str, Any]) -> str | None:
        error = state.get("bot_error")
        if conv is not None and error and error.get("turns") == len(conv.turns) and awaiting_bot(conv):
            return self.stored_notice(error)
        return None

    def stored_notice(self, error: dict[str, Any]) -> str:
        # an error stored before notices existed held the bot's own message: never shown
        return str(error.get("notice") or self.failure_notice([]))

    def finish_live(self, annotator: AnnotatorInfo, conversation: Conversation) -> list[str]:
        """The conversation is over: record when, and run the worker message filters."""
        self.db.log_event(
            "live-conversation-ended",
            {"conversation": conversation.id, "turns": len(conversation.turns)},
            annotator_id=annotator.id,
        )
        return self.check_live_messages(annotator.id)

    def complete_chat(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, conversation: Conversation, state: dict[str, Any]
    ) -> Outcome:
        """The annotator has done all the conversation asks: end it and submit the assignment."""
        self.finish_live(annotator, conversation)
        self.finish(assignment, {**state, "ended": "complete"})
        return Outcome(done=True)

    def chat_position(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, kind: str, total: int, turns: int
    ) -> ChatPosition:
        """Where the annotator is in a session of `total` chats of `turns` bot turns (units of `kind`)."""
        conv = self.load_conversation(self.current_conversation_id(assignment, assignment.state))
        done = bot_turn_count(conv) if conv else 0
        k = min(self.db.submitted_count(annotator.id, kind) + 1, total)
        return ChatPosition(conv, done, k, total, turns)

    def page_actions(self) -> dict[str, PageAction]:
        """The method's own actions besides the live ones, each run in a worker thread."""
        return {}

    async def act(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]
    ) -> Outcome:
        outcome = await self.live_act(annotator, assignment, action, data)
        if outcome is not None:
            return outcome
        handler = self.page_actions().get(action)
        if handler is None:
            raise JudgmentError(f"unknown action '{action}'")
        return await run_in_thread(handler, annotator, assignment, data)

    async def live_act(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]
    ) -> Outcome | None:
        """Dispatch the shared live actions; None when `action` is not one of them."""
        if action == "send":
            return Outcome(data=await self.act_send(annotator, assignment, data))
        if action == "reply":
            return Outcome(data=await self.act_reply(annotator, assignment, data))
        if action == "watch":
            return Outcome(data=await self.act_watch(annotator, assignment, data))
        return None


@dataclass(frozen=True)
class ChatPosition:
    """Where an annotator is in a session of live chats, for the progress header."""

    conversation: Conversation | None
    done: int  # bot turns of the current chat so far
    k: int  # the current chat's number in the session, from 1
    total: int  # chats in the session
    turns: int  # bot turns per chat

    @property
    def left(self) -> int:
        """Bot turns still to come in the session."""
        return (self.turns - self.done) + (self.total - self.k) * self.turns

    def progress(self, detail: str, minutes_left: float, noun: str = "Conversation") -> dict[str, Any]:
        return session_progress(
            f"{noun} {self.k} of {self.total}",
            (self.k - 1) * self.turns + self.done,
            self.total * self.turns,
            detail=detail,
            minutes_left=minutes_left,
        )


def elapsed_since(state: dict[str, Any], key: str = "shown_at") -> float | None:
    t = state.get(key)
    return round(now_ts() - float(t), 3) if t else None


MAX_PAGE_ELAPSED_MS = 6 * 3600 * 1000  # longer than any step: a page left open overnight is not work time


def page_elapsed(data: dict[str, Any], state: dict[str, Any] | None = None, key: str = "shown_at") -> float | None:
    """Seconds the annotator spent on this step, as the page measured it (`elapsed_ms`: from the moment
    the form was shown to its submit, as the ACUTE and Spot The Bot pages send); else the server's
    clock since the step was shown. The page's measure leaves out network and bot latency, and it is
    what a simulated annotator reports instead of sleeping."""
    raw = data.get("elapsed_ms")
    try:
        ms = float(raw) if raw is not None and raw != "" else None
    except (TypeError, ValueError):
        ms = None
    if ms is not None and 0 <= ms <= MAX_PAGE_ELAPSED_MS:
        return round(ms / 1000.0, 3)
    return elapsed_since(state or {}, key)
