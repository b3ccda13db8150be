"""The framework every evaluation method plugs into: one `Protocol` subclass per method.

A method's pages are a subclass of :class:`Protocol` that its `Method` names
(``protocol="dialeval.methods.acute.protocol:AcuteProtocol"``, docs/methods.md);
``protocols.get_protocol`` imports it lazily by method id. Its annotator page is one Jinja template
in the method's ``templates/`` folder (``template = "acute.html"``) that ``{% extends "base.html" %}``.

How the web app drives a protocol (web/routes_annotator.py; the app itself never writes SQL)
-------------------------------------------------------------------------------------------
1. Entry, consent and instructions are the framework's. Then ``GET /s/<slug>/task``:
   - the framework finds the annotator's unfinished assignment (``work.resume_assignment``: an
     open one, or their expired one when nobody took its unit since), else calls
     ``protocol.assign(annotator)``, which picks a unit under ``store.locked(study_id)`` with the
     helpers of ``scheduling/assign.py`` and returns an :class:`AssignmentInfo` (or None: no
     more work for this annotator -> the done page). The done page gives the completion code /
     Prolific redirect / MTurk submit only when ``protocol.completion(annotator, ...)`` says the
     session is complete: ``session_quota()`` submitted assignments of ``work_kinds``, or some work
     and nothing more for them; otherwise it sends them back to the task or says nothing is left.
   - it renders ``protocol.template`` with ``protocol.render(annotator, assignment)`` merged into
     the framework context below.
2. Every form or fetch() of the page posts to ``POST /s/<slug>/a/<assignment_id>/<action>``
   (``action_url(action)`` in the template). Before the protocol sees anything the framework:
   checks the signed identity cookie, the CSRF token (form field ``csrf`` or header
   ``X-CSRF-Token``), the Origin header, that the assignment belongs to this annotator (403
   otherwise) and that it is still open (409 otherwise, except a repeated ``request_id``
   which answers OK again: double submits are harmless), and applies the rate limiter to the
   actions listed in ``rate_limited_actions``. Then it calls
   ``protocol.act(annotator, assignment, action, data)`` where ``data`` is the parsed form
   (or JSON body) as a plain dict: str values (lists for repeated keys), including
   ``data["request_id"]`` (the client's per-form id, always present, <= 100 chars).
3. ``act`` returns an :class:`Outcome`. A browser form post (no ``Accept: application/json``)
   is then redirected (303) to ``Outcome.redirect`` or to the task page; a fetch() gets JSON
   ``{"ok": true, "done": ..., "redirect": ..., **Outcome.data}``; with ``inline_next_page`` and
   the page's ``X-Dialeval-Next-Page: inline`` header, also ``"page"``: the next task page's HTML
   when the redirect is the task page (app.js swaps its header and ``<main>`` in).
   To refuse input raise ``JudgmentError("message for the annotator")`` (-> 400 JSON/HTML);
   ``DialevalError`` -> 400 too. A judgment must be committed inside ``act`` before it returns.

``prepare``, ``assign``, ``render`` and ``act`` may be plain functions (run in a worker thread,
so blocking database calls are fine) or ``async def`` (awaited on the event loop: use it for bot
calls; wrap long blocking database work in ``await anyio.to_thread.run_sync(...)``).

Template context given to every task page (besides what ``render`` returns):
    study        StudyContext (study.config.pages.title, study.slug, study.method ...)
    annotator    AnnotatorInfo
    assignment   AssignmentInfo
    csrf         the CSRF token: put ``<input type="hidden" name="csrf" value="{{ csrf }}">``
                 in each form (base.html also has ``<meta name="csrf-token">`` for fetch()).
    action_url   function: action_url("submit") -> "/s/<slug>/a/<assignment id>/submit"
    new_request_id  function returning a fresh uuid for ``<input type="hidden" name="request_id">``
    progress     ``protocol.progress(annotator, assignment)``: ``session_progress(...)`` (label, detail,
                 done/total for the bar, minutes_left) for the sticky header, or None
    show_howto   True: the header's "How to" button opens the instructions in a dialog
static/app.js (ours) posts every ``<form data-ajax>`` with fetch, shows a refused input's message
in the form's ``[data-error]`` element (textContent, never innerHTML) and follows ``redirect``.
It also exposes ``window.dialeval.post(url, dataObject) -> Promise<json>`` (adds csrf and a
request_id) and ``window.dialeval.appendText(parent, tag, className, text)`` for live chat pages.

Stateless workers: a protocol instance is made per study per process and must keep no
annotator state in memory; progress lives in ``assignments.state`` (``work.update_state``) so a
refreshed page resumes where it was.

Quality control hooks
    ``self.flag(annotator_id, reasons, block=False)`` records a failed check (never deletes).
    ``self.check_live_messages(annotator_id)`` runs quality/filters.py on all the annotator's
    own messages (speaker "human", seed and fixed first message excluded) of live conversations
    whose ``meta["annotator_id"]`` is theirs; call it when a live conversation finishes.
    ``self.check_justifications(annotator_id)`` applies "never gives a reason".
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Awaitable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from .. import clock
from ..config import StudyConfig
from ..errors import JudgmentError
from ..quality import typing as input_signals
from ..store import work
from ..store.facade import StudyStore

# re-exported (`as` makes it explicit): what the hooks are given
from ..store.work import AnnotatorInfo as AnnotatorInfo
from ..store.work import AssignmentInfo as AssignmentInfo
from ..store.work import UnitInfo as UnitInfo

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..store.facade import Transaction
    from ..store.store import Store

# The options model of a method (a pydantic model, e.g. AcuteOptions): `class AcuteProtocol(Protocol[AcuteOptions])`
# makes `self.options` an AcuteOptions for the type checker.
OptionsT = TypeVar("OptionsT", bound="BaseModel")


@dataclass
class Outcome:
    """What `act` answers. `done`: the assignment is finished (the framework goes to the next task)."""

    done: bool = False
    data: dict[str, Any] = field(default_factory=dict)  # extra JSON for fetch() callers
    redirect: str | None = None  # where a browser form post goes next (default: the task page)


def session_progress(
    label: str, done: float, total: float, *, detail: str | None = None, minutes_left: float | None = None
) -> dict[str, Any]:
    """What the sticky header shows: where the annotator is in the whole session.

    `label` names the big step ("Comparison 3 of 10"), `detail` the small one ("response 2 of 6"),
    `done`/`total` fill the bar, `minutes_left` is a rough estimate (rounded up, at least 1).
    """
    out: dict[str, Any] = {"label": label, "done": done, "total": max(total, 1), "detail": detail}
    if minutes_left is not None:
        out["minutes_left"] = max(1, int(-(-minutes_left // 1)))
    return out


def submitted_count(store: Any, study_id: int, annotator_id: int, kind: str) -> int:
    """How many units of this kind the annotator has finished in this study."""
    return work.submitted_count(store, study_id, annotator_id, kind)


@dataclass
class Completion:
    """Where an annotator stands against the method's definition of a complete session.

    state: "complete" (the quota is done, or some work is done and nothing more is left for them),
    "incomplete" (work is waiting for them), "nothing-left" (no work done and none left: no code),
    "failed" (blocked, e.g. the practice failed)."""

    state: str
    done: int
    quota: int
    reason: str = ""


@dataclass
class AdminSummary:
    """What the admin page shows for a method: progress rows and live headline numbers."""

    progress: list[dict[str, Any]] = field(default_factory=list)  # e.g. {"pair": "a vs b", "done": 3, "target": 50}
    headline: list[dict[str, Any]] = field(default_factory=list)  # e.g. {"label": "a beats b", "value": "62% (n=13)"}
    notes: list[str] = field(default_factory=list)
    # pairwise methods: annotator row id -> {"e_value", "flagged"} of the voter screen
    voters: dict[int, dict[str, Any]] = field(default_factory=dict)


class StudyContext:
    """One served study: folder, validated config, store, database id, URL slug."""

    def __init__(self, folder: Path, config: StudyConfig, store: Store, study_id: int, slug: str):
        self.folder = folder
        self.config = config
        self.store = store
        self.study_id = study_id
        self.slug = slug
        self._bots: dict[str, Any] = {}

    @cached_property
    def db(self) -> StudyStore:
        """The store as this study's pages see it (one typed facade: store/facade.py)."""
        return StudyStore(self.store, self.study_id)

    @property
    def method(self) -> str:
        return self.config.method

    @property
    def options(self) -> Any:
        """The method's options (AcuteOptions, SpotTheBotOptions, ...)."""
        return self.config.options

    @property
    def title(self) -> str:
        return self.config.pages.title or self.config.name

    def url(self, path: str = "") -> str:
        return f"/s/{self.slug}/{path.lstrip('/')}"

    def seeded_rng(self, *parts: object) -> random.Random:
        """Reproducible randomness (study seed + parts), e.g. for building units."""
        return random.Random(":".join([str(self.config.seed), *map(str, parts)]))

    @staticmethod
    def fresh_rng() -> random.Random:
        """Unpredictable randomness, e.g. the left/right order of one assignment (it is stored)."""
        return random.Random(secrets.randbits(64))

    def bot(self, name: str) -> Any:
        """The study's bot of that name (built once per process; see bots.registry.build_bot)."""
        if name not in self._bots:
            from ..bots.registry import build_bot

            cfg = self.config.bot(name)
            self._bots[name] = build_bot(cfg.name, cfg.type, cfg.options)
        return self._bots[name]


