"""Prompt-set comparison pages: one prompt, two systems' answers side by side, A / B / tie / both bad.

Units (kind "prompts"): one prompt and one pair of systems; ``conversation_ids`` are the two answer
conversations (promptset.answer_id), ``payload``: ``speakers_to_eval`` and ``bot_pair`` (the two
systems, aligned with the conversations), ``question`` ("overall"), ``prompt_id``, ``category``,
``shared`` (how many turns of each conversation are the shared prompt), ``reference``.
Check units (kind "prompts-check"): one system's answer to a prompt against its answer to another
prompt; the right choice is the on-topic one (``correct``). The first is the practice item when
onboarding is enabled; later ones are attention checks every ``protocol.attention_every`` items.

Scheduling: the pair with the fewest judgments first (or the adaptive scheduler's pair), then the
item judged least, never an item this annotator has seen, at most ``annotations_per_item`` people
per item; sides are drawn per assignment (shown_order) and stored with the judgment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import JudgmentError
from ...plugin import AdminSummary, AnnotatorInfo, AssignmentInfo, Outcome, Protocol, session_progress
from ...records import Conversation, Turn, Unit
from ...scheduling import tickets
from ...scheduling.assign import (
    Choice,
    SchedulingView,
    answer_with_next,
    assign_locked,
    group_load,
    least_loaded,
    pair_key,
)
from ...scheduling.plan import adaptive_note, adaptive_plan
from ...scheduling.tickets import GuidedUnits
from ...store import work
from ...store.work import UnitInfo
from .options import PromptsOptions
from .promptset import BOT, Prompt, answer_id, compared_systems, load_prompts, system_pairs

if TYPE_CHECKING:
    from ...store.facade import Transaction

KIND = "prompts"
CHECK_KIND = "prompts-check"
QUESTION = "overall"
CHECK_QUESTION = "check"
MAX_CHECK_UNITS = 20
MINUTES_PER_ITEM = 1.0
# the four answers, as the arena stores them: the side shown first is model_a
WINNERS = {"A": "model_a", "B": "model_b", "tie": "tie", "both-bad": "tie (bothbad)"}
LABELS = {"A": "A is better", "B": "B is better", "tie": "Tie", "both-bad": "Both are bad"}


def _group(unit_or_assignment: UnitInfo | AssignmentInfo) -> tuple[str, str, str]:
    p = unit_or_assignment.payload
    return (p["question"], *pair_key(*p["bot_pair"]))


class PromptsProtocol(Protocol[PromptsOptions]):
    method = "prompts"
    template = "prompts.html"
    inline_next_page = True  # its page has no script of its own: the answer brings the next one
    progress_kind = KIND
    title = "Compare two answers"
    work_kinds = (KIND,)

    def session_quota(self) -> int:
        return int(self.options.items_per_session)

    # -- units -------------------------------------------------------------------------------------
    def prepare(self) -> int:
        prompts = load_prompts(self.options, self.study.folder)
        status = self.db.conversation_status()

        def ready(system: str, pid: str) -> bool:
            return status.get(answer_id(system, pid), "missing") is None

        units: list[Unit] = []
        for a, b in system_pairs(self.config):
            for p in prompts:
                if not (ready(a, p.id) and ready(b, p.id)):
                    continue  # a missing or failed answer is never shown (generate / import names it)
                units.append(
                    Unit(
                        id=f"prompts:{p.id}|{a}|{b}",
                        kind=KIND,
                        conversation_ids=[answer_id(a, p.id), answer_id(b, p.id)],
                        payload={
                            "speakers_to_eval": [a, b],
                            "bot_pair": [a, b],
                            "question": QUESTION,
                            "prompt_id": p.id,
                            "category": p.category,
                            "shared": len(p.shared()),
                            "reference": p.reference,
                        },
                    )
                )
        if self.config.onboarding.enabled or self.options.attention_every:
            units += self._check_units(prompts, ready)
        return self.db.add_units(self.method, units)

    def _check_units(self, prompts: list[Prompt], ready: Callable[[str, str], bool]) -> list[Unit]:
        """A system's answer against its own answer to the next prompt: the on-topic one is right."""
        rng = self.study.seeded_rng("prompts-checks")
        single = [p for p in prompts if len(p.slots()) == 1]
        rng.shuffle(single)
        out: list[Unit] = []
        for system in compared_systems(self.config):
            for p, other in zip(single, single[1:] + single[:1]):
                if len(out) >= MAX_CHECK_UNITS or p.id == other.id:
                    break
                if ready(system, p.id) and ready(system, other.id):
                    right, wrong = answer_id(system, p.id), answer_id(system, other.id)
                    out.append(
                        Unit(
                            id=f"prompts-check:{p.id}|{other.id}|{system}",
                            kind=CHECK_KIND,
                            conversation_ids=[right, wrong],
                            payload={
                                "speakers_to_eval": [system, system],
                                "bot_pair": [system, system],
                                "question": CHECK_QUESTION,
                                "prompt_id": p.id,
                                "category": p.category,
                                "shared": len(p.shared()),
                                "reference": None,
                                "correct": right,
                                "is_check": True,
                            },
                        )
                    )
        return out

    # -- scheduling --------------------------------------------------------------------------------
    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None:
        return assign_locked(self, annotator, self.choose)

    def _practice_state(self, history: list[AssignmentInfo]) -> tuple[bool, int]:
        """(passed, tries) of the annotator's practice items (check units before any real item)."""
        practice = [
            a for a in history if a.unit_kind == CHECK_KIND and a.state.get("practice") and a.status == "submitted"
        ]
        return any(a.state.get("passed") for a in practice), len(practice)

    def choose(self, view: SchedulingView) -> Choice | None:
        history = view.history
        adaptive = adaptive_plan(
            self, view, self.method, [QUESTION], _adaptive_outcome, guided=GuidedUnits(KIND, _group, _judge_first_won)
        )
        if adaptive is not None and adaptive.stopped:
            return None
        checks = view.units(CHECK_KIND)
        seen = view.seen_units()
        onboarding = self.config.onboarding
        if onboarding.enabled and checks:
            passed, tries = self._practice_state(history)
            if not passed and tries < onboarding.tries:
                return self._check_choice(checks, seen, view, practice=True)
            if not passed and onboarding.on_fail == "block":
                return None
        done = [a for a in history if a.unit_kind == KIND]
        if len(done) >= self.options.items_per_session:
            return None
        every = self.options.attention_every
        if every and checks and done and len(done) % every == 0:
            since = [a for a in history if a.unit_kind == CHECK_KIND and not a.state.get("practice")]
            if len(since) < len(done) // every:
                return self._check_choice(checks, seen, view, practice=False)
        units = view.units(KIND)
        cap = self.options.annotations_per_item
        candidates = [u for u in units if u.id not in seen and view.used(u.id) < cap]
        if not candidates:
            return None
        group_used = group_load(units, view, _group)
        mine = Counter(_group(a) for a in done)
        groups = {_group(u) for u in candidates}
        if adaptive is not None:
            group = adaptive.pick(groups, lambda g: (group_used.get(g, 0), mine.get(g, 0)), view)
            if group is not None and adaptive.pools is not None:
                others = sorted(adaptive.open_groups() & groups - {group}, key=lambda g: group_used.get(g, 0))
                # judge-guided tickets draw items with replacement (their weights make the test valid),
                # so annotations_per_item does not cap them; nobody gets one item twice all the same
                return tickets.ticket_for(adaptive, [group, *others], units, view, KIND)
        else:
            group = least_loaded(groups, lambda g: (group_used.get(g, 0), mine.get(g, 0)), view.rng)
        if group is None:
            return None
        unit = least_loaded([u for u in candidates if _group(u) == group], lambda u: view.used(u.id), view.rng)
        assert unit is not None  # the group is one of the candidates'
        return self._choice(unit, view)

    def _check_choice(
        self, checks: list[UnitInfo], seen: set[int], view: SchedulingView, *, practice: bool
    ) -> Choice | None:
        fresh = [u for u in checks if u.id not in seen] or checks
        unit = least_loaded(fresh, lambda u: view.used(u.id), view.rng)
        assert unit is not None  # asked only when the study has checks
        choice = self._choice(unit, view)
        choice.state = {"practice": practice}
        return choice

    @staticmethod
    def _choice(unit: UnitInfo, view: SchedulingView) -> Choice:
        order = list(unit.conversation_ids)
        view.rng.shuffle(order)  # which answer is A: drawn per assignment, stored as shown_order
        return Choice(unit.id, shown_order=order, state={})

    # -- page ----------------------------------------------------------------------------------------
    def render(self, annotator: AnnotatorInfo, assignment: AssignmentInfo) -> dict[str, Any]:
        p = assignment.payload
        order = assignment.shown_order or assignment.conversation_ids
        convs = [self.db.get_conversation(c) for c in order]
        shared = int(p.get("shared", 1))
        # the prompt is the unit's first conversation's (a check unit's other answer is to another prompt)
        prompt_turns = self.db.get_conversation(assignment.conversation_ids[0]).turns[:shared]
        sides = []
        for letter, conv in zip("AB", convs):
            turns = conv.turns[shared:] if assignment.unit_kind == KIND else _own_answer(conv)
            sides.append({"letter": letter, "turns": [{"is_answer": t.speaker == BOT, "text": t.text} for t in turns]})
        practice = bool(assignment.state.get("practice"))
        return {
            "prompt_turns": [{"is_user": t.speaker == "user", "text": t.text} for t in prompt_turns],
            "sides": sides,
            "question": self.options.question,
            "choices": LABELS,
            "criteria": self.options.criteria if assignment.unit_kind == KIND else [],
            "reference": p.get("reference") if self.options.show_reference else None,
            "category": p.get("category"),
            "is_practice": practice,
            "require_justification": self.config.annotation.require_justification,
            "min_words": self.config.annotation.min_justification_words
            if self.config.annotation.require_justification
            else 0,
        }

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        total = self.options.items_per_session
        done = self.db.submitted_count(annotator.id, KIND)
        label = "Practice item" if assignment is not None and assignment.state.get("practice") else None
        return session_progress(
            label or f"Item {min(done + 1, total)} of {total}",
            done,
            total,
            minutes_left=(total - done) * MINUTES_PER_ITEM,
        )

    # -- answers -------------------------------------------------------------------------------------
    def act(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]) -> Outcome:
        if action != "submit":
            raise JudgmentError(f"unknown action '{action}'")
        order = list(assignment.shown_order or assignment.conversation_ids)
        choice = data.get("choice")
        if choice not in WINNERS:
            raise JudgmentError("Please choose A, B, tie or both bad.")
        justification = self.check_justification(
            data.get("justification") if isinstance(data.get("justification"), str) else None
        )
        p = assignment.payload
        bot_of = {c: p["speakers_to_eval"][i] for i, c in enumerate(assignment.conversation_ids)}
        value = {
            "model_a": bot_of[order[0]],
            "model_b": bot_of[order[1]],
            "winner": WINNERS[choice],
            "prompt_id": p["prompt_id"],
            "conversation_a": order[0],
            "conversation_b": order[1],
        }
        meta: dict[str, Any] = {"left": order[0], "right": order[1], "category": p.get("category")}
        if choice in ("A", "B"):
            won = order[0] if choice == "A" else order[1]
            meta.update(winner_bot=bot_of[won], loser_bot=bot_of[order[1] if choice == "A" else order[0]])
        if (assignment.state or {}).get("guided"):
            meta["guided"] = assignment.state["guided"]
        elapsed = _elapsed(data)
        if assignment.unit_kind == CHECK_KIND:
            return self._checked(annotator, assignment, choice, order, value, meta, data, justification, elapsed)
        criteria = [  # criteria are optional: an unanswered one is simply not stored
            (criterion.id, {**value, "winner": WINNERS[answer]}, f"{data['request_id']}:{criterion.id}"[:100])
            for criterion in self.options.criteria
            if (answer := data.get(f"criterion-{criterion.id}")) in WINNERS
        ]

        # one commit: the answer, its criteria, the closed assignment and the annotator's next
        # assignment (under the study lock the choice needs anyway; the task page then only reads)
        def store_answer(session: Transaction) -> tuple[None, bool]:
            _row, stored = self.add_judgment(
                annotator, assignment, QUESTION, value, request_id=data["request_id"],
                justification=justification, elapsed_s=elapsed, meta=meta,
                more=criteria, finish=True, session=session,
            )  # fmt: skip
            return None, stored

        _none, nothing_left = answer_with_next(self, annotator, store_answer, self.choose)
        if self.config.annotation.require_justification:
            self.check_justifications(annotator.id)
        return self._answered(nothing_left)

    def _answered(self, nothing_left: bool) -> Outcome:
        """An answer's reply: the next task, or the done page when nothing is left for them."""
        return Outcome(done=True, redirect=self.study.url("done") if nothing_left else None)

    def _checked(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        choice: str,
        order: list[str],
        value: dict[str, Any],
        meta: dict[str, Any],
        data: dict[str, Any],
        justification: str | None,
        elapsed: float | None,
    ) -> Outcome:
        correct = assignment.payload["correct"]
        passed = choice in ("A", "B") and order["AB".index(choice)] == correct
        practice = bool(assignment.state.get("practice"))

        def store_answer(session: Transaction) -> tuple[int | None, bool]:
            """One commit, as in act, with another try, the first item or the next one; (the tries
            used by a failed practice, read in the answer's transaction; stored)."""
            _row, stored = self.add_judgment(
                annotator, assignment, "onboarding" if practice else CHECK_QUESTION, value,
                request_id=data["request_id"], justification=justification, elapsed_s=elapsed,
                meta={**meta, "onboarding": practice, "check": True, "passed": passed},
                finish=True, state={"practice": practice, "passed": passed}, session=session,
            )  # fmt: skip
            if not passed and practice:
                history = work.annotator_assignments(session, self.study.study_id, annotator.id)
                ok, tries = self._practice_state(history)
                return (None if ok else tries), stored
            return None, stored

        failed_tries, nothing_left = answer_with_next(self, annotator, store_answer, self.choose)
        if not passed and not practice:
            self.flag(annotator.id, ["failed an attention check"])
        elif failed_tries is not None and failed_tries >= self.config.onboarding.tries:
            block = self.config.onboarding.on_fail == "block"
            self.flag(annotator.id, ["failed onboarding"], block=block, onboarding="failed")
        return self._answered(nothing_left)

    # -- admin ---------------------------------------------------------------------------------------
    def admin_summary(self) -> AdminSummary:
        cap = self.options.annotations_per_item
        items = Counter(_group(u)[1:] for u in self.db.list_units(KIND))
        rows: dict[Any, dict[str, Any]] = {
            pair: {"pair": f"{pair[0]} vs {pair[1]}", "judgments": 0, "target": n * cap} for pair, n in items.items()
        }
        checks: Counter[str] = Counter()
        for j in self.db.list_judgments():
            if j.meta.get("check"):
                checks["passed" if j.meta.get("passed") else "failed"] += 1
            elif j.question == QUESTION and isinstance(j.value, dict):
                pair = pair_key(j.value["model_a"], j.value["model_b"])
                if pair in rows and j.annotator_status == "active":
                    rows[pair]["judgments"] += 1
        notes = [f"Practice and attention checks: {checks['passed']} passed, {checks['failed']} failed."]
        if not items:
            notes.append("No items yet: make the answers first (dialeval generate, or dialeval import answers).")
        note = adaptive_note(self)
        if note:
            notes.append(note)
        return AdminSummary(progress=list(rows.values()), notes=notes)


def _own_answer(conv: Conversation) -> list[Turn]:
    """A check item's side: the whole answer conversation (it answers a different prompt)."""
    return [t for t in conv.turns if t.speaker == BOT] or conv.turns


def _judge_first_won(unit: UnitInfo, value: Any) -> bool | None:
    """In a judge's answer on `unit` (the arena's value shape): did the first bot of its pair win?"""
    if not isinstance(value, dict) or value.get("winner") not in ("model_a", "model_b"):
        return None
    return bool(value[value["winner"]] == _group(unit)[1])


def _adaptive_outcome(j: work.ScoredJudgment) -> tuple[str, str, str | None] | None:
    """(a, b, winner or None for a tie) of a stored comparison; None for checks and criteria."""
    if j.question != QUESTION or j.meta.get("check") or not isinstance(j.value, dict):
        return None
    a, b = j.value.get("model_a"), j.value.get("model_b")
    if not a or not b:
        return None
    return a, b, j.meta.get("winner_bot")


def _elapsed(data: dict[str, Any]) -> float | None:
    try:
        ms = float(data.get("elapsed_ms") or "")
    except (TypeError, ValueError):
        return None
    return ms / 1000.0 if 0 <= ms < 24 * 3600 * 1000 else None
