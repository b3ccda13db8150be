"""Adaptive collection's state: which bot pair the next unit should come from, and when a study is done.

No store and no web code here: the scheduler (plan.py) and the report (analysis/stopping.py) both
build it from the judgments, through :func:`study_state`. How it is used:

1. When a study has ``adaptive.enabled`` (config.AdaptiveConfig), the pairwise protocols' scheduler
   (scheduling/plan.py: ACUTE-Eval, PW-Turn, the arena, prompt sets) builds the state from the
   judgments stored so far, in the order they were made::

       state = AdaptiveState.from_outcomes(
           [(j.bot_a, j.bot_b, j.winner) for j in judgments],   # winner: a bot name or a tie
           bots=[b.name for b in study.bots], config=study.adaptive,
           pairs=study.options.pairs)                            # None = every pair of bots

2. To hand out the next unit it asks ``state.next_pair(rng)`` (rng: numpy Generator seeded from
   the study seed) and takes a unit of that bot pair (keeping its own rules: least-used
   conversations, per-annotator caps, side randomisation). ``None`` means the study is decided:
   stop handing out units of this question (the dashboard shows ``state.stopping_table()``).
   Judgments that arrive later (units already out) are kept and analysed as usual; they cannot
   undo a decision, because the anytime-valid test allows stopping at any time.
3. ``decided_pairs()`` and ``stopping_table()`` go into the report (analysis/stopping.py): per pair n, wins, the
   always-valid p-value, its confidence sequence, whether and when it stopped, and by which rule.

Statistics (stats/sequential.py, stats/active.py): each allowed pair has a beta-binomial mixture
anytime-valid test of p = 0.5 at level alpha / m (Bonferroni over the m allowed pairs, so the
chance that *any* pair is wrongly decided stays ≤ alpha however often the state is consulted).
A pair is resolved when it is decided or its order follows from decided pairs by transitivity;
the study is decided when no allowed pair is unresolved. ``config.stopping == "none"`` never stops
(the selection rule alone is used and p-values are only reported). Ties count for no one.

>>> from dialeval.config import AdaptiveConfig
>>> import numpy as np
>>> outcomes = [("x", "y", "x")] * 30 + [("y", "z", "y")] * 30
>>> st = AdaptiveState.from_outcomes(outcomes, ["x", "y", "z"], AdaptiveConfig(enabled=True))
>>> st.decided_pairs()
[('x', 'y'), ('y', 'z')]
>>> st.ranking(), st.next_pair(np.random.default_rng(0))
(['x', 'y', 'z'], None)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import AdaptiveConfig
from ..registry import all_methods, load_part
from ..stats import active, sequential
from ..stats.sequential import DEFAULT_PRIOR, SequentialPairTest, bonferroni_alpha
from .pools import GuidedTicketTest, PairPool

__all__ = [
    "AdaptiveState",
    "adaptive_config",
    "study_bots",
    "study_families",
    "study_pairs",
    "study_session",
    "study_state",
]


@dataclass
class AdaptiveState:
    """Per-pair anytime-valid tests plus the selection rule for the next pair. Build it with
    `from_outcomes`; feed later judgments with `update`."""

    bots: list[str]
    config: AdaptiveConfig = field(default_factory=AdaptiveConfig)
    pairs: list[tuple[str, str]] | None = None
    prior: float = DEFAULT_PRIOR
    transitive: bool = True
    families: int = 1  # questions of the study sharing one alpha (Bonferroni over questions x pairs)
    block: int = 10  # most judgments of one annotator on one pair counted as one factor
    session: int | None = None  # judgments in one annotator's session: their blocks close when it is full
    # judge-guided pairs (pools.py): sorted (a, b) -> PairPool; their test is a GuidedTicketTest
    guided: dict[tuple[str, str], PairPool] | None = None
    tests: dict[tuple[str, str], Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if len(set(self.bots)) != len(self.bots):
            raise ValueError(f"bot names must be unique: {self.bots}")
        if len(self.bots) < 2:
            raise ValueError("adaptive collection needs at least two bots")
        self._index = {b: i for i, b in enumerate(self.bots)}
        self._given: dict[Hashable, int] = {}
        self._judged: dict[Hashable, set[tuple[str, str]]] = {}  # annotator -> pairs with a block
        allowed = (
            self.pairs
            if self.pairs is not None
            else [(a, b) for i, a in enumerate(self.bots) for b in self.bots[i + 1 :]]
        )
        keys = []
        for a, b in allowed:
            for bot in (a, b):
                if bot not in self._index:
                    raise ValueError(f"pair ({a}, {b}) names bot {bot!r}, which is not among {self.bots}")
            if a == b:
                raise ValueError(f"pair ({a}, {b}) compares a bot with itself")
            keys.append(self._key(a, b))
        self._keys = list(dict.fromkeys(keys))
        m = len(self._keys) * max(int(self.families), 1)
        for a, b in self._keys:
            pool = (self.guided or {}).get((min(a, b), max(a, b)))
            if pool is not None:
                self.tests[(a, b)] = GuidedTicketTest(a, b, pool, alpha=self.config.alpha, n_pairs=m)
                continue
            self.tests[(a, b)] = SequentialPairTest(
                a, b, alpha=self.config.alpha, prior=self.prior, n_pairs=m, block=self.block
            )

    def _key(self, a: str, b: str) -> tuple[str, str]:
        return (a, b) if self._index[a] < self._index[b] else (b, a)

    @classmethod
    def from_outcomes(
        cls,
        outcomes: Iterable[tuple],
        bots: Sequence[str],
        config: AdaptiveConfig | None = None,
        pairs: Sequence[Sequence[str]] | None = None,
        prior: float | None = None,
        transitive: bool | None = None,
        families: int = 1,
        final: bool = False,
        session: int | None = None,
        guided: dict[tuple[str, str], PairPool] | None = None,
    ) -> AdaptiveState:
        """State after replaying `outcomes` = [(a, b, winner)] or [(a, b, winner, annotator)] in the
        order they were judged. `winner` is a or b (or 'a'/'b'), or a tie/None. With an annotator id
        the pair's test is taken at the annotator level (stats.sequential: one factor per
        annotator block), which stays valid when annotators differ; without, judgments are taken
        as independent. Outcomes for pairs outside `pairs` or of a bot against itself (A/A checks)
        are ignored. `prior` and `transitive` default to the config's (``adaptive.prior``,
        ``adaptive.transitive``). `families`: questions sharing the study's alpha. `final`: the
        collection is over, so close every open annotator block (reports; never the scheduler).
        `session`: judgments one annotator gives in a session (ACUTE: comparisons_per_unit); their
        blocks close as soon as they have given that many. `guided`: the judge-guided pools of this
        question (pools.py); outcomes may then carry a fifth item, the judgment's ticket."""
        config = config or AdaptiveConfig()
        st = cls(
            list(bots),
            config,
            [(a, b) for a, b in pairs] if pairs is not None else None,
            float(config.prior if prior is None else prior),
            bool(config.transitive if transitive is None else transitive),
            int(families),
            int(getattr(config, "annotator_block", 10)),
            session,
            guided,
        )
        for outcome in outcomes:
            st.update(*outcome)
        if final:
            st.close_all()
        return st

    def update(
        self, a: str, b: str, winner: str | None, annotator: Hashable | None = None, ticket: dict | None = None
    ) -> None:
        """Add one judgment (who won a vs b; `annotator`: who judged, None = independent; `ticket`: the
        judge-guided ticket it answers, pools.py)."""
        if a == b or a not in self._index or b not in self._index:
            return
        key = self._key(a, b)
        test = self.tests.get(key)
        if test is None:
            return
        if winner in ("a", "model_a", "left"):
            winner = a
        elif winner in ("b", "model_b", "right"):
            winner = b
        if isinstance(test, GuidedTicketTest):
            test.update(winner, annotator, ticket)
            return
        test.update(winner, annotator)
        if annotator is not None:
            self._judged.setdefault(annotator, set()).add(key)
            if self.session:
                self._given[annotator] = given = self._given.get(annotator, 0) + 1
                if given >= self.session:  # the session is over: its blocks enter the tests now
                    self.close_annotator(annotator)

    def close_annotator(self, annotator: Hashable) -> None:
        """The annotator's session ended: their open blocks enter the tests now (optional; blocks also
        close by size and by idleness, see stats.sequential)."""
        for key in self._judged.pop(annotator, ()):  # only the pairs they judged (an arena has thousands)
            self.tests[key].close_annotator(annotator)

    def close_all(self) -> None:
        for t in self.tests.values():
            t.close_all()

    @property
    def stopping(self) -> bool:
        return self.config.stopping != "none"

    @property
    def level(self) -> float:
        return bonferroni_alpha(self.config.alpha, len(self._keys) * max(int(self.families), 1))

    def _beats(self) -> np.ndarray:
        K = len(self.bots)
        beats = np.zeros((K, K), dtype=bool)
        if not self.stopping:
            return beats
        for (a, b), t in self.tests.items():
            if t.decided:
                w, l_ = (a, b) if t.winner == a else (b, a)
                beats[self._index[w], self._index[l_]] = True
        return beats

    def _wins(self) -> np.ndarray:
        K = len(self.bots)
        W = np.zeros((K, K))
        for (a, b), t in self.tests.items():
            i, j = self._index[a], self._index[b]
            # judgments in closed blocks only: an open block's own answers must not steer how many
            # judgments it gets (its factor would lose its mean of 1 under H0)
            W[i, j] += t.tested_wins
            W[j, i] += t.tested_n - t.tested_wins
        return W

    def decided_pairs(self) -> list[tuple[str, str]]:
        """Directly decided pairs as (winner, loser), in bot order of the pair keys."""
        if not self.stopping:
            return []
        return [(t.winner, t.b if t.winner == t.a else t.a) for t in self.tests.values() if t.decided]

    def undecided_pairs(self) -> list[tuple[str, str]]:
        """Allowed pairs whose order is still open (neither decided nor implied by transitivity)."""
        idx = [(self._index[a], self._index[b]) for a, b in self._keys]
        cands = active.candidate_pairs(len(self.bots), self._beats(), idx, self.transitive)
        return [(self.bots[i], self.bots[j]) for i, j in cands]

    @property
    def done(self) -> bool:
        return self.stopping and not self.undecided_pairs()

    def next_pair(self, rng: np.random.Generator | int | None = None) -> tuple[str, str] | None:
        """The bot pair (a, b) the next unit should compare, by `config.selection`; None when the
        study is decided (every allowed pair's order known)."""
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        idx = [(self._index[a], self._index[b]) for a, b in self.undecided_pairs()]
        pick = active.select_pair(self.config.selection, self._wins(), idx, rng)
        return None if pick is None else (self.bots[pick[0]], self.bots[pick[1]])

    def ranking(self) -> list[str] | None:
        """Best-first order of all bots if the decided pairs imply a total order, else None."""
        order = active.ranking_from_beats(self._beats())
        return None if order is None else [self.bots[i] for i in order]

    def stopping_table(self) -> list[dict]:
        """One row per allowed pair: a, b, n, wins_a, wins_b, ties, win_rate_a, p_always_valid,
        ci_low, ci_high (confidence sequence at the per-pair level), ci_empty (no win rate lies in every
        confidence sequence so far: ci_low/ci_high are then the current one alone), decided, winner, stopped_at_n,
        implied (order known by transitivity only), rule."""
        closure = active.transitive_closure(self._beats())
        m = len(self._keys) * max(int(self.families), 1)
        test = "judge-guided betting test (guided.py)" if self.guided else sequential.rule_text(self.prior)
        rule = (
            f"anytime-valid test: {test}, "
            f"alpha {self.config.alpha:g} / {m} (Bonferroni over {len(self._keys)} pairs"
            + (f" x {self.families} questions" if self.families > 1 else "")
            + ")"
        )
        if not self.stopping:
            rule = "no stopping (adaptive.stopping = none); p-values reported only"
        rows = []
        for (a, b), t in self.tests.items():
            i, j = self._index[a], self._index[b]
            lo, hi = t.interval if not t.clustered else (None, None)
            decided = bool(t.decided and self.stopping)
            implied = bool(not decided and (closure[i, j] or closure[j, i]))
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "n": t.n,
                    "wins_a": t.wins_a,
                    "wins_b": t.n - t.wins_a,
                    "ties": t.ties,
                    "win_rate_a": None if t.n == 0 else t.wins_a / t.n,
                    "p_always_valid": float(t.p_value),
                    "e_value": t.e_value,
                    "ci_low": None if t.clustered else lo,
                    "ci_high": None if t.clustered else hi,
                    "test_level": "annotator" if t.clustered else "judgment",
                    "blocks": t.blocks,
                    "tested_n": t.tested_n,
                    "untested": t.untested,
                    "open": t.open_judgments,
                    "decided": decided,
                    "winner": t.winner if decided else ((a if closure[i, j] else b) if implied else None),
                    "stopped_at_n": t.stopped_at if decided else None,
                    "decided_blocks": t.decided_blocks if decided else None,
                    "implied": implied,
                    "rule": rule,
                }
            )
            rows[-1]["ci_empty"] = t.interval_empty  # see SequentialPairTest.interval
            if isinstance(t, GuidedTicketTest):
                rows[-1].update(_guided_row(t))
        return rows