class Protocol(Generic[OptionsT]):
    """Base class of a method. Subclasses set the class attributes and override the hooks; they name
    their options model as the type argument (``class AcuteProtocol(Protocol[AcuteOptions])``)."""

    method: ClassVar[str] = ""  # "acute", "pairwise-turn", ... (StudyConfig.method)
    # Worker filters (quality/filters.py) this method does not apply to live messages.
    skipped_message_checks: ClassVar[tuple[str, ...]] = ()
    template: ClassVar[str] = ""  # Jinja template of the task page
    title: ClassVar[str] = ""  # human name shown on the start page
    rate_limited_actions: ClassVar[frozenset[str]] = frozenset()  # e.g. {"send"} for chat messages
    # The answer's reply carries the next task page and app.js swaps its <main> in (no second
    # request). Only for a task template with no script of its own: a swapped page runs none.
    inline_next_page: ClassVar[bool] = False
    # The unit kind whose submitted assignments the task page counts (its progress header,
    # `self.db.submitted_count(annotator.id, kind)`): the task page's session read counts them in
    # the same statement, so the count costs no statement of its own. None: the page counts none.
    progress_kind: ClassVar[str | None] = None
    # What a complete session is: `session_quota()` submitted assignments of these unit kinds
    # (practice excluded), or fewer when the pool holds nothing more for this annotator.
    work_kinds: ClassVar[tuple[str, ...]] = ()

    def __init__(self, study: StudyContext):
        self.study = study
        # annotators whose justifications already show a real reason that no later one can undo
        # (quality.filters.reasons_settled): never_justifies reads theirs no more (per process)
        self._gave_reasons: set[int] = set()

    # shortcuts
    @property
    def store(self) -> Store:
        """The plain Store, for the framework's helpers that take one (protocols/scheduling.py)."""
        return self.study.store

    @property
    def db(self) -> StudyStore:
        """The study's store: every read and write a method's pages make (store/facade.py)."""
        return self.study.db

    @property
    def config(self) -> StudyConfig:
        return self.study.config

    @property
    def options(self) -> OptionsT:
        """The study file's `protocol:` block, validated by the method's options model."""
        return cast(OptionsT, self.study.options)

    # -- hooks ------------------------------------------------------------------------------------
    def prepare(self) -> int | Awaitable[int]:
        """Build the units from what is stored (idempotent; run before serving). Returns units added."""
        return 0

    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None | Awaitable[AssignmentInfo | None]:
        """The next assignment for this annotator, or None when they are done.

        Called only when the annotator has no open assignment. Must schedule under
        ``self.store.locked(self.study.study_id)`` (see scheduling.py; ``self.db.locked()`` is the same lock).
        """
        raise NotImplementedError

    def render(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo
    ) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """The template context of the task page for this assignment (resume from assignment.state)."""
        raise NotImplementedError

    def act(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]
    ) -> Outcome | Awaitable[Outcome]:
        """Handle one posted action. Raise JudgmentError for a refused input."""
        raise NotImplementedError

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        """Where the annotator is in the whole session (``session_progress``), or None."""
        return None

    def page_reads(self) -> AbstractContextManager[None]:
        """The scope of one task page's hooks (render, then progress, in one thread): what they both
        read may be read once inside it (LiveProtocol: the live chat). Nothing by default."""
        return nullcontext()

    def admin_summary(self) -> AdminSummary:
        """Progress per bot / pair and live headline numbers for the admin page."""
        return AdminSummary()

    def session_quota(self) -> int:
        """Units of work (assignments of `work_kinds`) in one annotator's complete session."""
        return int(self.config.annotation.units_per_annotator)

    def work_done(self, annotator: AnnotatorInfo) -> int:
        """Submitted assignments of `work_kinds` (an assignment ended by a failed practice is no work)."""
        history = self.db.annotator_assignments(annotator.id)
        return sum(
            1
            for a in history
            if a.unit_kind in self.work_kinds
            and a.status == "submitted"
            and a.state.get("ended") != "onboarding_failed"
        )

    def completion(self, annotator: AnnotatorInfo, more_work: bool) -> Completion:
        """The annotator's completion; `more_work`: the scheduler still has a unit for them."""
        quota, done = self.session_quota(), self.work_done(annotator)
        if annotator.status == "blocked":
            return Completion("failed", done, quota, "blocked")
        if done >= quota:
            return Completion("complete", done, quota, "all the work of a session is done")
        if more_work:
            return Completion("incomplete", done, quota, "work is waiting")
        if done:
            return Completion("complete", done, quota, "no more work for this annotator")
        return Completion("nothing-left", done, quota, "no work was left for this annotator")

    # -- helpers for subclasses -------------------------------------------------------------------
    def expire_minutes(self) -> float:
        return float(self.config.annotation.expire_minutes)

    def expiry(self) -> datetime:
        return clock.now() + timedelta(minutes=self.expire_minutes())

    def save_state(self, assignment: AssignmentInfo, state: dict[str, Any]) -> None:
        """Store the assignment's progress (and extend its expiry: the annotator is active)."""
        self.db.update_state(assignment.id, state, expires_at=self.expiry())
        assignment.state = state

    def finish(self, assignment: AssignmentInfo, state: dict[str, Any] | None = None) -> None:
        self.db.submit_assignment(assignment.id, state=state)
        assignment.status = "submitted"

    def add_judgment(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        question: str,
        value: Any,
        *,
        request_id: str | None,
        conversation: str | None = None,
        justification: str | None = None,
        elapsed_s: float | None = None,
        shown_order: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        finish: bool = False,
        state: dict[str, Any] | None = None,
        session: Transaction | None = None,
        more: Sequence[tuple[str, Any, str]] = (),
    ) -> tuple[int, bool]:
        """Commit one judgment (idempotent by request_id); `conversation` is an external id. The
        counts of how the request's texts were entered (quality/typing.py) go into its meta.

        With `finish` (the assignment is done) or a `state` (its progress), the assignment is
        updated in the same transaction as the judgment: one commit per answer instead of two (the
        same as add_judgment then finish / save_state, without a window between the two). `more`:
        further judgments of the same answer, (question, value, request id) each, stored with it
        in that one transaction (e.g. the criteria of a comparison). With `session`, in the
        caller's transaction (see StudyStore.add_judgment)."""
        signals = input_signals.current()
        if signals is not None:
            meta = {**(meta or {}), "input": signals}
        conv_id = self.db.conversation_row_id(conversation) if conversation else None
        out = self.db.add_judgment(
            annotator.id,
            question,
            value,
            unit_id=assignment.unit_id,
            assignment_id=assignment.id,
            conversation_id=conv_id,
            justification=justification,
            elapsed_s=elapsed_s,
            shown_order=shown_order if shown_order is not None else assignment.shown_order,
            client_request_id=request_id,
            meta=meta,
            finish=finish,
            state=state,
            expires_at=None if finish or state is None else self.expiry(),
            session=session,
            more=more,
        )
        if finish:
            assignment.status = "submitted"
        if state is not None:
            assignment.state = state
        return out

    def check_justification(self, text: str | None) -> str | None:
        """The cleaned justification; JudgmentError when the study requires one and it is too short."""
        text = (text or "").strip()
        ann = self.config.annotation
        if ann.require_justification:
            words = len(text.split())
            if words < max(1, ann.min_justification_words):
                need = max(1, ann.min_justification_words)
                raise JudgmentError(f"Please explain your choice in at least {need} word{'s' if need > 1 else ''}.")
        if len(text) > 5000:
            raise JudgmentError("The justification is too long (at most 5000 characters).")
        return text or None

    def flag(self, annotator_id: int, reasons: list[str], *, block: bool = False, **qc: Any) -> None:
        """Flag (or block) an annotator with reasons; earlier reasons are kept. Judgments are never deleted."""
        current = self.db.get_annotator(annotator_id)
        old = list((current.qc or {}).get("reasons", [])) if current else []
        merged = old + [r for r in reasons if r not in old]
        status = "blocked" if block or (current and current.status == "blocked") else "flagged"
        self.db.set_annotator_status(annotator_id, status, merged, **qc)

    def check_live_messages(self, annotator_id: int) -> list[str]:
        """Run the worker message filters on the annotator's live-chat messages; flag on a hit."""
        if not self.config.quality.worker_filters:
            return []
        from ..quality import filters

        conversations = self.db.annotator_live_messages(annotator_id)
        if not conversations:
            return []
        wordlist = None
        if self.config.quality.offensive_words:
            path = Path(self.config.quality.offensive_words)
            wordlist = filters.load_wordlist(path if path.is_absolute() else self.study.folder / path)
        checks = [c for c in filters.MESSAGE_CHECKS if c not in self.skipped_message_checks]
        reasons = filters.filter_annotators({str(annotator_id): conversations}, wordlist=wordlist, checks=checks)[
            str(annotator_id)
        ]
        if reasons:
            self.flag(annotator_id, reasons)
        return reasons

    def check_justifications(self, annotator_id: int, minimum: int = 3) -> bool:
        """Flag an annotator who never gives a reason (after `minimum` justified judgments). True if flagged."""
        if self.never_justifies(annotator_id, minimum):
            self.flag_never_justifies(annotator_id)
            return True
        return False

    def never_justifies(self, annotator_id: int, minimum: int = 3) -> bool:
        """check_justifications' test without the flag (ACUTE-Eval reads it after an answer's commit,
        outside the study's write lock, then flags with flag_never_justifies)."""
        if not self.config.quality.drop_never_justifies or annotator_id in self._gave_reasons:
            return False
        from ..quality.filters import never_gives_reason, reasons_settled

        texts = self.db.annotator_justifications(annotator_id)
        if reasons_settled(texts):  # judgments are never deleted: the answer stays False
            self._gave_reasons.add(annotator_id)
            return False
        return len(texts) >= minimum and never_gives_reason(texts)

    def flag_never_justifies(self, annotator_id: int) -> None:
        from ..quality.filters import NEVER_GIVES_REASON

        self.flag(annotator_id, [NEVER_GIVES_REASON])
