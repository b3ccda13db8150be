"""Judge-guided collection's pools and tests (pure: no store). People see most often the units an LLM
judge is unsure about, while each bot pair keeps a valid anytime stopping test and an unbiased win rate
(issue 13, part 3).

An ACUTE-Eval study with ``adaptive: {enabled: true, judge: NAME}``, after ``dialeval judge STUDY --bot
NAME`` has labelled its units:

1. The first time the scheduler hands out a unit it freezes, per question and bot pair (a, b), a *pool*
   (:class:`PairPool`): the pair's units in a fixed order, the judge's score f_u of each (its P(a wins): 1
   or 0 when both of its side orders agree, ½ when they disagree or it gave no answer) and a draw
   distribution q_u ∝ sqrt(judge uncertainty) mixed with uniform (``adaptive.judge_mix``). The snapshot
   is stored as an event (store.work.GUIDED_POOLS_EVENT, scheduling/tickets.py) and never changes, so a
   judge run later cannot move the target.
2. People's work comes as *tickets*: ticket k of a pair is the unit drawn from q by a generator seeded with
   (study seed, pair, k) (:func:`ticket_unit`), so the draws are independent and identically distributed
   whoever takes them and whenever. An annotator gets the lowest free ticket whose unit they have not
   seen; an expired or returned ticket is free again.
3. A labelled ticket gives Z = F̄ + (Y − f_u)/(N q_u) (stats.ppi_sequential), whose mean is the pair's human
   win rate over the pool whatever the judge. Tickets enter the pair's betting test in ticket order (a ticket
   still out holds back those after it), so the test sees exactly the i.i.d. draws; it decides at alpha / m
   like the human-only test, and the report gives the estimate with its anytime-valid confidence sequence.

The test treats judgments as independent (no annotator blocks): who takes a ticket never depends on its
answer, but annotators who differ add variance the betting test does not model as clusters.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..stats.ppi_sequential import GuidedPairTest, GuidedPool, guided_probabilities

LOOKAHEAD = 20  # new tickets an annotator may pass over when they already saw the drawn unit


@dataclass
class PairPool:
    """One question's bot pair (a, b as scheduling.assign.pair_key orders them) and its frozen pool."""

    question: str
    a: str
    b: str
    units: list[str]  # unit external ids, in pool order
    pool: GuidedPool
    judged: int  # units the judge answered in at least one side order

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.question, self.a, self.b)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "a": self.a,
            "b": self.b,
            "units": list(self.units),
            "judged": self.judged,
            "pool": self.pool.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PairPool:
        return cls(d["question"], d["a"], d["b"], list(d["units"]), GuidedPool.from_dict(d["pool"]), int(d["judged"]))


def ticket_unit(pool: PairPool, seed: int, ticket: int) -> int:
    """Index (in pool.units) of the unit ticket `ticket` of this pair asks people to label."""
    salt = zlib.crc32("\x1f".join(pool.key).encode())  # stable across processes, unlike hash()
    return pool.pool.draw(np.random.default_rng([seed % (2**32), salt, int(ticket)]))


def judge_score(first_bot_won: Mapping[str, bool]) -> tuple[float, float]:
    """(f, uncertainty) of one unit from the judge's answers per side order ("AB"/"BA" -> did the
    pair's first bot win): f the mean over the orders answered (½ when none); uncertainty as
    judge_uncertainty rates it (large when the orders disagree or one is missing)."""
    scores = [1.0 if won else 0.0 for won in first_bot_won.values()]
    f = float(np.mean(scores)) if scores else 0.5
    s1 = float(first_bot_won["AB"]) if "AB" in first_bot_won else float("nan")
    s2 = float(first_bot_won["BA"]) if "BA" in first_bot_won else float("nan")
    return f, float(judge_uncertainty([s1], [s2])[0])


def build_pool(
    question: str,
    a: str,
    b: str,
    units: Sequence[str],
    judge_answers: Mapping[str, Mapping[str, bool]],
    mix: float,
) -> PairPool:
    """The pool of one pair: `units` (external ids, in a fixed order), `judge_answers` unit -> {order:
    did `a` win}; units the judge never answered get f = ½ and the largest uncertainty."""
    scored = [judge_score(judge_answers.get(u, {})) for u in units]
    f = np.array([s[0] for s in scored], dtype=float)
    v = np.array([s[1] for s in scored], dtype=float)
    pool = GuidedPool(judge_scores=f, probabilities=guided_probabilities(v, mix=mix))
    return PairPool(question, a, b, list(units), pool, sum(1 for u in units if judge_answers.get(u)))


