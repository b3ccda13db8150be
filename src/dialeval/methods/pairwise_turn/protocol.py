"""PW-Turn (Smith et al. 2022, §3.1.2, Appendix A): live chat where two bots answer every turn.

The annotator plays a persona (two sentences), opens with the fixed "Hi!", and at each of the
bot's `bot_turns` turns sees both bots' replies to the same history in random order (stored). They
pick one for the question and justify it (checked by the server); the chosen reply becomes the
bot's turn and both bots continue from that shared history. One judgment per bot turn:
{"turn": i, "chosen": bot, "other": bot}.

Units: one per (bot pair, question), given to `conversations_per_pair` annotators; an annotator
gets each unit at most once (one conversation per annotator per bot pair and question).
Onboarding: a fixed conversation with four response pairs (onboarding_content.py); all four right,
`onboarding.tries` tries; a failure blocks or flags the annotator (`onboarding.on_fail`).
"""

from __future__ import annotations

from typing import Any

from ...errors import JudgmentError
from ...plugin import AdminSummary, AnnotatorInfo, AssignmentInfo, Outcome, Protocol, SchedulingView, session_progress
from ...protocols import onboarding_content as onb
from ...protocols.live import (
    BOT,
    LiveProtocol,
    PageAction,
    awaiting_bot,
    bot_turn_count,
    form_turn,
    now_ts,
    page_elapsed,
    persona_state,
)
from ...protocols.voters import voter_screen
from ...questions import Question
from ...records import Conversation, Turn, Unit
from ...scheduling.assign import Choice, assign_locked, bot_pairs, least_loaded, pair_key
from ...scheduling.plan import adaptive_note, adaptive_plan
from ...store import work
from .options import PairwiseTurnOptions
from .questions import PAIRWISE_TURN_QUESTIONS

KIND = "pw-turn"
MINUTES_PER_RESPONSE = 1.0  # a message, two replies read, one chosen and justified (header estimate)
ONBOARDING_QUESTION = "onboarding"
META_KEY = "pw_turn_onboarding"


