"""SM-Turn + SM-Dialog (Smith et al. 2022, §3.1.4): live chat with one bot, rated per turn and at the end.

Same setting as PW-Turn (persona, fixed "Hi!", `bot_turns` bot turns). After each bot message the
annotator ticks which qualities it has (engaging, human-like, interesting) or "none of these":
question "turn", value {"turn": i, "engaging": bool, "humanlike": bool, "interesting": bool}.
At the end three 1-5 Likert ratings: question "dialog", value {"engaging": 1..5, ...}.

Units: one per bot, each given to `conversations_per_bot` annotators, least-used bot first (all
bots run in the same period); one conversation per annotator per bot.
"""

from __future__ import annotations

from typing import Any

from ...errors import JudgmentError
from ...plugin import AdminSummary, AnnotatorInfo, AssignmentInfo, Outcome, Protocol, SchedulingView
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
from ...records import SM_QUALITIES, Conversation, Turn, Unit
from ...scheduling.assign import Choice, assign_locked, least_loaded
from .options import SingleModelOptions
from .questions import SINGLE_MODEL_DIALOG_QUESTIONS, SINGLE_MODEL_TURN_QUALITIES

KIND = "sm-chat"
MINUTES_PER_MESSAGE = 0.75  # writing a message and ticking its qualities (header estimate)
LIKERT = (1, 2, 3, 4, 5)


