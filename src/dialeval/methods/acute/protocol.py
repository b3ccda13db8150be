"""ACUTE-Eval / PW-Dialog (Li et al. 2019; Smith et al. 2022, §3.1.3): two whole conversations side by side.

Units (kind "acute"): one pair of conversations of two different bots and one question;
``conversation_ids = [conv_a, conv_b]``, ``payload["speakers_to_eval"] = [bot_a, bot_b]`` (records.py),
plus ``eval_speakers`` (the speaker label highlighted in each conversation), ``bot_pair`` and
``question``. Onboarding units (kind "acute-onboarding") pair a human-human conversation with a
conversation of ``options.onboarding_weak_bot``; the right answer is the human one.

An annotator's session: the onboarding comparison first (when enabled), then up to
``options.comparisons_per_unit`` comparisons. Scheduling (Li et al. 2019, "Annotation Quality"): the bot pair
and question with the fewest annotations so far (below ``options.annotations_per_pair``), then the
conversation pair used least, then the conversations used least; left/right drawn per assignment.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ... import clock
from ...errors import JudgmentError
from ...plugin import AdminSummary, AnnotatorInfo, AssignmentInfo, Outcome, Protocol, session_progress
from ...protocols.voters import voter_screen
from ...questions import Question
from ...records import Conversation, Unit
from ...scheduling import tickets
from ...scheduling.assign import (
    Choice,
    SchedulingView,
    answer_with_next,
    assign_locked,
    bot_pairs,
    cap_reached,
    least_loaded,
    pair_key,
)
from ...scheduling.plan import adaptive_note, adaptive_plan
from ...scheduling.tickets import GuidedUnits
from ...store import work
from ...store.work import UnitInfo
from .options import AcuteOptions
from .questions import ACUTE_QUESTIONS

if TYPE_CHECKING:
    from ...store.facade import Transaction

KIND = "acute"
ONBOARDING_KIND = "acute-onboarding"
MAX_UNITS_PER_PAIR = 5000
HUMAN = "human"


MINUTES_PER_COMPARISON = 1.5  # reading two short conversations and a justification (estimate for the header)


def _group(unit_or_assignment: UnitInfo | AssignmentInfo) -> tuple[str, str, str]:
    """The balancing group of a unit: (question, bot a, bot b) with the pair in pair_key order."""
    p = unit_or_assignment.payload
    return (p["question"], *pair_key(*p["bot_pair"]))


def evaluated_bot(conv: dict[str, Any]) -> str | None:
    """The system a stored conversation evaluates: 'human' for human-human, the one bot otherwise."""
    bots = [b for b in conv["bots"] if b]
    if conv["source"] == "human" or (bots and all(b == HUMAN for b in bots)):
        return HUMAN
    others = sorted({b for b in bots if b != HUMAN})
    return others[0] if len(others) == 1 else None


def eval_speaker(conv: Conversation, bot: str) -> str:
    """The speaker label to highlight: the one whose turns the bot wrote (entity1 for a self-chat)."""
    speakers = [t.speaker for t in conv.turns]
    if bot != HUMAN:
        by_bot = sorted({t.speaker for t in conv.turns if t.bot == bot and not t.is_seed})
        if "bot" in by_bot:
            return "bot"
        if by_bot:
            return "entity1" if "entity1" in by_bot else by_bot[-1]
    if "entity1" in speakers:
        return "entity1"
    return speakers[-1] if speakers else "entity1"


class AcuteProtocol(Protocol[AcuteOptions]):
    method = "acute"
    template = "acute.html"
    inline_next_page = True  # its page has no script of its own: the answer brings the next one
    progress_kind = KIND
    title = "ACUTE-Eval (PW-Dialog)"

    work_kinds = ("acute",)  # a complete session: session_quota() of these

    def session_quota(self) -> int:
        return int(self.options.comparisons_per_unit)

    # -- questions ---------------------------------------------------------------------------------
    def questions(self) -> list[Question]:
        out = []
        for q in self.config.questions or []:
            preset = ACUTE_QUESTIONS.get(q.id)
            text = q.text or (preset.text if preset else q.id)
            choice = q.choice or (preset.choice if preset else "Speaker {n}")
            out.append(Question(q.id, text, choice))
        return out or [ACUTE_QUESTIONS["preference"]]

    def question(self, qid: str) -> Question:
        for q in self.questions():
            if q.id == qid:
                return q
        return ACUTE_QUESTIONS.get(qid, Question(qid, qid, "Speaker {n}"))

    # -- units -------------------------------------------------------------------------------------
    def prepare(self) -> int:
        convs = [c for c in self.db.list_conversations() if not c["error"] and c["turns"] >= 2]
        by_bot: dict[str, list[str]] = {}
        for c in convs:
            bot = evaluated_bot(c)
            if bot is not None:
                by_bot.setdefault(bot, []).append(c["id"])
        speakers: dict[str, str] = {}

        def speaker_of(conv_id: str, bot: str) -> str:
            if conv_id not in speakers:
                speakers[conv_id] = eval_speaker(self.db.get_conversation(conv_id), bot)
            return speakers[conv_id]

        names = [b.name for b in self.config.bots if b.type != "degraded"]
        pairs = bot_pairs(names, self.options.pairs)
        units: list[Unit] = []
        for q in self.questions():
            for a, b in pairs:
                rng = self.study.seeded_rng("acute-units", q.id, a, b)
                ca, cb = list(by_bot.get(a, [])), list(by_bot.get(b, []))
                if not ca or not cb:
                    continue
                rng.shuffle(ca)
                rng.shuffle(cb)
                # diagonal order: each shift s pairs every conversation of a once, so the first units
                # spread over all conversations; all n*m pairs appear exactly once
                cross = [(ca[i], cb[(i + s) % len(cb)]) for s in range(len(cb)) for i in range(len(ca))]
                for x, y in cross[:MAX_UNITS_PER_PAIR]:
                    units.append(
                        Unit(
                            id=f"acute:{q.id}:{x}|{y}",
                            kind=KIND,
                            conversation_ids=[x, y],
                            payload={
                                "speakers_to_eval": [a, b],
                                "eval_speakers": [speaker_of(x, a), speaker_of(y, b)],
                                "bot_pair": [a, b],
                                "question": q.id,
                            },
                        )
                    )
        units = list({u.id: u for u in units}.values())
        weak = self.options.onboarding_weak_bot
        if self.config.onboarding.enabled and weak:
            humans = list(by_bot.get(HUMAN, []))
            if not humans:
                humans = [self._make_human_conversation()]
            weak_convs = by_bot.get(weak, [])
            q = self.questions()[0]
            for h, w in itertools.islice(itertools.product(humans, weak_convs), 50):
                units.append(
                    Unit(
                        id=f"acute-onboarding:{h}|{w}",
                        kind=ONBOARDING_KIND,
                        conversation_ids=[h, w],
                        payload={
                            "speakers_to_eval": [HUMAN, weak],
                            "eval_speakers": [speaker_of(h, HUMAN), speaker_of(w, weak)],
                            "bot_pair": [HUMAN, weak],
                            "question": q.id,
                            "correct": h,
                            "is_onboarding": True,
                        },
                    )
                )
        return self.db.add_units(self.method, units)

    def _make_human_conversation(self) -> str:
        from ...corpus import load_corpus
        from ...dialogue.generate import human_conversation

        conv_id = "onboarding-human-0000"
        conv = human_conversation(
            conv_id, self.study.seeded_rng("onboarding"), load_corpus(), self.config.generation.turns
        )
        self.db.save_conversation(conv)
        return conv_id

    # -- scheduling --------------------------------------------------------------------------------
    def onboarding_state(self, history: list[AssignmentInfo]) -> tuple[bool, int]:
        """(passed, tries used) from the annotator's onboarding assignments."""
        ob = [a for a in history if a.unit_kind == ONBOARDING_KIND and a.status == "submitted"]
        return any(a.state.get("passed") for a in ob), len(ob)

    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None:
        return assign_locked(self, annotator, lambda view: self.choose(view))

    def choose(self, view: SchedulingView) -> Choice | None:
        history = view.history
        # adaptive collection (config `adaptive:`): once the ranking is decided nobody gets more work
        adaptive = adaptive_plan(
            self,
            view,
            self.method,
            [q.id for q in self.questions()],
            _adaptive_outcome,
            guided=GuidedUnits(KIND, _group, _judge_first_won),
        )
        if adaptive is not None and adaptive.stopped:
            return None
        onboarding = self.config.onboarding
        passed, tries = self.onboarding_state(history)
        if onboarding.enabled and not passed:  # (passed: its units are not read)
            ob_units = view.units(ONBOARDING_KIND)
            if ob_units and tries < onboarding.tries:
                seen = view.seen_units()
                fresh = [u for u in ob_units if u.id not in seen] or ob_units
                unit = least_loaded(fresh, lambda u: view.used(u.id), view.rng)
                assert unit is not None  # ob_units is not empty
                return self._choice(unit, view)
            if ob_units and onboarding.on_fail == "block":
                return None
        if cap_reached(history, self.options.comparisons_per_unit, KIND):
            return None
        units = view.units(KIND)
        index = _unit_index(self.store, self.study.study_id, units)
        seen = view.seen_units()
        # per bot pair, from the index and the units given out so far (view.load): no pass over
        # every unit of the study at each assignment
        seen_per_group = Counter(index.group_of[u] for u in seen if u in index.group_of)
        groups = {g for g, members in index.by_group.items() if len(members) > seen_per_group.get(g, 0)}
        if not groups:
            return None
        target = self.options.annotations_per_pair
        # used per bot pair and per conversation, kept per process (not a pass over every unit)
        group_used = view.totals("acute-pairs", index.group_keys, index)
        conv_used = view.totals("acute-conversations", index.conversation_keys, index)
        mine = Counter(_group(a) for a in history if a.unit_kind == KIND)  # this annotator's per group
        groups = {g for g in groups if group_used.get(g, 0) < target}
        if adaptive is not None:
            # the bot pair from AdaptiveState.next_pair; decided pairs get no new units
            group = adaptive.pick(
                groups,
                lambda g: (group_used.get(g, 0), mine.get(g, 0)),
                view,
                question_load=lambda q: sum(n for g, n in group_used.items() if g[0] == q),
            )
        else:
            group = least_loaded(groups, lambda g: (group_used.get(g, 0), mine.get(g, 0)), view.rng)
        if group is None:
            return None
        if adaptive is not None and adaptive.pools is not None:
            # the drawn pair first; when this annotator has seen every unit its next tickets ask for,
            # another open pair (a ticket is never skipped: it waits for someone else)
            others = sorted(adaptive.open_groups() & groups - {group}, key=lambda g: group_used.get(g, 0))
            return tickets.ticket_for(adaptive, [group, *others], units, view, KIND)
        seen_convs = view.seen_conversations()
        in_group = [u for u in index.by_group[group] if u.id not in seen]
        # the least used units only (in their order, so the same unit and the same draw): the rest
        # of the key, the conversations' use, is worked out for them alone (it was a tenth of the
        # CPU of a choice, PostgreSQL ACUTE under load)
        fewest = min(view.used(u.id) for u in in_group)
        in_group = [u for u in in_group if view.used(u.id) == fewest]
        unit = least_loaded(
            in_group,
            lambda u: (
                view.used(u.id),
                max(conv_used.get(c, 0) for c in u.conversation_ids),
                sum(conv_used.get(c, 0) for c in u.conversation_ids),
                sum(c in seen_convs for c in u.conversation_ids),
            ),
            view.rng,
        )
        assert unit is not None  # the group has a unit this annotator has not seen
        return self._choice(unit, view)

    @staticmethod
    def _choice(unit: UnitInfo, view: SchedulingView) -> Choice:
        order = list(unit.conversation_ids)
        view.rng.shuffle(order)
        return Choice(unit.id, shown_order=order, state={})

    # -- page ----------------------------------------------------------------------------------------
    def _sides(self, assignment: AssignmentInfo) -> list[dict[str, Any]]:
        p = assignment.payload
        sides = []
        for n, conv_id in enumerate(assignment.shown_order or assignment.conversation_ids, start=1):
            idx = assignment.conversation_ids.index(conv_id)
            conv = self.db.get_conversation(conv_id)
            speaker = p["eval_speakers"][idx]
            sides.append({"n": n, "conversation": conv, "speaker": speaker, "turns": [t for t in conv.turns]})
        return sides

    def render(self, annotator: AnnotatorInfo, assignment: AssignmentInfo) -> dict[str, Any]:
        q = self.question(assignment.payload["question"])
        notice = None
        if assignment.unit_kind == ONBOARDING_KIND:
            # the practice answers submitted so far (a count: not the whole history again)
            tries = self.db.submitted_count(annotator.id, ONBOARDING_KIND)
            if tries:
                notice = (
                    f"That practice answer was not right. Read both conversations again: "
                    f"practice try {tries + 1} of {self.config.onboarding.tries}."
                )
        return {
            "notice": notice,
            "sides": self._sides(assignment),
            "question": q,
            "choices": [q.choice.replace("{n}", str(n)) for n in (1, 2)],
            "is_onboarding": assignment.unit_kind == ONBOARDING_KIND,
            "min_words": self.config.annotation.min_justification_words
            if self.config.annotation.require_justification
            else 0,
            "require_justification": self.config.annotation.require_justification,
        }

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        total = self.options.comparisons_per_unit
        if assignment is not None and assignment.unit_kind == ONBOARDING_KIND:
            return session_progress(
                "Practice comparison",
                0,
                total,
                detail=f"then {total} comparisons",
                minutes_left=(total + 1) * MINUTES_PER_COMPARISON,
            )
        done = self.db.submitted_count(annotator.id, KIND)
        return session_progress(
            f"Comparison {min(done + 1, total)} of {total}",
            done,
            total,
            minutes_left=(total - done) * MINUTES_PER_COMPARISON,
        )

    # -- answers -------------------------------------------------------------------------------------
    def act(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]) -> Outcome:
        if action != "submit":
            raise JudgmentError(f"unknown action '{action}'")
        order = assignment.shown_order or assignment.conversation_ids
        choice = data.get("choice")
        if choice not in ("1", "2", 1, 2):
            raise JudgmentError("Please choose one of the two speakers.")
        idx = int(choice) - 1
        justification = self.check_justification(
            data.get("justification") if isinstance(data.get("justification"), str) else None
        )
        winner, loser = order[idx], order[1 - idx]
        elapsed = _elapsed(data, assignment)
        p = assignment.payload
        bot_of = {c: p["speakers_to_eval"][i] for i, c in enumerate(assignment.conversation_ids)}
        meta = {
            "winner_bot": bot_of[winner],
            "loser_bot": bot_of[loser],
            "left": order[0],
            "right": order[1],
            "speakers_to_eval": p["speakers_to_eval"],
        }
        if (assignment.state or {}).get("guided"):  # the judge-guided ticket this answers (scheduling/tickets.py)
            meta["guided"] = assignment.state["guided"]
        onboarding = assignment.unit_kind == ONBOARDING_KIND
        passed = onboarding and winner == p["correct"]
        # One commit per answer: the judgment, its closed assignment and the annotator's next
        # assignment, under the study lock the choice needs anyway; the task page that follows only
        # reads it (it was a second locked write transaction per judgment, the study's busiest).
        # The practice answer too: the next unit is another try or the first comparison.
        if onboarding:
            meta = {**meta, "onboarding": True, "passed": passed}

        def store_answer(session: Transaction) -> tuple[int | None, bool]:
            """The answer in the transaction; (tries used by a failed practice, read in the answer's
            own transaction; stored)."""
            _row, stored = self.add_judgment(
                annotator,
                assignment,
                "onboarding" if onboarding else p["question"],
                {"winner": winner, "loser": loser},
                request_id=data["request_id"],
                justification=justification,
                elapsed_s=elapsed,
                meta=meta,
                finish=True,
                state={"passed": passed} if onboarding else None,
                session=session,
            )
            failed_tries = None
            if onboarding and not passed:
                ok, tries = self.onboarding_state(
                    work.annotator_assignments(session, self.study.study_id, annotator.id)
                )
                failed_tries = None if ok else tries
            return failed_tries, stored

        failed_tries, nothing_left = answer_with_next(self, annotator, store_answer, self.choose)
        # after the commit, not inside the study's write lock: every statement there is time the
        # study's other writers wait (the lock bounded judgments/s, benchmarks/load.py)
        never_justifies = not onboarding and self.never_justifies(annotator.id)
        if failed_tries is not None and failed_tries >= self.config.onboarding.tries:
            block = self.config.onboarding.on_fail == "block"
            self.flag(annotator.id, ["failed onboarding"], block=block, onboarding="failed")
        if never_justifies:
            self.flag_never_justifies(annotator.id)
        return Outcome(done=True, redirect=self.study.url("done") if nothing_left else None)

    # -- admin ---------------------------------------------------------------------------------------
    def admin_summary(self) -> AdminSummary:
        judgments = self.db.list_judgments()
        target = self.options.annotations_per_pair
        rows: dict[tuple[str, ...], dict[str, Any]] = {}

        def row_of(question: str, a: str, b: str) -> dict[str, Any]:
            """The progress row of one question and bot pair (made on first use)."""
            return rows.setdefault(
                (question, a, b),
                {
                    "question": question,
                    "pair": f"{a} vs {b}",
                    "judgments": 0,
                    "target": target,
                    "wins_first": 0,
                    "excluded (flagged/blocked)": 0,
                },
            )

        for q in self.questions():
            for a, b in bot_pairs([x.name for x in self.config.bots if x.type != "degraded"], self.options.pairs):
                row_of(q.id, a, b)
        onboarding = {"passed": 0, "failed": 0}
        for j in judgments:
            if j.question == "onboarding":
                onboarding["passed" if j.meta.get("passed") else "failed"] += 1
                continue
            a, b = pair_key(j.meta.get("winner_bot", "?"), j.meta.get("loser_bot", "?"))
            row = row_of(j.question, a, b)
            if j.annotator_status != "active":
                row["excluded (flagged/blocked)"] += 1
                continue
            row["judgments"] += 1
            if j.meta.get("winner_bot") == a:
                row["wins_first"] += 1
        headline = []
        for (qid, a, b), row in rows.items():
            n = row["judgments"]
            if n:
                headline.append(
                    {"label": f"{a} beats {b} ({qid})", "value": f"{100 * row['wins_first'] / n:.0f}% (n={n})"}
                )
        for row in rows.values():
            row["wins of first bot"] = row.pop("wins_first")
        notes = [f"Onboarding: {onboarding['passed']} passed, {onboarding['failed']} failed."]
        note = adaptive_note(self)
        if note:
            notes.append(note)
        if self.config.onboarding.enabled and not self.db.count_units(ONBOARDING_KIND):
            notes.append(
                "Onboarding is enabled but no onboarding units exist (set protocol.onboarding_weak_bot "
                "and generate that bot's self-chats)."
            )
        summary = AdminSummary(progress=list(rows.values()), headline=headline, notes=notes)
        voter_screen(self, summary, _adaptive_outcome)
        return summary