class PairwiseTurnProtocol(LiveProtocol, Protocol[PairwiseTurnOptions]):
    method = "pairwise-turn"
    template = "pairwise_turn.html"
    title = "Pairwise per-turn comparison (PW-Turn)"
    progress_kind = KIND  # chat_position's count

    work_kinds = ("pw-turn",)  # a complete session: session_quota() of these

    # -- questions and units -----------------------------------------------------------------------
    def questions(self) -> list[Question]:
        out = []
        for q in self.config.questions or []:
            preset = PAIRWISE_TURN_QUESTIONS.get(q.id)
            out.append(Question(q.id, q.text or (preset.text if preset else q.id)))
        return out or [PAIRWISE_TURN_QUESTIONS["preference"]]

    def question(self, qid: str) -> Question:
        for q in self.questions():
            if q.id == qid:
                return q
        return Question(qid, PAIRWISE_TURN_QUESTIONS.get(qid, Question(qid, qid)).text)

    def pairs(self) -> list[tuple[str, str]]:
        names = [b.name for b in self.config.bots if b.type != "imported"]
        return bot_pairs(names, self.options.pairs)

    def prepare(self) -> int:
        units = [
            Unit(id=f"pwturn-{a}-{b}-{q.id}", kind=KIND, payload={"bots": [a, b], "question": q.id})
            for a, b in self.pairs()
            for q in self.questions()
        ]
        return self.db.add_units(self.method, units)

    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None:
        target = self.options.conversations_per_pair
        cap = self.config.annotation.units_per_annotator

        def choose(view: SchedulingView) -> Choice | None:
            adaptive = adaptive_plan(
                self,
                view,
                self.method,
                [q.id for q in self.questions()],
                _adaptive_outcome,
                judgments_per_unit=self.options.bot_turns,
            )
            if adaptive is not None and adaptive.stopped:
                return None  # the ranking is decided (or the budget spent): no more work
            if len(view.history) >= cap:
                return None
            seen = view.seen_units()
            open_units = [u for u in view.units(KIND) if u.id not in seen and view.used(u.id) < target]
            if adaptive is not None:
                # one unit per (bot pair, question): the pair from AdaptiveState.next_pair
                by_group = {(u.payload["question"], *pair_key(*u.payload["bots"])): u for u in open_units}
                used = {g: view.used(u.id) for g, u in by_group.items()}
                all_used: dict[str, int] = {}
                for u in view.units(KIND):
                    all_used[u.payload["question"]] = all_used.get(u.payload["question"], 0) + view.used(u.id)
                group = adaptive.pick(by_group, lambda g: used[g], view, question_load=lambda q: all_used.get(q, 0))
                unit = by_group[group] if group is not None else None
            else:
                unit = least_loaded(open_units, lambda u: view.used(u.id), view.rng)
            if unit is None:
                return None
            return Choice(unit.id, shown_order=None, state=persona_state(view.rng))

        return assign_locked(self, annotator, choose)

    # -- the live conversation ------------------------------------------------------------------------
    def conversation(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, state: dict[str, Any]) -> Conversation:
        bots = list(assignment.payload["bots"])
        return self.persona_conversation(annotator, assignment, state, bots, question=assignment.payload["question"])

    def chat_bots(self, assignment: AssignmentInfo, state: dict[str, Any]) -> list[str]:
        bots = list(assignment.payload["bots"])
        self.study.fresh_rng().shuffle(bots)  # random order per turn, stored with the candidates
        return bots

    def replies_pending(self, state: dict[str, Any]) -> bool:
        return bool(state.get("pending"))

    def can_send(self, conv: Conversation, state: dict[str, Any]) -> str | None:
        if state.get("pending"):
            return "First choose one of the two responses."
        if awaiting_bot(conv):
            return "Wait for your partner's answer."
        if bot_turn_count(conv) >= self.options.bot_turns:
            return "This conversation is complete."
        return None

    def store_replies(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        conv: Conversation,
        state: dict[str, Any],
        names: list[str],
        texts: list[str],
    ) -> None:
        state["pending"] = {
            "turn": bot_turn_count(conv) + 1,
            "turns": len(conv.turns),
            "order": list(names),
            "candidates": [{"bot": n, "text": t} for n, t in zip(names, texts)],
            "shown_at": now_ts(),
        }
        self.save_state(assignment, state)

    def finish_live(self, annotator: AnnotatorInfo, conversation: Conversation) -> list[str]:
        # the justifications are checked once the conversation is over, after the message filters
        flags = super().finish_live(annotator, conversation)
        self.check_justifications(annotator.id)
        return flags

    # -- onboarding ---------------------------------------------------------------------------------
    def onboarding_needed(self, annotator: AnnotatorInfo) -> bool:
        if not self.config.onboarding.enabled:
            return False
        info = annotator.meta.get(META_KEY) or {}
        return not (info.get("passed") or info.get("failed"))

    def onboarding_view(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, state: dict[str, Any]
    ) -> dict[str, Any]:
        orders = state.get("onboarding_orders")
        if not orders:
            orders = onb.shuffled_orders(self.study.fresh_rng())
            state["onboarding_orders"] = orders
            self.save_state(assignment, state)
        info = annotator.meta.get(META_KEY) or {}
        steps = [{"human": s.human, "options": [s.candidates[i] for i in order]} for s, order in zip(onb.STEPS, orders)]
        tries = int(info.get("tries", 0))
        return {
            "steps": steps,
            "tries_left": self.config.onboarding.tries - tries,
            "tries_used": tries,
            "persona": list(onb.PERSONA),
        }

    def act_onboarding(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        request_id = data.get("request_id")
        if request_id and self.db.judgment_exists(annotator.id, request_id):
            return Outcome()  # a double submit of a practice answer already stored: harmless
        state = self.fresh_state(assignment)
        orders = state.get("onboarding_orders")
        if not orders:
            raise JudgmentError("Reload the page to see the practice conversation.")
        answers: list[int | None] = []
        for k, order in enumerate(orders):
            raw = data.get(f"step{k}")
            if raw not in ("0", "1"):
                raise JudgmentError(f"Choose a response for every turn (turn {k + 1} has none).")
            answers.append(order[int(raw)])
        current = self.db.get_annotator(annotator.id)  # read again: the tries so far are in its meta
        info = dict((current.meta if current is not None else {}).get(META_KEY) or {})
        if info.get("passed"):
            return Outcome()
        tries = int(info.get("tries", 0)) + 1
        ok = onb.passed(answers)
        self.add_judgment(
            annotator,
            assignment,
            ONBOARDING_QUESTION,
            {"answers": answers, "correct": onb.score(answers), "passed": ok, "try": tries},
            request_id=data.get("request_id"),
            elapsed_s=page_elapsed(data),
            shown_order=orders,
        )
        info.update(tries=tries, passed=ok)
        state.pop("onboarding_orders", None)
        if ok:
            self.db.update_annotator_meta(annotator.id, **{META_KEY: info})
            self.save_state(assignment, state)
            return Outcome(data={"onboarding": "passed"})
        if tries >= self.config.onboarding.tries:
            info["failed"] = True
            self.db.update_annotator_meta(annotator.id, **{META_KEY: info})
            block = self.config.onboarding.on_fail == "block"
            self.flag(annotator.id, ["onboarding_failed"], block=block)
            self.save_state(assignment, state)
            if block:
                self.db.submit_assignment(assignment.id, state={**state, "ended": "onboarding_failed"})
                return Outcome(done=True, redirect=self.study.url("done"), data={"onboarding": "failed"})
            return Outcome(data={"onboarding": "failed"})
        self.db.update_annotator_meta(annotator.id, **{META_KEY: info})
        state["onboarding_message"] = (
            f"{onb.score(answers)} of {len(onb.STEPS)} answers were right. "
            "Read the conversation again and try once more."
        )
        self.save_state(assignment, state)
        return Outcome(data={"onboarding": "retry"})

    # -- page ----------------------------------------------------------------------------------------
    def render(self, annotator: AnnotatorInfo, assignment: AssignmentInfo) -> dict[str, Any]:
        state = self.fresh_state(assignment)
        question = self.question(assignment.payload["question"])
        ctx: dict[str, Any] = {
            "question": question,
            "persona": state.get("persona", []),
            "bot_turns": self.options.bot_turns,
        }
        if self.onboarding_needed(annotator):
            ctx.update(
                stage="onboarding",
                onboarding=self.onboarding_view(annotator, assignment, state),
                onboarding_message=state.get("onboarding_message"),
            )
            return ctx
        conv = self.conversation(annotator, assignment, state)
        pending = state.get("pending")
        if pending and pending.get("turns") != len(conv.turns):
            pending = None  # stale (should not happen): ask again
        if pending:
            stage = "choose"
        elif bot_turn_count(conv) >= self.options.bot_turns:
            stage = "complete"
        elif awaiting_bot(conv):
            stage = "waiting"
        else:
            stage = "chat"
        ctx.update(
            stage=stage,
            turns=conv.turns,
            pending=pending,
            slots=2,
            bot_error=self.chat_error(conv, state),
            turn_number=bot_turn_count(conv) + 1,
        )
        return ctx

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        if assignment is None:
            return None
        turns = self.options.bot_turns
        total = min(self.config.annotation.units_per_annotator, max(1, len(self.pairs()) * len(self.questions())))
        if self.onboarding_needed(annotator):
            return session_progress(
                "Practice",
                0,
                total * turns,
                detail=f"{len(onb.STEPS)} turns to check",
                minutes_left=2 + total * turns * MINUTES_PER_RESPONSE,
            )
        at = self.chat_position(annotator, assignment, KIND, total, turns)
        return at.progress(f"Response {min(at.done + 1, turns)} of {turns}", at.left * MINUTES_PER_RESPONSE)

    # -- actions -------------------------------------------------------------------------------------
    async def act(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]
    ) -> Outcome:
        if action in {"send", "reply", "watch"} and self.onboarding_needed(annotator):
            raise JudgmentError("Finish the practice conversation first.")
        return await super().act(annotator, assignment, action, data)

    def page_actions(self) -> dict[str, PageAction]:
        return {"choose": self.act_choose, "onboarding": self.act_onboarding}

    def act_choose(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        state = self.fresh_state(assignment)
        conv = self.conversation(annotator, assignment, state)
        pending = state.get("pending")
        turn = form_turn(data)
        if not pending:
            if bot_turn_count(conv) >= turn > 0:
                return Outcome(done=assignment.status != "assigned")  # a repeated submit
            raise JudgmentError("There is no pair of responses to choose from now; reload the page.")
        if turn != pending["turn"]:
            raise JudgmentError("This choice is for another turn; reload the page.")
        choice = data.get("choice")
        if choice not in ("0", "1"):
            raise JudgmentError("Choose one of the two responses.")
        justification = self.check_justification(data.get("justification"))
        chosen = int(choice)
        cands = pending["candidates"]
        winner, other = cands[chosen]["bot"], cands[1 - chosen]["bot"]
        qid = assignment.payload["question"]
        self.add_judgment(
            annotator,
            assignment,
            qid,
            {"turn": turn, "chosen": winner, "other": other},
            request_id=data.get("request_id"),
            conversation=conv.id,
            justification=justification,
            elapsed_s=page_elapsed(data, pending),
            shown_order=list(pending["order"]),
            meta={"question_text": self.question(qid).text},
        )
        current = self.load_conversation(conv.id)
        if current is not None and len(current.turns) == pending["turns"]:
            self.append_turn(
                current,
                Turn(
                    BOT,
                    cands[chosen]["text"],
                    bot=winner,
                    candidates=cands,
                    chosen=chosen,
                    meta={"shown_order": list(pending["order"]), "turn": turn},
                ),
            )
            conv = current
        state.pop("pending", None)
        if bot_turn_count(conv) >= self.options.bot_turns:
            return self.complete_chat(annotator, assignment, conv, state)
        self.save_state(assignment, state)
        return Outcome()

    # -- admin -----------------------------------------------------------------------------------
    def admin_summary(self) -> AdminSummary:
        judgments = [
            j
            for j in self.db.list_judgments()
            if j.question != ONBOARDING_QUESTION and isinstance(j.value, dict) and "chosen" in j.value
        ]
        summary = AdminSummary()
        target = self.options.conversations_per_pair
        load = self.db.unit_load(KIND)
        for u in self.db.list_units(KIND):
            a, b = u.payload["bots"]
            summary.progress.append(
                {
                    "pair": f"{a} vs {b}",
                    "question": u.payload["question"],
                    "done": load.get(u.id, {}).get("submitted", 0),
                    "target": target,
                }
            )
        for a, b in self.pairs():
            wins_a = sum(
                1
                for j in judgments
                if j.annotator_status == "active"
                and {j.value["chosen"], j.value["other"]} == {a, b}
                and j.value["chosen"] == a
            )
            n = sum(
                1
                for j in judgments
                if j.annotator_status == "active" and {j.value["chosen"], j.value["other"]} == {a, b}
            )
            if n:
                summary.headline.append({"label": f"{a} chosen over {b}", "value": f"{100 * wins_a / n:.0f}% (n={n})"})
        note = adaptive_note(self)
        if note:
            summary.notes.append(note)
        voter_screen(self, summary, _adaptive_outcome)
        return summary


def _adaptive_outcome(j: work.ScoredJudgment) -> tuple[str, str, str] | None:
    """(a, b, winner) of one turn judgment for the adaptive state; None for onboarding."""
    v = j.value if isinstance(j.value, dict) else {}
    if j.question == ONBOARDING_QUESTION or v.get("chosen") is None or v.get("other") is None:
        return None
    return v["chosen"], v["other"], v["chosen"]