class SingleModelProtocol(LiveProtocol, Protocol[SingleModelOptions]):
    method = "single-model"
    template = "single_model.html"
    title = "Single-model per-turn and per-dialogue ratings (SM-Turn, SM-Dialog)"
    progress_kind = KIND  # chat_position's count

    work_kinds = ("sm-chat",)  # a complete session: session_quota() of these

    def bots(self) -> list[str]:
        return [b.name for b in self.config.bots if b.type != "imported"]

    def prepare(self) -> int:
        units = [Unit(id=f"single-{b}", kind=KIND, payload={"bot": b}) for b in self.bots()]
        return self.db.add_units(self.method, units)

    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None:
        target = self.options.conversations_per_bot
        cap = self.config.annotation.units_per_annotator

        def choose(view: SchedulingView) -> Choice | None:
            if len(view.history) >= cap:
                return None
            seen = view.seen_units()
            open_units = [u for u in view.units(KIND) if u.id not in seen and view.used(u.id) < target]
            unit = least_loaded(open_units, lambda u: view.used(u.id), view.rng)
            if unit is None:
                return None
            return Choice(unit.id, shown_order=[unit.payload["bot"]], state=persona_state(view.rng))

        return assign_locked(self, annotator, choose)

    # -- live conversation ------------------------------------------------------------------------
    def conversation(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, state: dict[str, Any]) -> Conversation:
        return self.persona_conversation(annotator, assignment, state, [assignment.payload["bot"]])

    def chat_bots(self, assignment: AssignmentInfo, state: dict[str, Any]) -> list[str]:
        return [assignment.payload["bot"]]

    def stage(self, conv: Conversation, state: dict[str, Any]) -> str:
        n = bot_turn_count(conv)
        if awaiting_bot(conv):
            return "waiting"
        if n > 0 and n not in state.get("rated", []):
            return "check"
        if n >= self.options.bot_turns:
            return "final"
        return "chat"

    def can_send(self, conv: Conversation, state: dict[str, Any]) -> str | None:
        stage = self.stage(conv, state)
        if stage == "check":
            return "First tick the qualities of your partner's last message (or 'none of these')."
        if stage == "waiting":
            return "Wait for your partner's answer."
        if stage == "final":
            return "The conversation is complete; please rate it."
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
        state["shown_at"] = now_ts()
        turn = Turn(BOT, texts[0], bot=names[0], meta={"turn": bot_turn_count(conv) + 1})
        self.append_turn(conv, turn, also=self.saving_state(assignment, state))  # one commit

    # -- page ----------------------------------------------------------------------------------------
    def render(self, annotator: AnnotatorInfo, assignment: AssignmentInfo) -> dict[str, Any]:
        state = self.fresh_state(assignment)
        conv = self.conversation(annotator, assignment, state)
        return {
            "stage": self.stage(conv, state),
            "turns": conv.turns,
            "persona": state.get("persona", []),
            "ratings": state.get("ratings", {}),
            "qualities": SINGLE_MODEL_TURN_QUALITIES,
            "dialog_questions": SINGLE_MODEL_DIALOG_QUESTIONS,
            "likert": LIKERT,
            "slots": 1,
            "bot_error": self.chat_error(conv, state),
            "turn_number": bot_turn_count(conv),
            "bot_turns": self.options.bot_turns,
        }

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        if assignment is None:
            return None
        turns = self.options.bot_turns
        total = min(self.config.annotation.units_per_annotator, max(1, len(self.bots())))
        at = self.chat_position(annotator, assignment, KIND, total, turns)
        stage = self.stage(at.conversation, assignment.state) if at.conversation else "chat"
        current = at.done if stage in ("check", "final") else at.done + 1  # the message being rated, or the next one
        detail = "rate the conversation" if stage == "final" else f"Partner message {min(current, turns)} of {turns}"
        return at.progress(detail, at.left * MINUTES_PER_MESSAGE + (total - at.k + 1))

    # -- actions ----------------------------------------------------------------------------------------
    def page_actions(self) -> dict[str, PageAction]:
        return {"rate": self.act_rate, "final": self.act_final}

    def act_rate(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        state = self.fresh_state(assignment)
        conv = self.conversation(annotator, assignment, state)
        n = bot_turn_count(conv)
        turn = form_turn(data)
        if turn in state.get("rated", []):
            return Outcome()  # a repeated submit
        if turn != n or n == 0 or awaiting_bot(conv):
            raise JudgmentError("This rating is for another message; reload the page.")
        checked = data.get("quality") or []
        checked = [checked] if isinstance(checked, str) else list(checked)
        none = data.get("none") in ("1", "on", "true", "yes")
        unknown = [c for c in checked if c not in SM_QUALITIES]
        if unknown:
            raise JudgmentError(f"Unknown quality {unknown[0]!r}.")
        if not checked and not none:
            raise JudgmentError("Tick at least one quality, or 'none of these'.")
        if checked and none:
            raise JudgmentError("'None of these' cannot be ticked together with a quality.")
        value = {"turn": turn, **{q: q in checked for q in SM_QUALITIES}}
        elapsed_s = page_elapsed(data, state)
        state["rated"] = sorted(set(state.get("rated", [])) | {turn})
        state.setdefault("ratings", {})[str(turn)] = [q for q in SM_QUALITIES if value[q]]
        state["shown_at"] = now_ts()
        self.add_judgment(  # with the new state: one commit
            annotator,
            assignment,
            "turn",
            value,
            request_id=data.get("request_id"),
            conversation=conv.id,
            elapsed_s=elapsed_s,
            shown_order=[assignment.payload["bot"]],
            state=state,
        )
        return Outcome()

    def act_final(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        state = self.fresh_state(assignment)
        conv = self.conversation(annotator, assignment, state)
        if self.stage(conv, state) != "final":
            raise JudgmentError("The conversation is not finished yet.")
        value = {}
        for q in SM_QUALITIES:
            raw = data.get(q)
            try:
                v = int(raw) if raw is not None else None
            except (TypeError, ValueError):
                v = None
            if v is None:
                raise JudgmentError(f"Answer every question ({SINGLE_MODEL_DIALOG_QUESTIONS[q]}).")
            if v not in LIKERT:
                raise JudgmentError("Each rating must be between 1 and 5.")
            value[q] = v
        self.add_judgment(
            annotator,
            assignment,
            "dialog",
            value,
            request_id=data.get("request_id"),
            conversation=conv.id,
            elapsed_s=page_elapsed(data, state),
            shown_order=[assignment.payload["bot"]],
            finish=True,  # the assignment ends with its last judgment: one commit
            state={**state, "ended": "complete"},
        )
        self.finish_live(annotator, conv)
        return Outcome(done=True)

    def admin_summary(self) -> AdminSummary:
        summary = AdminSummary()
        target = self.options.conversations_per_bot
        load = self.db.unit_load(KIND)
        units = self.db.list_units(KIND)
        unit_bot = {u.id: u.payload["bot"] for u in units}
        for u in units:
            summary.progress.append(
                {"bot": u.payload["bot"], "done": load.get(u.id, {}).get("submitted", 0), "target": target}
            )
        dialogs: dict[str, list[float]] = {}
        for j in self.db.list_judgments(question="dialog"):
            if j.annotator_status == "active" and isinstance(j.value, dict) and j.unit_id in unit_bot:
                dialogs.setdefault(unit_bot[j.unit_id], []).append(sum(j.value.values()) / len(j.value))
        for bot, scores in sorted(dialogs.items()):
            summary.headline.append(
                {
                    "label": f"{bot}: mean SM-Dialog rating",
                    "value": f"{sum(scores) / len(scores):.2f} (n={len(scores)})",
                }
            )
        return summary
