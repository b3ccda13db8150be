"""Direct Assessment with a degraded quality-control bot (Ji et al. 2022).

A HIT (one unit) = one live conversation with each ordinary bot plus one with the QC bot
(`options.qc_bot`), in a shuffled, blind order stored as the assignment's shown order. Before each
chat the annotator names a topic of their choice (or, with `topic: icebreaker`, is given a sentence
of the bot's persona) and says whether they like it, are ambivalent or dislike it; a Topic button
records topic changes during the chat (events + conversation meta). The chat needs at least
`min_inputs` human inputs, enforced by the server. Then seven statements (questions.DA_STATEMENTS,
never the criterion names) on 0-100 sliders labelled only "strongly disagree" / "strongly agree":
question "ratings", value = the seven raw slider positions (records.py; negatives not reversed).

The per-annotator QC test itself belongs to the analysis; :func:`qc_status` computes it for the
admin page: one-sided Mann-Whitney U over the five positive criteria (QC-bot scores lower than the
ordinary bots' scores), pooled over all the annotator's HITs, pass when p < 0.05.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import JudgmentError
from ...personas import sample_persona
from ...plugin import (
    AdminSummary,
    AnnotatorInfo,
    AssignmentInfo,
    Outcome,
    Protocol,
    SchedulingView,
    StudyStore,
    session_progress,
)
from ...protocols.live import BOT, LiveProtocol, PageAction, awaiting_bot, human_messages, iso_now, now_ts, page_elapsed
from ...records import DA_CRITERIA, DA_NEGATIVE, Conversation, Turn
from ...scheduling.assign import Choice, assign_locked
from .options import DirectAssessmentOptions
from .questions import DA_SCALE_LABELS, DA_STATEMENTS

KIND = "da-hit"
QUESTION = "ratings"
OPINIONS = ("like", "ambivalent", "dislike")
MAX_TOPIC_CHARS = 200
MINUTES_PER_CONVERSATION = 6.0  # a chat of ten or more messages and seven ratings (header estimate)


def qc_status(db: StudyStore, annotator_id: int, alpha: float = 0.05) -> dict[str, Any]:
    """The annotator's QC test over all their rated conversations so far.

    {"p": float | None, "passed": bool | None, "n_qc": int, "n_ordinary": int, "reason": str | None};
    passed is None while there are no QC or no ordinary ratings yet. Negative criteria are reversed
    (100 - x) first, as the analysis does; the test uses the five positive criteria only.
    """
    import pandas as pd

    from ...stats import direct_assessment as da

    rows: list[dict[str, float]] = []  # annotator id, is_qc and the ratings (NaN: not answered)
    for j in db.list_judgments(annotator_id=annotator_id, question=QUESTION):
        if not isinstance(j.value, dict):
            continue
        row: dict[str, float] = {"annotator": annotator_id, "is_qc": bool(j.meta.get("qc"))}
        for c in DA_CRITERIA:
            v = j.value.get(c)
            row[c] = float(v) if v is not None else math.nan
        rows.append(row)
    n_qc = sum(r["is_qc"] for r in rows)
    n_ord = len(rows) - n_qc
    if not n_qc or not n_ord:
        return {
            "p": None,
            "passed": None,
            "n_qc": n_qc,
            "n_ordinary": n_ord,
            "reason": "no QC-bot rating yet" if not n_qc else "no ordinary-bot rating yet",
        }
    frame = da.reverse_negatives(pd.DataFrame(rows), DA_NEGATIVE)
    result = da.qc_test(frame, alpha=alpha).iloc[0]
    return {
        "p": float(result["p"]),
        "passed": bool(result["passed"]),
        "n_qc": int(n_qc),
        "n_ordinary": int(n_ord),
        "reason": result["reason"],
    }


def parse_slider(raw: Any, criterion: str) -> float:
    """A slider position 0..100; JudgmentError for anything else (a missing, 150, 'abc')."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise JudgmentError(f"Move every slider before you continue ({criterion!r} has no value).") from None
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise JudgmentError("Every rating must be between 0 and 100.")
    return int(value) if value == int(value) else value


