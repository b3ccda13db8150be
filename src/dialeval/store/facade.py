"""One study's view of the store: the typed facade a method's pages call (`Protocol.db`).

The store's API is split in two: `Store` methods (conversations, judgments, events, annotator
status) and the query functions of `store/work.py` (units, assignments, annotators), which take an
untyped store or session first. A method should not have to know which is which, nor pass the
study's id to every call: `StudyStore` binds one study and offers both, typed, under one name.
It adds no behaviour: each method is one call of the function or `Store` method of the same name
(so the scheduling helpers, which take the plain `Store`, and the facade see the same data).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..records import Conversation, Dataset, Turn, Unit
from . import work
from .store import Store
from .work import AnnotatorInfo, AssignmentInfo, JudgmentLite, UnitInfo

__all__ = ["StudyStore", "Transaction"]

# The open transaction that a write's `also=` / `session=` joins (the methods pass it on, never use it).
Transaction = Session


class StudyStore:
    """The store as one study's pages see it: `StudyStore(store, study_id)`."""

    def __init__(self, store: Store, study_id: int):
        self.store = store  # the plain Store, for the framework's helpers that take one
        self.study_id = study_id

    # -- transactions -------------------------------------------------------------------------------

    def session(self) -> AbstractContextManager[Session]:
        """A read-write session (committed on leaving the block)."""
        return self.store.session()

    def locked(self) -> AbstractContextManager[Session]:
        """A session holding the study's lock: pick a unit and create its assignment under it."""
        return self.store.locked(self.study_id)

    # -- units ----------------------------------------------------------------------------------------

    def add_units(self, method: str, units: list[Unit]) -> int:
        """Store new units (existing ids are kept); returns how many were added."""
        return work.add_units(self.store, self.study_id, method, units)

    def list_units(self, kind: str | None = None) -> list[UnitInfo]:
        return work.list_units(self.store, self.study_id, kind)

    def count_units(self, kind: str | None = None) -> int:
        return work.count_units(self.store, self.study_id, kind)

    def unit_load(self, kind: str | None = None) -> dict[int, dict[str, int]]:
        """Per unit id: how many assignments are open, submitted, ... (scheduling's load)."""
        with self.store.session() as s:
            return work.unit_load(s, self.study_id, kind)

    # -- assignments ----------------------------------------------------------------------------------

    def get_assignment(self, assignment_id: int) -> AssignmentInfo | None:
        return work.get_assignment(self.store, assignment_id)

    def annotator_assignments(self, annotator_id: int, include_expired: bool = False) -> list[AssignmentInfo]:
        return work.annotator_assignments(self.store, self.study_id, annotator_id, include_expired)

    def submitted_count(self, annotator_id: int, kind: str) -> int:
        """How many units of this kind the annotator has finished in this study."""
        return work.submitted_count(self.store, self.study_id, annotator_id, kind)

    def open_assignments_holding(self, key: str) -> list[AssignmentInfo]:
        """Open assignments whose state has `key` (e.g. a held vote)."""
        return work.open_assignments_holding(self.store, self.study_id, key)

    def update_state(
        self,
        assignment_id: int,
        state: dict[str, Any],
        expires_at: datetime | None = None,
        session: Session | None = None,
    ) -> None:
        """Store an assignment's progress; in the caller's transaction when given its `session`."""
        work.update_state(session if session is not None else self.store, assignment_id, state, expires_at)

    def advance_state(
        self,
        assignment_id: int,
        key: str,
        expected: tuple[Any, ...],
        state: dict[str, Any],
        expires_at: datetime | None = None,
    ) -> bool:
        """Compare-and-set of the assignment's state (work.advance_state): True when it went through."""
        return work.advance_state(self.store, assignment_id, key, expected, state, expires_at)

    def submit_assignment(self, assignment_id: int, state: dict[str, Any] | None = None) -> None:
        work.submit_assignment(self.store, assignment_id, state=state)

    # -- annotators -----------------------------------------------------------------------------------

    def get_annotator(self, annotator_id: int) -> AnnotatorInfo | None:
        return work.get_annotator(self.store, annotator_id)

    def update_annotator_meta(self, annotator_id: int, **meta: Any) -> None:
        work.update_annotator_meta(self.store, annotator_id, **meta)

    def set_annotator_status(self, annotator_id: int, status: str, reasons: list[str] | None = None, **qc: Any) -> None:
        self.store.set_annotator_status(annotator_id, status, reasons, **qc)

    def list_annotators(self) -> list[dict[str, Any]]:
        return work.list_annotators(self.store, self.study_id)

    def annotator_justifications(self, annotator_id: int) -> list[str | None]:
        return work.annotator_justifications(self.store, self.study_id, annotator_id)

    def annotator_live_messages(self, annotator_id: int) -> list[list[str]]:
        return work.annotator_live_messages(self.store, self.study_id, annotator_id)

    # -- conversations --------------------------------------------------------------------------------

    def list_conversations(self, source: str | None = None) -> list[dict[str, Any]]:
        return work.list_conversations(self.store, self.study_id, source)

    def conversation_status(self) -> dict[str, str | None]:
        """Conversation id -> its error (None when it is complete)."""
        return self.store.conversation_status(self.study_id)

    def conversation_row_id(self, external_id: str) -> int | None:
        return work.conversation_row_id(self.store, self.study_id, external_id)

    def get_conversation(self, external_id: str) -> Conversation:
        return self.store.get_conversation(self.study_id, external_id)

    def save_conversation(self, conversation: Conversation) -> int:
        return self.store.save_conversation(self.study_id, conversation)

    def add_conversation(self, conversation: Conversation) -> bool:
        return self.store.add_conversation(self.study_id, conversation)

    def set_conversation_meta(
        self, external_id: str, meta: dict[str, Any], also: Callable[[Session], None] | None = None
    ) -> None:
        self.store.set_conversation_meta(self.study_id, external_id, meta, also=also)

    def append_turn(
        self,
        external_id: str,
        turn: Turn,
        at: int | None = None,
        also: Callable[[Session], None] | None = None,
        create: Conversation | None = None,
    ) -> int | None:
        return self.store.append_turn(self.study_id, external_id, turn, at=at, also=also, create=create)

    # -- judgments and events -------------------------------------------------------------------------

    def add_judgment(
        self,
        annotator_id: int,
        question: str,
        value: Any,
        *,
        unit_id: int | None = None,
        assignment_id: int | None = None,
        conversation_id: int | None = None,
        justification: str | None = None,
        elapsed_s: float | None = None,
        shown_order: list[Any] | None = None,
        client_request_id: str | None = None,
        meta: dict[str, Any] | None = None,
        finish: bool = False,
        state: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        session: Session | None = None,
        more: Sequence[tuple[str, Any, str]] = (),
    ) -> tuple[int, bool]:
        """Store one judgment; (row id, created). A repeated client_request_id returns the first.

        With `finish` (the assignment `assignment_id` is done) or a `state` (its progress, open
        until `expires_at`), the assignment is updated in the same transaction as the judgment:
        one commit per answer instead of two, and no window between them. `more`: further
        judgments of the same answer, (question, value, request id) each, with the same unit,
        assignment, meta and timing, in that transaction too (e.g. a comparison's criteria). With
        `session`, all of it in the caller's transaction (one that serialises its writers, as
        Store.append_turn's)."""

        def store_it(session: Any = None) -> tuple[int, bool]:
            out = self.store.add_judgment(
                self.study_id,
                annotator_id,
                question,
                value,
                unit_id=unit_id,
                assignment_id=assignment_id,
                conversation_id=conversation_id,
                justification=justification,
                elapsed_s=elapsed_s,
                shown_order=shown_order,
                client_request_id=client_request_id,
                meta=meta,
                session=session,
                # the assignment closed or its progress stored with the judgment (on PostgreSQL in
                # its statement)
                submit=finish,
                state=state,
                expires_at=expires_at,
            )
            for more_question, more_value, more_request_id in more:
                self.store.add_judgment(
                    self.study_id,
                    annotator_id,
                    more_question,
                    more_value,
                    unit_id=unit_id,
                    assignment_id=assignment_id,
                    conversation_id=conversation_id,
                    elapsed_s=elapsed_s,
                    shown_order=shown_order,
                    client_request_id=more_request_id,
                    meta=meta,
                    session=session,
                )
            return out

        if session is not None:
            return store_it(session)
        if not finish and state is None and not more:
            return store_it()
        try:
            with self.store.session() as s:
                out = store_it(s)
        except IntegrityError:  # the same request raced in twice: the other copy stored it
            out = store_it()
        return out

    def judgment_exists(self, annotator_id: int, request_id: str) -> bool:
        return work.judgment_exists(self.store, annotator_id, request_id)

    def list_judgments(
        self,
        *,
        assignment_id: int | None = None,
        annotator_id: int | None = None,
        question: str | None = None,
        include_excluded: bool = False,
    ) -> list[JudgmentLite]:
        return work.list_judgments(
            self.store,
            self.study_id,
            assignment_id=assignment_id,
            annotator_id=annotator_id,
            question=question,
            include_excluded=include_excluded,
        )

    def log_event(self, kind: str, payload: dict[str, Any] | None = None, annotator_id: int | None = None) -> None:
        self.store.log_event(self.study_id, kind, payload, annotator_id)

    def load_dataset(self, columns: dict[str, Any] | None = None) -> Dataset:
        return self.store.load_dataset(self.study_id, columns)