@dataclass
class _UnitIndex:
    units: list[UnitInfo]  # the list it was built from (work.units_cached keeps it while unchanged)
    by_id: dict[int, UnitInfo]
    group_of: dict[int, tuple[str, str, str]]
    by_group: dict[tuple[str, str, str], list[UnitInfo]]

    def group_keys(self, unit_id: int) -> tuple[tuple[str, str, str], ...]:
        g = self.group_of.get(unit_id)
        return () if g is None else (g,)

    def conversation_keys(self, unit_id: int) -> list[str]:
        unit = self.by_id.get(unit_id)
        return [] if unit is None else unit.conversation_ids


def _unit_index(store: object, study_id: int, units: list[UnitInfo]) -> _UnitIndex:
    """The study's comparison units by id and by bot pair, built once per process for a units list
    (units never change once stored; a new list from units_cached means units were added)."""
    cache: dict[int, _UnitIndex] = store.__dict__.setdefault("_acute_unit_index", {})
    index = cache.get(study_id)
    if index is None or index.units is not units:
        by_group: dict[tuple[str, str, str], list[UnitInfo]] = {}
        group_of = {}
        for u in units:
            g = _group(u)
            group_of[u.id] = g
            by_group.setdefault(g, []).append(u)
        index = _UnitIndex(units, {u.id: u for u in units}, group_of, by_group)
        cache[study_id] = index
    return index


