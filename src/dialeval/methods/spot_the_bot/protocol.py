"""Spot The Bot (Deriu et al. 2020): packages of conversation segments; is each speaker a human or a bot?

Segments: every stored bot-bot and human conversation, cut after the opening exchange (the corpus
seed of a bot-bot conversation, the first exchange of a human one) plus k exchanges, for each k in
``options.segment_exchanges``. Units (kind "stb-package") are packages of
``bot_segments_per_package`` bot segments + ``human_segments_per_package`` human segments, built so
that two segments of one conversation are never in one package. An annotator never gets two
segments of the same bot conversation (so each segment of a conversation goes to a different
annotator), gets at most ``packages_per_annotator`` packages, and each package is annotated
``annotations_per_segment`` times. The segment order is shuffled per assignment (shown_order).

Judgment (question "spot-the-bot", one per segment, value per records.py):
``{"segment_exchanges": k, "entity0": "human"|"bot"|"unsure", "entity1": ..., "decision_turn0": None,
"decision_turn1": None, "fluency": 0|1|"tie", "sensibleness": ..., "specificity": ...}``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from ...errors import JudgmentError
from ...plugin import (
    AdminSummary,
    AnnotatorInfo,
    AssignmentInfo,
    Outcome,
    Protocol,
    session_progress,
)
from ...records import Unit
from ...scheduling.assign import Choice, SchedulingView, assign_locked, least_loaded
from .options import SpotTheBotOptions
from .questions import STB_FEATURES

KIND = "stb-package"
QUESTION = "spot-the-bot"
LABELS = ("human", "bot", "unsure")
ENTITY_NAMES = ("Speaker A", "Speaker B")
OPENING = 2  # turns of the opening exchange that starts every segment (the seed of a bot-bot conversation)
MINUTES_PER_SEGMENT = 0.5  # estimate for the progress header


def is_human_conversation(conv: dict[str, Any]) -> bool:
    return conv["source"] == "human" or (bool(conv["bots"]) and all(b == "human" for b in conv["bots"]))


class Segment(TypedDict):
    """One segment of a package (Unit.payload["segments"]): a conversation cut after `exchanges`."""

    conversation: str
    exchanges: int
    human: bool


def pack(segments: list[tuple[str, int]], size: int) -> list[list[tuple[str, int]]]:
    """Greedy packing: each segment into the first open package without a segment of its conversation."""
    packages: list[list[tuple[str, int]]] = []
    for seg in segments:
        for p in packages:
            if len(p) < size and all(c != seg[0] for c, _ in p):
                p.append(seg)
                break
        else:
            packages.append([seg])
    return packages


class SpotTheBotProtocol(Protocol[SpotTheBotOptions]):
    method = "spot-the-bot"
    template = "spot_the_bot.html"
    inline_next_page = True  # its page has no script of its own: the answer brings the next one
    progress_kind = KIND
    title = "Spot The Bot"

    work_kinds = ("stb-package",)  # a complete session: session_quota() of these

    def session_quota(self) -> int:
        return int(self.options.packages_per_annotator)

    # -- units -------------------------------------------------------------------------------------
    def prepare(self) -> int:
        if self.db.count_units(KIND):
            return 0  # packages are built once; their composition must not change under annotators
        opt = self.options
        convs = [c for c in self.db.list_conversations() if not c["error"]]
        rng = self.study.seeded_rng("stb-packages")
        bot_segs_by_k: list[list[tuple[str, int]]] = []
        human_segs: list[tuple[str, int]] = []
        for k in opt.segment_exchanges:
            level = []
            for c in convs:
                if c["turns"] < OPENING + 2 * k:
                    continue
                if is_human_conversation(c):
                    human_segs.append((c["id"], k))
                elif len({b for b in c["bots"] if b != "human"}) >= 1 and c["source"] != "live":
                    level.append((c["id"], k))
            rng.shuffle(level)
            bot_segs_by_k.append(level)
        bot_segments = [s for level in bot_segs_by_k for s in level]
        if not bot_segments:
            return 0
        packages = pack(bot_segments, opt.bot_segments_per_package)
        rng.shuffle(human_segs)
        h = 0
        units = []
        for i, p in enumerate(packages):
            segs: list[Segment] = [{"conversation": cid, "exchanges": k, "human": False} for cid, k in p]
            added = 0
            tries = 0
            while human_segs and added < opt.human_segments_per_package and tries < len(human_segs):
                cid, k = human_segs[h % len(human_segs)]
                h += 1
                tries += 1
                if any(s["conversation"] == cid for s in segs):
                    continue
                segs.append({"conversation": cid, "exchanges": k, "human": True})
                added += 1
            units.append(
                Unit(
                    id=f"stb-package:{i:04d}",
                    kind=KIND,
                    conversation_ids=sorted({s["conversation"] for s in segs}),
                    payload={"segments": segs},
                )
            )
        return self.db.add_units(self.method, units)

    # -- scheduling --------------------------------------------------------------------------------
    def assign(self, annotator: AnnotatorInfo) -> AssignmentInfo | None:
        return assign_locked(self, annotator, self.choose)

    def choose(self, view: SchedulingView) -> Choice | None:
        opt = self.options
        mine = [a for a in view.history if a.unit_kind == KIND]
        if len(mine) >= opt.packages_per_annotator:
            return None
        seen_bot_convs = {s["conversation"] for a in mine for s in a.payload["segments"] if not s["human"]}
        candidates = []
        seen = view.seen_units()
        for u in view.units(KIND):
            if u.id in seen or view.used(u.id) >= opt.annotations_per_segment:
                continue
            if any(s["conversation"] in seen_bot_convs for s in u.payload["segments"] if not s["human"]):
                continue
            candidates.append(u)
        unit = least_loaded(candidates, lambda u: view.used(u.id), view.rng)
        if unit is None:
            return None
        order = list(range(len(unit.payload["segments"])))
        view.rng.shuffle(order)
        return Choice(unit.id, shown_order=order, state={"done": []})

    # -- page ----------------------------------------------------------------------------------------
    @staticmethod
    def _position(assignment: AssignmentInfo) -> int | None:
        done = set(assignment.state.get("done", []))
        for pos, _ in enumerate(assignment.shown_order or []):
            if pos not in done:
                return pos
        return None

    def _segment(self, assignment: AssignmentInfo, pos: int) -> dict[str, Any]:
        segment: dict[str, Any] = assignment.payload["segments"][(assignment.shown_order or [])[pos]]
        return segment

    def render(self, annotator: AnnotatorInfo, assignment: AssignmentInfo) -> dict[str, Any]:
        pos = self._position(assignment)
        if pos is None:  # all answered but not closed (a crash in between): close now
            self.finish(assignment)
            pos = len(assignment.shown_order or []) - 1
        seg = self._segment(assignment, pos)
        conv = self.db.get_conversation(seg["conversation"])
        turns = conv.turns[: 2 + 2 * seg["exchanges"]]
        return {
            "position": pos,
            # With corpus seeds, the opening exchange is shown as given context in every segment, bot
            # or human: in a bot-bot conversation it is the seed (people's words, not the bots'), and
            # marking it only there would tell which segments are bots'.
            "turns": [
                {
                    "entity": {"entity0": 0, "entity1": 1}.get(t.speaker, i % 2),
                    "text": t.text,
                    "given": i < OPENING and self.config.generation.seed_from_corpus,
                }
                for i, t in enumerate(turns)
            ],
            "entity_names": ENTITY_NAMES,
            "labels": LABELS,
            "features": STB_FEATURES,
            "total": len(assignment.shown_order or []),
            # the last segment's button says whether another package follows
            "last_package": self.db.submitted_count(annotator.id, KIND) + 1 >= self.options.packages_per_annotator,
        }

    def progress(self, annotator: AnnotatorInfo, assignment: AssignmentInfo | None) -> dict[str, Any] | None:
        if assignment is None:
            return None
        total = len(assignment.shown_order or [])
        done = len(set(assignment.state.get("done", [])))
        packages = self.options.packages_per_annotator
        finished = self.db.submitted_count(annotator.id, KIND)
        package = min(finished + (1 if assignment.is_open else 0), packages) or 1
        segments_left = total - done + (packages - package) * total
        return session_progress(
            f"Package {package} of {packages}",
            (package - 1) * total + done,
            packages * total,
            detail=f"Segment {min(done + 1, total)} of {total}",
            minutes_left=segments_left * MINUTES_PER_SEGMENT,
        )

    # -- answers -------------------------------------------------------------------------------------
    def act(self, annotator: AnnotatorInfo, assignment: AssignmentInfo, action: str, data: dict[str, Any]) -> Outcome:
        if action != "segment":
            raise JudgmentError(f"unknown action '{action}'")
        try:
            pos = int(data.get("position", ""))
        except (TypeError, ValueError):
            raise JudgmentError("The form names no segment; reload the page.") from None
        total = len(assignment.shown_order or [])
        if not 0 <= pos < total:
            raise JudgmentError("There is no such segment in your package.")
        done = list(assignment.state.get("done", []))
        if pos in done:
            if self.db.judgment_exists(annotator.id, data["request_id"]):
                return Outcome(done=len(done) >= total)
            raise JudgmentError("You have already answered this segment; reload the page to see the next one.")
        if pos != self._position(assignment):
            raise JudgmentError("Please answer the segments in order; reload the page.")
        value: dict[str, Any] = {}
        seg = self._segment(assignment, pos)
        value["segment_exchanges"] = seg["exchanges"]
        for e in (0, 1):
            label = data.get(f"entity{e}")
            if label not in LABELS:
                raise JudgmentError(f"Please say whether {ENTITY_NAMES[e]} is a human, a bot, or that you are unsure.")
            value[f"entity{e}"] = label
        value["decision_turn0"] = None
        value["decision_turn1"] = None
        for f in STB_FEATURES:
            v = data.get(f)
            if v not in ("0", "1", "tie"):
                raise JudgmentError(f"Please answer the {f} question (Speaker A, Speaker B or equal).")
            value[f] = "tie" if v == "tie" else int(v)
        elapsed = None
        try:
            ms = float(data.get("elapsed_ms") or "nan")
            if 0 <= ms < 24 * 3600 * 1000:
                elapsed = ms / 1000
        except (TypeError, ValueError):
            pass
        conv = self.db.get_conversation(seg["conversation"])
        done.append(pos)
        state = {**assignment.state, "done": done}
        finished = len(done) >= total
        self.add_judgment(
            annotator,
            assignment,
            QUESTION,
            value,
            request_id=data["request_id"],
            conversation=seg["conversation"],
            elapsed_s=elapsed,
            shown_order=list(conv.bots),
            meta={
                "segment": f"{seg['conversation']}@{seg['exchanges']}",
                "position": pos,
                "human_segment": seg["human"],
                "bots": list(conv.bots),
            },
            finish=finished,  # one commit: the judgment and the package's progress
            state=state,
        )
        return Outcome(done=finished)

    # -- admin ---------------------------------------------------------------------------------------
    def admin_summary(self) -> AdminSummary:
        stats: dict[str, dict[str, int]] = {}
        for j in self.db.list_judgments(question=QUESTION):
            if j.annotator_status != "active":
                continue
            bots = j.meta.get("bots") or ["?", "?"]
            for e in (0, 1):
                who = bots[e] if e < len(bots) else "?"
                row = stats.setdefault(who, {"human": 0, "bot": 0, "unsure": 0})
                label = (j.value or {}).get(f"entity{e}")
                if label in row:
                    row[label] += 1
        progress: list[dict[str, Any]] = []  # table rows: the system's name and its counts
        for who, row in sorted(stats.items()):
            n = sum(row.values())
            progress.append({"system": who, "entity annotations": n, **row})
        headline = [
            {
                "label": f"{r['system']} judged human or unsure",
                "value": f"{100 * (r['human'] + r['unsure']) / r['entity annotations']:.0f}% "
                f"(n={r['entity annotations']})",
            }
            for r in progress
            if r["entity annotations"]
        ]
        units = self.db.count_units(KIND)
        notes = [f"{units} packages; each is annotated {self.options.annotations_per_segment} times."]
        return AdminSummary(progress=progress, headline=headline, notes=notes)