class DirectAssessmentProtocol(LiveProtocol, Protocol[DirectAssessmentOptions]):
    method = "direct-assessment"
    template = "direct_assessment.html"
    title = "Direct Assessment of live conversations"

    work_kinds = ("da-hit",)  # a complete session: session_quota() of these

    fixed_opener = False
    # Smith et al. (2022)'s "greeting first" filter assumes the fixed "Hi!" opener; here nothing precedes it.
    skipped_message_checks = ("greeting_first",)

    def session_quota(self) -> int:
        return int(self.options.hits_per_annotator)

    def ordinary_bots(self) -> list[str]:
        return [b.name for b in self.config.bots if b.type != "imported" and b.name != self.options.qc_bot]

    def hit_bots(self) -> list[str]:
        return self.ordinary_bots() + [self.options.qc_bot]

    def prepare(self) -> int:
        self.config.bot(self.options.qc_bot)  # a clear error when the QC bot is not in the study
        return 0  # HITs are made when an annotator asks for work

    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None:
        cap = self.options.hits_per_annotator

        def choose(view: SchedulingView) -> Choice | None:
            if len(view.history) >= cap:
                return None
            bots = self.hit_bots()
            unit = view.create_unit(
                f"hit-{annotator.id}-{len(view.history) + 1}", KIND, [], {"bots": bots, "qc_bot": self.options.qc_bot}
            )
            order = list(bots)
            view.rng.shuffle(order)  # blind, shuffled order of the conversations (stored)
            return Choice(unit.id, shown_order=order, state={"index": 0, "stage": "topic"})

        return assign_locked(self, annotator, choose)

    # -- live conversation -------------------------------------------------------------------------
    def order(self, assignment: AssignmentInfo) -> list[str]:
        return list(assignment.shown_order or assignment.payload["bots"])

    def current_conversation_id(self, assignment: AssignmentInfo, state: dict[str, Any]) -> str:
        return f"live-{assignment.id}-{int(state.get('index', 0)) + 1}"

    def chat_bots(self, assignment: AssignmentInfo, state: dict[str, Any]) -> list[str]:
        return [self.order(assignment)[int(state.get("index", 0))]]

    def can_send(self, conv: Conversation, state: dict[str, Any]) -> str | None:
        if state.get("stage") != "chat":
            return "This conversation is over."
        if awaiting_bot(conv):
            return "Wait for your partner's answer."
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
        self.append_turn(conv, Turn(BOT, texts[0], bot=names[0]), also=self.saving_state(assignment, state))

    def icebreaker(self, assignment: AssignmentInfo, state: dict[str, Any]) -> tuple[list[str], str | None]:
        """The bot's persona for this conversation and, with topic: icebreaker, one of its sentences."""
        index = int(state.get("index", 0))
        key = f"persona{index}"
        if key not in state:
            rng = self.study.fresh_rng()
            persona = sample_persona(rng, 3)
            state[key] = {"persona": persona, "icebreaker": rng.choice(persona)}
            self.save_state(assignment, state)
        info = state[key]
        return info["persona"], (info["icebreaker"] if self.options.topic == "icebreaker" else None)

    # -- page ----------------------------------------------------------------------------------------
    def render(self, annotator: AnnotatorInfo, assignment: AssignmentInfo) -> dict[str, Any]:
        state = self.fresh_state(assignment)
        order = self.order(assignment)
        index = int(state.get("index", 0))
        stage = state.get("stage", "topic")
        ctx: dict[str, Any] = {
            "stage": stage,
            "position": index + 1,
            "total": len(order),
            "min_inputs": self.options.min_inputs,
            "opinions": OPINIONS,
            "statements": [(c, DA_STATEMENTS[c]) for c in DA_CRITERIA],
            "scale_labels": DA_SCALE_LABELS,
            "slots": 1,
            "turns": [],
            "inputs": 0,
            "topic_mode": self.options.topic,
        }
        if stage == "topic":
            _, ice = self.icebreaker(assignment, state)
            ctx["icebreaker"] = ice
            return ctx
        conv = self.load_conversation(self.current_conversation_id(assignment, state))
        if conv is None:  # should not happen: the topic step creates it
            ctx["stage"] = "topic"
            return ctx
        inputs = len(human_messages(conv, skip_fixed=False))
        if stage == "chat" and awaiting_bot(conv):
            ctx["stage"] = "waiting"
        ctx.update(
            turns=conv.turns,
            inputs=inputs,
            topic=conv.meta.get("topic"),
            topic_changes=state.get("topic_changes", {}).get(str(index), []),
            bot_error=self.chat_error(conv, state),
            can_finish=inputs >= self.options.min_inputs,
        )
        return ctx

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        if assignment is None:
            return None
        total = len(self.order(assignment))
        index = int(assignment.state.get("index", 0))
        stage = assignment.state.get("stage", "topic")
        detail = {"topic": "choose a topic", "chat": "chat", "rate": "rate the conversation"}.get(stage)
        part = {"topic": 0.0, "chat": 0.3, "rate": 0.8}.get(stage, 0.0)
        return session_progress(
            f"Conversation {min(index + 1, total)} of {total}",
            index + part,
            total,
            detail=detail,
            minutes_left=(total - index - part) * MINUTES_PER_CONVERSATION,
        )

    # -- actions -------------------------------------------------------------------------------------
    def page_actions(self) -> dict[str, PageAction]:
        return {
            "start_chat": self.act_start_chat,
            "topic": self.act_topic,
            "end_chat": self.act_end_chat,
            "rate": self.act_rate,
        }

    def act_start_chat(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        state = self.fresh_state(assignment)
        if state.get("stage", "topic") != "topic":
            return Outcome()  # a repeated submit
        persona, ice = self.icebreaker(assignment, state)
        topic = ice if ice is not None else str(data.get("topic") or "").strip()
        if not topic:
            raise JudgmentError("Name a topic you would like to talk about.")
        if len(topic) > MAX_TOPIC_CHARS:
            raise JudgmentError(f"A topic can have at most {MAX_TOPIC_CHARS} characters.")
        opinion = data.get("opinion")
        if opinion not in OPINIONS:
            raise JudgmentError("Say whether you like the topic, are ambivalent about it or dislike it.")
        index = int(state.get("index", 0))
        bot = self.order(assignment)[index]
        conv_id = self.current_conversation_id(assignment, state)
        self.create_conversation(
            conv_id,
            annotator,
            [bot],
            {
                "method": self.method,
                "topic": topic,
                "opinion": opinion,
                "topic_source": self.options.topic,
                "bot_persona": persona,
                "qc": bot == self.options.qc_bot,
                "position": index + 1,
                "unit": assignment.unit_external_id,
                "topic_changes": [],
            },
        )
        state["stage"] = "chat"
        # compare-and-set: of concurrent copies of this post only one moves on and logs the topic
        if not self.db.advance_state(assignment.id, "stage", (None, "topic"), state, self.expiry()):
            return Outcome()
        assignment.state = state
        self.db.log_event(
            "da-topic",
            {"conversation": conv_id, "topic": topic, "opinion": opinion},
            annotator_id=annotator.id,
        )
        return Outcome()

    def act_topic(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        """The Topic button: the annotator changes the topic during the chat."""
        state = self.fresh_state(assignment)
        if state.get("stage") != "chat":
            raise JudgmentError("Topic changes are recorded during a chat only.")
        topic = str(data.get("topic") or "").strip()[:MAX_TOPIC_CHARS]
        if not topic:
            raise JudgmentError("Write the new topic first.")
        conv = self.load_conversation(self.current_conversation_id(assignment, state))
        change = {"topic": topic, "after_turns": len(conv.turns) if conv else 0, "at": iso_now()}
        changes = state.setdefault("topic_changes", {}).setdefault(str(state.get("index", 0)), [])
        if data.get("request_id") in {c.get("request_id") for c in changes}:
            return Outcome()
        change["request_id"] = data.get("request_id")
        changes.append(change)
        self.save_state(assignment, state)
        self.db.log_event(
            "da-topic-change",
            {"conversation": conv.id if conv else None, **change},
            annotator_id=annotator.id,
        )
        return Outcome()

    def act_end_chat(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        state = self.fresh_state(assignment)
        if state.get("stage") == "rate":
            return Outcome()
        if state.get("stage") != "chat":
            raise JudgmentError("There is no chat to finish.")
        conv = self.load_conversation(self.current_conversation_id(assignment, state))
        if conv is None:
            raise JudgmentError("There is no chat to finish.")
        inputs = len(human_messages(conv, skip_fixed=False))
        need = self.options.min_inputs
        if inputs < need:
            raise JudgmentError(f"Please keep chatting: at least {need} messages are needed ({inputs} so far).")
        if awaiting_bot(conv):
            raise JudgmentError("Wait for your partner's answer first.")
        index = str(state.get("index", 0))
        meta = {
            **conv.meta,
            "topic_changes": [
                {k: v for k, v in c.items() if k != "request_id"} for c in state.get("topic_changes", {}).get(index, [])
            ],
            "ended_at": iso_now(),
        }
        conv.meta = meta
        state["stage"] = "rate"
        state["shown_at"] = now_ts()
        # the final meta (the turns are untouched) and the rating step: one commit
        self.db.set_conversation_meta(conv.id, meta, also=self.saving_state(assignment, state))
        self.finish_live(annotator, conv)
        return Outcome()

    def act_rate(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        state = self.fresh_state(assignment)
        try:
            position = int(data.get("position") or 0)
        except (TypeError, ValueError):
            raise JudgmentError("The form names no conversation; reload the page.") from None
        index = int(state.get("index", 0))
        if position != index + 1:
            if position <= index:
                return Outcome()  # a repeated submit of an earlier rating
            raise JudgmentError("This rating is for another conversation; reload the page.")
        if state.get("stage") != "rate":
            raise JudgmentError("Finish the chat before rating it.")
        value = {c: parse_slider(data.get(c), c) for c in DA_CRITERIA}
        bot = self.order(assignment)[index]
        conv_id = self.current_conversation_id(assignment, state)
        elapsed_s = page_elapsed(data, state)
        state["index"] = index + 1
        state["stage"] = "topic"
        done = state["index"] >= len(self.order(assignment))
        self.add_judgment(  # with the assignment's new state, or its end: one commit
            annotator,
            assignment,
            QUESTION,
            value,
            request_id=data.get("request_id"),
            conversation=conv_id,
            elapsed_s=elapsed_s,
            shown_order=self.order(assignment),
            meta={"system": bot, "qc": bot == self.options.qc_bot, "position": index + 1},
            finish=done,
            state={**state, "stage": "done"} if done else state,
        )
        return Outcome(done=done)

    # -- admin -----------------------------------------------------------------------------------------
    def qc_status(self, annotator_id: int) -> dict[str, Any]:
        return qc_status(self.db, annotator_id)

    def admin_summary(self) -> AdminSummary:
        summary = AdminSummary()
        judgments = self.db.list_judgments(question=QUESTION)
        per_bot: dict[str, int] = {}
        for j in judgments:
            per_bot[j.meta.get("system", "?")] = per_bot.get(j.meta.get("system", "?"), 0) + 1
        for bot in self.hit_bots():
            summary.progress.append({"bot": bot, "done": per_bot.get(bot, 0), "qc": bot == self.options.qc_bot})
        annotators = sorted({j.annotator_id for j in judgments})
        results = {a: qc_status(self.db, a) for a in annotators}
        decided = [r for r in results.values() if r["passed"] is not None]
        if decided:
            passed = sum(1 for r in decided if r["passed"])
            summary.headline.append({"label": "annotators passing the QC test", "value": f"{passed} of {len(decided)}"})
        names = {a["id"]: a["external_id"] for a in self.db.list_annotators()}
        for a, r in list(results.items())[:200]:
            verdict = "not yet tested" if r["passed"] is None else ("pass" if r["passed"] else "fail")
            p = f", p={r['p']:.3g}" if r["p"] is not None else ""
            summary.headline.append(
                {
                    "label": f"QC test of {names.get(a, a)}",
                    "value": f"{verdict}{p} ({r['n_qc']} QC / {r['n_ordinary']} ordinary scores)",
                }
            )
        summary.notes.append(
            "QC test: one-sided Mann-Whitney U, QC-bot scores < ordinary-bot scores on the five "
            "positive criteria, pooled over the annotator's HITs; pass when p < 0.05."
        )
        return summary