class GuidedTicketTest:
    """A pair's stopping test fed by labelled tickets; it answers what AdaptiveState asks of a
    stats.sequential.SequentialPairTest (decided, winner, p_value, interval, ...), from the view of
    the pair as AdaptiveState keys it (a, b), whatever order the pool has."""

    clustered = False
    interval_empty = False
    blocks = 0
    open_judgments = 0
    decided_blocks = None

    def __init__(self, a: str, b: str, pool: PairPool, alpha: float, n_pairs: int):
        self.a, self.b, self.pool = a, b, pool
        self.test = GuidedPairTest(pool.pool, alpha=alpha, n_pairs=n_pairs)
        self._waiting: dict[int, tuple[int, float]] = {}  # ticket -> (unit, y) not yet in the test
        self._seen: set[int] = set()
        self._next = 0
        self.n = 0  # labelled tickets without a tie (as SequentialPairTest counts)
        self.ties = 0
        self.wins_a = 0
        self.unticketed = 0  # judgments of this pair without a ticket (made before guided collection)
        self.skipped = 0  # unanswered tickets passed over when collection ended (close_all)

    def update(self, winner: str | None, annotator: Any = None, guided: Mapping[str, Any] | None = None) -> None:
        if winner == self.a:
            self.n += 1
            self.wins_a += 1
        elif winner == self.b:
            self.n += 1
        else:
            self.ties += 1
        if not guided or "ticket" not in guided:
            self.unticketed += 1
            return
        ticket = int(guided["ticket"])
        if ticket in self._seen:  # a ticket answered twice (a late submit): the first answer counts
            return
        self._seen.add(ticket)
        y = 1.0 if winner == self.pool.a else 0.0 if winner == self.pool.b else 0.5
        self._waiting[ticket] = (int(guided["unit"]), y)
        while self._next in self._waiting:
            self.test.update(*self._waiting.pop(self._next))
            self._next += 1

    def close_annotator(self, annotator: Any) -> None:  # no annotator blocks here
        return None

    def close_all(self) -> None:
        """Collection is over (reports): the answered tickets still held back behind a ticket nobody
        answered enter the test, in ticket order, skipping the gaps. This assumes that whether someone
        left a ticket unanswered does not depend on the answer they would have given (during
        collection the scheduler never assumes it: an expired ticket goes to the next annotator)."""
        for ticket in sorted(self._waiting):
            self.skipped += ticket - self._next
            self.test.update(*self._waiting.pop(ticket))
            self._next = ticket + 1

    @property
    def decided(self) -> bool:
        return bool(self.test.decided)

    @property
    def winner(self) -> str | None:
        first = self.test.winner_is_first
        return None if first is None else (self.pool.a if first else self.pool.b)

    @property
    def stopped_at(self) -> int | None:
        return self.test.stopped_at

    @property
    def tested_n(self) -> int:
        return int(self.test.n)

    @property
    def tested_wins(self) -> float:
        """Wins of `a` among the tested tickets, from the pool-weighted estimate (what selection rules use)."""
        return self.win_rate_a * self.tested_n if self.tested_n else 0.0

    @property
    def untested(self) -> int:
        return len(self._waiting)

    @property
    def p_value(self) -> float:
        return float(self.test.p_value)

    @property
    def e_value(self) -> float:
        return float(self.test.e_value)

    def _oriented(self, value: float) -> float:
        return value if self.a == self.pool.a else 1.0 - value

    @property
    def win_rate_a(self) -> float:
        """The pool-weighted (judge-corrected) estimate of P(a beats b), clipped to [0, 1]."""
        return float(np.clip(self._oriented(float(self.test.estimate)), 0.0, 1.0)) if self.test.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        lo, hi = self.test.interval()
        lo, hi = self._oriented(lo), self._oriented(hi)
        return (min(lo, hi), max(lo, hi))

    def fixed_n_interval(self, alpha: float = 0.05) -> tuple[float, float]:
        lo, hi = self.test.fixed_n_interval(alpha)
        lo, hi = self._oriented(lo), self._oriented(hi)
        return (min(lo, hi), max(lo, hi))


# -- the judge's doubt about one unit ----------------------------------------------------------------


def judge_uncertainty(first_order: Sequence[float], second_order: Sequence[float], floor: float = 0.05) -> np.ndarray:
    """Expected squared error of a judge asked in both side orders, per unit: `first_order` is its
    score of the first item shown first, `second_order` its score of the same item shown second (1 win,
    ½ tie, 0 loss; NaN = no answer). When the two orders disagree the judge is guessing, so the unit
    is worth a person's time; `floor` keeps some chance for units where it was consistent (it can be
    consistently wrong). A missing order counts as the most uncertain."""
    s1 = np.asarray(first_order, dtype=float)
    s2 = np.asarray(second_order, dtype=float)
    gap = np.where(np.isnan(s1) | np.isnan(s2), 1.0, np.abs(s1 - s2))
    return floor + (1.0 - floor) * gap**2