def _guided_row(t: GuidedTicketTest) -> dict[str, Any]:
    """A judge-guided pair's extra columns: the people's raw win rate is over units drawn by the judge's
    doubt, so the pool-weighted estimate replaces it, beside its anytime-valid and fixed-n intervals."""
    lo, hi = t.interval if t.tested_n else (None, None)
    fixed = t.fixed_n_interval() if t.tested_n > 1 else (None, None)
    return {
        "judge_guided": True,
        "raw_win_rate_a": None if t.n == 0 else t.wins_a / t.n,
        "win_rate_a": None if not t.tested_n else t.win_rate_a,
        "ci_low": lo,
        "ci_high": hi,
        "fixed_n_ci": list(fixed),
        "tested_n": t.tested_n,
        "untested": t.untested,
        "unticketed": t.unticketed,
        "skipped_tickets": t.skipped,
        "pool_units": len(t.pool.units),
        "judge_labelled_units": t.pool.judged,
        "test_level": "judgment",
    }


# -- a study's config, read the same way by the scheduler (plan.py) and the report (analysis/stopping.py) --


def _config_dict(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if hasattr(config, "model_dump"):
        return config.model_dump(mode="json")
    return dict(config)


def adaptive_config(config: Any) -> AdaptiveConfig:
    """The AdaptiveConfig of a study config (StudyConfig or its JSON dict); defaults when absent."""
    if isinstance(config, AdaptiveConfig):
        return config
    data = _config_dict(config).get("adaptive") or {}
    return AdaptiveConfig.model_validate(data)


def study_bots(method: str, config: Any) -> list[str]:
    """The bots a pairwise study compares, in study-file order."""
    spec = all_methods().get(method)
    # bot types that never take part in the method's comparisons (its protocol leaves them out of units)
    excluded = spec.excluded_bot_types if spec else frozenset()
    return [b["name"] for b in _config_dict(config).get("bots", []) if b.get("type") not in excluded]


def study_pairs(config: Any) -> list[tuple[str, str]] | None:
    """The configured `protocol.pairs`, else every bot against `protocol.baseline` when a method's
    study names one (prompt-set studies), else None (every pair of bots)."""
    data = _config_dict(config)
    protocol = data.get("protocol") or {}
    pairs = protocol.get("pairs")
    if not pairs and protocol.get("baseline"):
        base = str(protocol["baseline"])
        bots = [str(b.get("name")) for b in data.get("bots") or [] if b.get("type") != "degraded"]
        pairs = [(base, b) for b in bots if b != base]
    return [(str(a), str(b)) for a, b in pairs] if pairs else None


def study_families(config: Any) -> int:
    """How many questions share the study's alpha (one adaptive test family per question)."""
    return max(len(_config_dict(config).get("questions") or []), 1)


def study_state(
    outcomes: Iterable[tuple],
    method: str,
    config: Any,
    bots: Sequence[str] | None = None,
    final: bool = False,
    guided: dict[tuple[str, str], PairPool] | None = None,
) -> AdaptiveState:
    """AdaptiveState of one question of a study from its judgments [(a, b, winner)] or
    [(a, b, winner, annotator)] in judgment order. The scheduler and the report both build it here,
    so they agree on every decision. One alpha for the whole study: Bonferroni over the pairs of
    every question (`study_families`). `final` (reports): close the open annotator blocks."""
    cfg = adaptive_config(config)
    names = list(bots) if bots is not None else study_bots(method, config)
    return AdaptiveState.from_outcomes(
        outcomes,
        names,
        cfg,
        pairs=study_pairs(config),
        families=study_families(config),
        final=final,
        session=study_session(method, config),
        guided=guided,
    )


def study_session(method: str, config: Any) -> int | None:
    """Judgments of one question an annotator gives in one session: ACUTE-Eval's comparisons per
    unit, PW-Turn's bot turns per conversation (None when unknown)."""
    spec = all_methods().get(method)
    if spec is None or spec.session_option is None:
        return None
    protocol = _config_dict(config).get("protocol") or {}
    default = load_part(spec.options).model_fields[spec.session_option].default
    return int(protocol.get(spec.session_option) or default)