def _judge_first_won(unit: UnitInfo, value: Any) -> bool | None:
    """In a judge's answer {"winner": conversation} on `unit`: did the first bot of its pair win?"""
    winner = value.get("winner") if isinstance(value, dict) else None
    if winner not in unit.conversation_ids:
        return None
    bot = unit.payload["speakers_to_eval"][unit.conversation_ids.index(winner)]
    return bool(bot == _group(unit)[1])


def _adaptive_outcome(j: work.ScoredJudgment) -> tuple[str, str, str] | None:
    """(a, b, winner) of a stored comparison for the adaptive state; None for onboarding."""
    if j.question == "onboarding" or j.meta.get("onboarding"):
        return None
    winner, loser = j.meta.get("winner_bot"), j.meta.get("loser_bot")
    if not winner or not loser:
        return None
    return winner, loser, winner


def _elapsed(data: dict[str, Any], assignment: AssignmentInfo) -> float | None:
    raw = data.get("elapsed_ms")
    try:
        ms = float(raw) if raw is not None and raw != "" else None
    except (TypeError, ValueError):
        ms = None
    if ms is not None and 0 <= ms < 24 * 3600 * 1000:
        return ms / 1000.0
    if assignment.started_at is not None:
        return (clock.now() - assignment.started_at).total_seconds()
    return None
