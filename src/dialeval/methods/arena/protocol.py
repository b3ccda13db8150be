"""The live arena battle (Chatbot Arena, Chiang et al. 2024; FastChat issue #3210).

The annotator chats with two anonymous bots at once, shown side by side as Model A and Model B
(the sides drawn at random per battle and stored). Both bots answer every message, streamed as
they come (the live-chat engine, protocols/live.py). The annotator votes A / B / tie / both bad:

- ``vote: per-turn``: after each round of replies. With ``continue_with: chosen`` the preferred
  reply continues both conversations (as PW-Turn does; a tie or "both bad" continues with one of
  the two drawn at random, stored); with ``own`` each bot keeps its own history.
- ``vote: end``: once, after one to ``turns`` messages.

A vote can be changed for ``change_seconds`` (10 s) after it is cast. Until then it is held in the
assignment's state (so a refresh shows it); it becomes a judgment -- final -- once the window is
over, at the next request of that assignment (a page load, the next message, "Next battle"), or
earlier when the annotator moves on (sends the next message or finishes the battle), or when anyone
is given work after the window (a tab closed inside it: `finalize_due_votes`). The server refuses a
change after the window.

Once the battle's last vote is final the battle is closed and the page names the two models (as
Chatbot Arena does after its vote): every vote was cast blind, and nothing can be added to the battle
after the names are shown, so the reveal never touches a vote marked anonymous.

A bot that names itself (its configured name or a listed alias, case-insensitive, as a whole word)
in any reply of the battle makes the battle's later votes non-anonymous: they are stored with
``"anonymous": false`` and left out of the leaderboard (analysis.py counts them).

Judgment (question ``battle``, the contract of records.py shared with the Arena importer):
``{"model_a", "model_b", "winner": "model_a"|"model_b"|"tie"|"tie (bothbad)", "turn", "anonymous",
"revealed"}``; meta ``battle`` names the battle (and turn), ``changes`` counts changed votes.

Units: one per bot pair, given to ``battles_per_pair`` annotators (each annotator at most once);
with ``adaptive.enabled`` the pair comes from the anytime-valid scheduler (scheduling/assign.py).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Collection
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any

from ...bots.base import Bot, BotContext, ChatMessage
from ...errors import DialevalError, JudgmentError
from ...plugin import AdminSummary, AnnotatorInfo, AssignmentInfo, Outcome, Protocol, SchedulingView, StudyContext
from ...protocols.live import (
    BOT,
    HUMAN,
    LiveProtocol,
    PageAction,
    awaiting_bot,
    bot_turn_count,
    now_ts,
    page_elapsed,
    run_in_thread,
)
from ...protocols.voters import voter_screen
from ...records import Conversation, Turn, Unit
from ...scheduling.assign import Choice, assign_locked, bot_pairs, least_loaded, pair_key
from ...scheduling.plan import adaptive_note, adaptive_plan
from ...store import work
from .options import ArenaOptions

if TYPE_CHECKING:
    from ...store.facade import Transaction
    from ...study import OpenStudy

KIND = "arena-battle"
QUESTION = "battle"
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
WINNER_LABELS = {
    "model_a": "Model A is better",
    "model_b": "Model B is better",
    "tie": "Tie",
    "tie (bothbad)": "Both are bad",
}
SIDE_LABELS = ("Model A", "Model B")
MINUTES_PER_ROUND = 0.75  # a message written, two replies read, one vote (assumption, see planning)


@cache
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(name.strip())}(?![\w])", re.IGNORECASE)


def reveals(text: str, names: list[str]) -> bool:
    """True when `text` contains one of `names` as a whole word, ignoring case.

    >>> reveals("Hi, I am ELIZA.", ["eliza"]), reveals("elizabeth", ["eliza"]), reveals("x", [""])
    (True, False, False)
    """
    return any(n.strip() and _name_pattern(n).search(text) for n in names)


def side_history(turns: list[Turn], bot: str, own: bool) -> list[ChatMessage]:
    """The conversation as `bot` sees it: its own replies (`own`) or the continuing ones."""
    out = []
    for t in turns:
        if t.speaker == HUMAN:
            out.append(ChatMessage(role="user", text=t.text))
            continue
        text = t.text
        if own:
            text = next((c["text"] for c in t.candidates or [] if c.get("bot") == bot), t.text)
        out.append(ChatMessage(role="assistant", text=text))
    return out


class ArenaProtocol(LiveProtocol, Protocol[ArenaOptions]):
    method = "arena"
    template = "arena.html"
    title = "Arena battle: chat with two anonymous bots and vote"
    progress_kind = KIND  # chat_position's count
    fixed_opener = False  # the annotator opens the battle with a message of their own
    work_kinds = (KIND,)

    def __init__(self, study: StudyContext):
        super().__init__(study)
        if len(self.pairs()) == 0:  # e.g. a study made by `dialeval import arena`: analysed, not served
            raise DialevalError(
                f"arena study '{study.config.name}' has no two bots to chat with (imported battles are "
                "analysed with dialeval report, not served)"
            )

    # -- units and scheduling ----------------------------------------------------------------------
    def pairs(self) -> list[tuple[str, str]]:
        names = [b.name for b in self.config.bots if b.type != "imported"]
        return bot_pairs(names, self.options.pairs)

    def prepare(self) -> int:
        units = [Unit(id=f"arena-{a}-{b}", kind=KIND, payload={"bots": [a, b]}) for a, b in self.pairs()]
        return self.db.add_units(self.method, units)

    def votes_per_battle(self) -> int:
        return self.options.turns if self.options.vote == "per-turn" else 1

    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None:
        self.finalize_due_votes()  # before the scheduler can expire an assignment holding one
        target = self.options.battles_per_pair
        cap = self.config.annotation.units_per_annotator

        def choose(view: SchedulingView) -> Choice | None:
            adaptive = adaptive_plan(
                self, view, self.method, [QUESTION], adaptive_outcome, judgments_per_unit=self.votes_per_battle()
            )
            if adaptive is not None and adaptive.stopped:
                return None  # the ranking is decided (or the budget spent)
            if len(view.history) >= cap:
                return None
            seen = view.seen_units()
            open_units = [u for u in view.units(KIND) if u.id not in seen and view.used(u.id) < target]
            if adaptive is not None:
                by_group = {(QUESTION, *pair_key(*u.payload["bots"])): u for u in open_units}
                group = adaptive.pick(by_group, lambda g: view.used(by_group[g].id), view)
                unit = by_group[group] if group is not None else None
            else:
                unit = least_loaded(open_units, lambda u: view.used(u.id), view.rng)
            if unit is None:
                return None
            sides = list(unit.payload["bots"])
            view.rng.shuffle(sides)  # which bot is Model A: random per battle, stored
            return Choice(unit.id, shown_order=sides, state={"sides": sides})

        return assign_locked(self, annotator, choose)

    # -- the live conversation ---------------------------------------------------------------------
    def sides(self, assignment: AssignmentInfo, state: dict[str, Any]) -> list[str]:
        return list(state.get("sides") or assignment.shown_order or assignment.payload["bots"])

    def conversation(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, state: dict[str, Any], *, create: bool = True
    ) -> Conversation:
        """The battle's conversation; without `create`, one not stored yet stays so (the task page
        shows it empty: the first message stores it, new_conversation)."""
        sides = self.sides(assignment, state)
        conv_id = self.current_conversation_id(assignment, state)
        meta = {"method": self.method, "sides": sides, "unit": assignment.unit_external_id, "vote": self.options.vote}
        if create:
            return self.create_conversation(conv_id, annotator, sides, meta)
        stored = self.load_conversation(conv_id)
        return stored if stored is not None else self.unsaved_conversation(conv_id, annotator, sides, meta)

    def new_conversation(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, state: dict[str, Any]
    ) -> Conversation | None:
        return self.conversation(annotator, assignment, state, create=False)

    def chat_bots(self, assignment: AssignmentInfo, state: dict[str, Any]) -> list[str]:
        return self.sides(assignment, state)  # slot 0 = Model A, slot 1 = Model B

    def replies_pending(self, state: dict[str, Any]) -> bool:
        return bool(state.get("pending"))

    def can_send(self, conv: Conversation, state: dict[str, Any]) -> str | None:
        if state.get("pending") and not state.get("vote"):
            return "First vote on the two replies."
        if state.get("vote") and self.options.vote == "end":
            return "You have voted; this battle is over."
        if awaiting_bot(conv):
            return "Wait for both answers."
        if bot_turn_count(conv) >= self.options.turns:
            return "This battle is complete: vote now."
        return None

    def failure_notice(self, slots: list[int]) -> str:
        # the side, never the bot: a name, URL or error text would end the battle's anonymity
        if len(slots) == 1:
            return f"{SIDE_LABELS[slots[0]]} could not answer; try again."
        return "Neither model could answer; try again."

    def names_of(self, bot: str) -> list[str]:
        return [bot, *self.options.aliases.get(bot, [])]

    def store_replies(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        conv: Conversation,
        state: dict[str, Any],
        names: list[str],
        texts: list[str],
    ) -> None:
        turn = bot_turn_count(conv) + 1
        cands = [{"bot": n, "text": t} for n, t in zip(names, texts)]
        revealed = sorted(
            set(state.get("revealed") or []) | {n for n, t in zip(names, texts) if reveals(t, self.names_of(n))}
        )
        state["revealed"] = revealed
        if self.options.vote == "per-turn":
            state["pending"] = {"turn": turn, "turns": len(conv.turns), "candidates": cands, "shown_at": now_ts()}
            self.save_state(assignment, state)
        else:  # end: the round goes straight into the conversation (one commit with the state); one vote at the end
            state["shown_at"] = now_ts()
            self.append_turn(
                conv,
                Turn(BOT, texts[0], bot=names[0], candidates=cands, meta={"turn": turn, "sides": names}),
                also=self.saving_state(assignment, state),
            )

    def generation_bots(self, conv: Conversation, names: list[str]) -> tuple[list[Bot], list[ChatMessage]]:
        # Each side may see a history of its own (continue_with: own): one generation, one slot per
        # side, each slot's bot wrapped with its side's history (so the shared history is unused).
        own = self.options.continue_with == "own"
        return [_WithHistory(self.study.bot(n), side_history(conv.turns, n, own)) for n in names], []

    # -- votes -------------------------------------------------------------------------------------
    def window_left(self, vote: dict[str, Any]) -> float:
        return max(0.0, float(vote["at"]) + float(self.options.change_seconds) - now_ts())

    def finalize(
        self,
        annotator: AnnotatorInfo,
        assignment: AssignmentInfo,
        state: dict[str, Any],
        *,
        force: bool = False,
        request_id: str | None = None,
    ) -> bool:
        """Make the held vote a judgment when its change window is over (or `force`: the annotator
        moved on). The judgment's request id is the vote's, or `request_id` of the request that made
        it final ("next": a repeated click on a finished battle is then recognised as a repeat).
        True when the battle is now complete (the assignment is submitted)."""
        vote = state.get("vote")
        if not vote or (not force and self.window_left(vote) > 0):
            return False
        conv = self.conversation(annotator, assignment, state)
        sides = self.sides(assignment, state)
        turn = int(vote["turn"])
        per_turn = self.options.vote == "per-turn"
        pending = state.pop("pending", None)
        state.pop("vote", None)
        complete = not per_turn or turn >= self.options.turns  # the battle's last vote
        if complete:
            state["ended"] = "complete"

        # The judgment, the reply that continues the battle and the assignment's new state (or its
        # end) are one transaction: one commit per vote, nothing half done after a crash.
        def store_vote(session: Transaction | None = None) -> None:
            self.add_judgment(
                annotator,
                assignment,
                QUESTION,
                {
                    "model_a": sides[0],
                    "model_b": sides[1],
                    "winner": vote["winner"],
                    "turn": turn,
                    "anonymous": not vote.get("revealed"),
                    "revealed": list(vote.get("revealed") or []),
                },
                request_id=request_id or vote["request_id"],
                conversation=conv.id,
                elapsed_s=vote.get("elapsed_s"),
                shown_order=sides,
                meta={
                    "battle": f"{conv.id}/{turn}" if per_turn else conv.id,
                    "changes": int(vote.get("changes", 0)),
                    "vote": self.options.vote,
                },
                finish=complete,
                state=state,
                session=session,
            )

        if per_turn and pending and len(conv.turns) == pending["turns"]:
            cands = pending["candidates"]
            chosen = {"model_a": 0, "model_b": 1}.get(vote["winner"])
            if chosen is None:
                chosen = int(vote.get("tie_pick", 0))  # a tie continues with the reply drawn at the vote
            self.append_turn(
                conv,
                Turn(
                    BOT,
                    cands[chosen]["text"],
                    bot=cands[chosen]["bot"],
                    candidates=cands,
                    chosen=chosen,
                    meta={"turn": turn, "vote": vote["winner"], "sides": sides},
                ),
                at=pending["turns"],  # two requests finalising the same vote at once add it once
                also=store_vote,
            )
        else:
            store_vote()
        if complete:
            self.finish_live(annotator, conv)
        return complete

    def finalize_due_votes(self, *, gone: Collection[int] = ()) -> int:
        """Make final every held vote whose change window is over, also when its annotator never sends
        another request (a tab closed within the window): run whenever someone is given work, when
        the admin page is read and before a report, so such a vote counts before its assignment can
        expire. `gone`: annotator ids who have left for good (a simulated crowd at its end): their held
        votes are made final inside the window too, as no one is left to change them. Safe
        beside the annotator's own requests: the judgment is idempotent by its request id, the
        continuing reply is added once. Returns the votes made final."""
        done = 0
        for assignment in self.db.open_assignments_holding("vote"):
            vote = assignment.state.get("vote") or {}
            leaving = assignment.annotator_id in gone
            if not vote.get("at") or (self.window_left(vote) > 0 and not leaving):
                continue
            annotator = self.db.get_annotator(assignment.annotator_id)
            if annotator is None:
                continue
            self.finalize(annotator, assignment, dict(assignment.state), force=leaving)
            done += 1
        return done

    def act_vote(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        request_id = data.get("request_id")
        state = self.fresh_state(assignment)
        held = state.get("vote")
        if held and held.get("request_id") == request_id:
            return Outcome()  # a double submit of the vote just held
        if request_id and self.db.judgment_exists(annotator.id, request_id):
            return Outcome(done=assignment.status != "assigned")  # already final
        winner = data.get("winner")
        if winner not in WINNERS:
            raise JudgmentError("Choose Model A, Model B, Tie or Both are bad.")
        if held:
            if self.window_left(held) <= 0:
                done = self.finalize(annotator, assignment, state)
                raise JudgmentError(
                    f"Your vote is final: a vote can be changed for {self.options.change_seconds:g} s only."
                    + (" This battle is complete." if done else "")
                )
            held.update(winner=winner, request_id=request_id, changes=int(held.get("changes", 0)) + 1)
            self.save_state(assignment, state)
            return Outcome(data={"vote": winner, "changed": True})
        conv = self.conversation(annotator, assignment, state)
        if self.options.vote == "per-turn":
            pending = state.get("pending")
            if not pending:
                raise JudgmentError("There are no replies to vote on now; reload the page.")
            turn = int(pending["turn"])
            shown = pending
        else:
            if awaiting_bot(conv) or bot_turn_count(conv) == 0:
                raise JudgmentError("Chat with the two models first, then vote.")
            turn = bot_turn_count(conv)
            shown = state
        state["vote"] = {
            "winner": winner,
            "turn": turn,
            "at": now_ts(),
            "request_id": request_id,
            "changes": 0,
            "revealed": list(state.get("revealed") or []),
            "elapsed_s": page_elapsed(data, shown),
            "tie_pick": self.study.fresh_rng().randrange(2),
        }
        self.save_state(assignment, state)
        return Outcome(data={"vote": winner})

    def act_next(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, data: dict[str, Any]) -> Outcome:
        """The annotator ends the change window themselves ("My vote is final"); the page is sent the
        names of the two models once the battle is closed by it."""
        state = self.fresh_state(assignment)
        if not state.get("vote"):  # already final: a repeated click, or the page's own close at the
            # window's end racing the click; the page of either shows the names, not the next battle
            closed = assignment.status != "assigned"
            return Outcome(done=closed, data={"reveal": self.reveal(assignment, state)} if closed else {})
        done = self.finalize(annotator, assignment, state, force=True, request_id=data.get("request_id"))
        return Outcome(done=done, data={"reveal": self.reveal(assignment, state)} if done else {})

    def reveal(self, assignment: AssignmentInfo, state: dict[str, Any]) -> list[dict[str, str]]:
        """Who Model A and Model B were: shown only for a closed battle (all its votes final)."""
        return [{"side": side, "name": name} for side, name in zip(SIDE_LABELS, self.sides(assignment, state))]

    # -- the page ----------------------------------------------------------------------------------
    def render(self, annotator: AnnotatorInfo, assignment: AssignmentInfo) -> dict[str, Any]:
        state = dict(assignment.state or {})  # read with this request (web/routes_annotator.task)
        if self.finalize(annotator, assignment, state):  # the window ended while the page was away
            return {
                "stage": "complete",
                "rounds": [],
                "sides": SIDE_LABELS,
                "winner_labels": WINNER_LABELS,
                "reveal": self.reveal(assignment, state),
            }
        conv = self.conversation(annotator, assignment, state, create=False)
        rounds = _rounds(conv)
        pending, vote = state.get("pending"), state.get("vote")
        if pending and pending.get("turns") != len(conv.turns):
            pending = None
        if pending:
            rounds[-1]["replies"] = [c["text"] for c in pending["candidates"]]
        done_turns = bot_turn_count(conv) + (1 if pending else 0)
        per_turn = self.options.vote == "per-turn"
        if vote:
            stage = "voted"
        elif pending:
            stage = "vote"
        elif awaiting_bot(conv):
            stage = "waiting"
        elif bot_turn_count(conv) >= self.options.turns:
            stage = "vote"  # end mode: every message written
        else:
            stage = "chat"
        return {
            "stage": stage,
            "rounds": rounds,
            "sides": SIDE_LABELS,
            "winner_labels": WINNER_LABELS,
            "vote": vote,
            "vote_turn": (pending or {}).get("turn") if per_turn else done_turns,
            "seconds_left": int(self.window_left(vote) + 0.999) if vote else None,
            "change_seconds": self.options.change_seconds,
            "per_turn": per_turn,
            "can_vote_now": not per_turn and stage == "chat" and bot_turn_count(conv) > 0,
            "more_messages": done_turns < self.options.turns,
            "turns": self.options.turns,
            "turn_number": done_turns + 1,
            "bot_error": self.chat_error(conv, state),
        }

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        if assignment is None:
            return None
        turns = self.options.turns
        total = min(self.config.annotation.units_per_annotator, max(1, len(self.pairs())))
        at = self.chat_position(annotator, assignment, KIND, total, turns)
        # Replies waiting for their vote are a round done (they join the conversation once the vote is
        # final); the header names the message being voted on, else the one to write next.
        state = assignment.state or {}
        pending, conv = state.get("pending"), at.conversation
        if pending and conv is not None and pending.get("turns") == len(conv.turns):
            at = replace(at, done=at.done + 1)
        message = max(1, min(at.done if pending and not state.get("vote") else at.done + 1, turns))
        return at.progress(f"Message {message} of {turns}", at.left * MINUTES_PER_ROUND, noun="Battle")

    # -- actions -----------------------------------------------------------------------------------
    def page_actions(self) -> dict[str, PageAction]:
        return {"vote": self.act_vote, "next": self.act_next}

    async def act(
        self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]
    ) -> Outcome:
        # A held vote is made final before the live action it precedes: the next message ends its
        # change window (per-turn), and a reply or watch after the window finds it final.
        # The assignment was read with this request (web/deps.owned_assignment): its state is fresh.
        state = dict(assignment.state or {})
        if action == "send":
            if state.get("vote") and self.options.vote == "per-turn":
                await run_in_thread(self.finalize, annotator, assignment, state, force=True)
        elif action in ("reply", "watch"):
            if state.get("vote") and self.window_left(state["vote"]) <= 0:
                await run_in_thread(self.finalize, annotator, assignment, state)
        return await super().act(annotator, assignment, action, data)

    # -- admin -------------------------------------------------------------------------------------
    def admin_summary(self) -> AdminSummary:
        self.finalize_due_votes()
        summary = AdminSummary()
        load = self.db.unit_load(KIND)
        for u in self.db.list_units(KIND):
            a, b = u.payload["bots"]
            done = load.get(u.id, {}).get("submitted", 0)
            summary.progress.append({"pair": f"{a} vs {b}", "done": done, "target": self.options.battles_per_pair})
        votes = [
            j.value
            for j in self.db.list_judgments()
            if j.question == QUESTION and isinstance(j.value, dict) and j.annotator_status == "active"
        ]
        hidden = sum(1 for v in votes if v.get("anonymous") is False)
        summary.headline.append({"label": "votes", "value": str(len(votes))})
        summary.headline.append({"label": "non-anonymous votes (a bot named itself; not ranked)", "value": str(hidden)})
        note = adaptive_note(self)
        if note:
            summary.notes.append(note)
        voter_screen(self, summary, adaptive_outcome)
        return summary


class _WithHistory(Bot):
    """A bot that answers `history` whatever the generation passes (one side's own history)."""

    def __init__(self, bot: Bot, history: list[ChatMessage]):
        super().__init__(bot.name)
        self.bot, self.history = bot, history

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        return await self.bot.reply(list(self.history), context)

    async def stream(self, history: list[ChatMessage], context: BotContext | None = None) -> AsyncIterator[str]:
        async for chunk in self.bot.stream(list(self.history), context):
            yield chunk


def _rounds(conv: Conversation) -> list[dict[str, Any]]:
    """The battle as rounds: the annotator's message and the two replies (Model A, Model B)."""
    rounds: list[dict[str, Any]] = []
    for t in conv.turns:
        if t.speaker == HUMAN:
            rounds.append({"message": t.text, "replies": None, "vote": None})
        elif rounds:
            cands = t.candidates or [{"text": t.text}]
            rounds[-1]["replies"] = [c["text"] for c in cands]
            rounds[-1]["vote"] = t.meta.get("vote")
    return rounds


def adaptive_outcome(j: work.ScoredJudgment) -> tuple[str, str, str | None] | None:
    """(a, b, winner or None for a tie) of one vote for the adaptive state; None when not ranked."""
    v = j.value if isinstance(j.value, dict) else {}
    if j.question != QUESTION or v.get("anonymous") is False or not v.get("model_a") or not v.get("model_b"):
        return None
    winner = {"model_a": v["model_a"], "model_b": v["model_b"]}.get(str(v.get("winner")))
    return v["model_a"], v["model_b"], winner


def settle_held_votes(opened: OpenStudy, *, gone: Collection[int] = ()) -> int:
    """Method.settle: before a report, the held votes whose change window is over become judgments
    (a tab closed inside the window, and nobody given work since); a study without two live bots
    (imported battles) holds none."""
    names = [b.name for b in opened.config.bots if b.type != "imported"]
    if len(names) < 2:
        return 0
    ctx = StudyContext(opened.folder, opened.config, opened.store, opened.id, slug="settle")
    return ArenaProtocol(ctx).finalize_due_votes(gone=gone)
