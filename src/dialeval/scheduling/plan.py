"""Adaptive collection inside the scheduler: the plan a pairwise method's `choose` consults.

Per assignment, inside the study's lock (assign.py), :func:`adaptive_plan` brings each question's
AdaptiveState (state.py) up to date with the judgments stored since the last call (process_state.py
keeps the states between calls), decides whether the study has stopped, and :meth:`AdaptivePlan.pick`
draws the next bot pair. The package docstring (scheduling/__init__.py) tells the whole path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..annotator_rules import is_filtered
from ..store import work
from .assign import Group, SchedulingView, least_loaded, pair_key
from .process_state import AdaptiveCache, Pools, scheduler_state
from .state import AdaptiveState, study_state
from .tickets import GuidedUnits, frozen_pools

if TYPE_CHECKING:
    from ..protocols.base import Protocol

__all__ = ["ADAPTIVE_STOPPED", "REREAD_WINDOW", "AdaptivePlan", "adaptive_note", "adaptive_plan"]

ADAPTIVE_STOPPED = "adaptive-stopped"  # the event logged the first time a study stops


@dataclass
class AdaptivePlan:
    """The adaptive state of a study read inside the scheduling transaction.

    `states`: one AdaptiveState per question, replayed from every non-onboarding judgment of a
    non-filtered annotator in judgment order (the same outcomes and rule as the report's `stopping`
    table). `stopped`: no more units for anybody ("decided": every question's ranking is known;
    "max_judgments": the budget is spent, counting the units that are out)."""

    states: dict[str, AdaptiveState]
    judgments: int
    stopped: str | None
    counter: int
    seed: int
    # judge-guided collection (tickets.py): question -> {(a, b): PairPool}; None when off
    pools: Pools | None = None

    def open_groups(self) -> set[Group]:
        """(question, a, b) of the pairs whose order is still open."""
        return {(q, *pair_key(a, b)) for q, st in self.states.items() if not st.done for a, b in st.undecided_pairs()}

    def pick(
        self,
        groups: Iterable[Group],
        load: Callable[[Group], Any],
        view: SchedulingView,
        question_load: Callable[[str], Any] | None = None,
    ) -> Group | None:
        """The group of the next unit among `groups` (those with a unit this annotator may get):
        the question with the least `question_load` among those still open, then `next_pair` of
        its state (rng seeded from the study seed and the assignment counter, so a replay draws the
        same); when the annotator cannot get a unit of the drawn pair, the open pair of least `load`."""
        allowed = self.open_groups() & set(groups)
        if not allowed:
            return None
        questions = sorted({g[0] for g in allowed})
        q = least_loaded(questions, question_load or (lambda _q: 0), view.rng)
        if q is None:
            return None
        rng = np.random.default_rng([self.seed % (2**32), self.counter])
        drawn = self.states[q].next_pair(rng)
        if drawn is not None and (group := (q, *pair_key(*drawn))) in allowed:
            return group
        return least_loaded(sorted(g for g in allowed if g[0] == q), load, view.rng)


def adaptive_plan(
    protocol: Protocol[Any],
    view: SchedulingView,
    method: str,
    questions: Sequence[str],
    outcome: Callable[[work.ScoredJudgment], tuple[str, str, str | None] | None],
    judgments_per_unit: int = 1,
    guided: GuidedUnits | None = None,
) -> AdaptivePlan | None:
    """None when the study does not use adaptive collection; else the plan (see AdaptivePlan).
    Logs the event ``adaptive-stopped`` (with the stopping tables) the first time it stops.
    `guided`: how a method whose units a judge can label first names them (tickets.GuidedUnits: unit
    kind, group of a unit, did the pair's first bot win in a judge answer); used when the study sets
    ``adaptive.judge``."""
    config = protocol.config
    cfg = config.adaptive
    if not cfg.enabled:
        return None
    pools = None
    if cfg.judge is not None and guided is not None:
        pools = frozen_pools(protocol, view, guided)
    states, n = _adaptive_states(protocol, view, method, tuple(questions), outcome, pools)
    stopped = None
    if states and all(st.done for st in states.values()):
        stopped = "decided"
    elif cfg.max_judgments is not None:
        pending = sum(entry["assigned"] for entry in view.load.values()) * judgments_per_unit
        if n + pending >= cfg.max_judgments:
            stopped = "max_judgments"
    plan = AdaptivePlan(
        states=states,
        judgments=n,
        stopped=stopped,
        counter=work.count_assignments(view.session, view.study_id),
        seed=config.seed,
        pools=pools,
    )
    if stopped and not work.list_events(view.session, view.study_id, ADAPTIVE_STOPPED):
        work.add_event(
            view.session,
            view.study_id,
            ADAPTIVE_STOPPED,
            {
                "reason": stopped,
                "judgments": n,
                "alpha": cfg.alpha,
                "prior": cfg.prior,
                "selection": cfg.selection,
                "questions": {q: {"ranking": st.ranking(), "pairs": st.stopping_table()} for q, st in states.items()},
            },
        )
    return plan


# Judgment ids are handed out at insert, but on PostgreSQL concurrent inserts may commit out of
# order: a judgment below the highest id fed can still appear. The ids of the last REREAD_WINDOW
# judgments are therefore read again each time and the new ones among them fed.
REREAD_WINDOW = 2000


def _adaptive_states(
    protocol: Protocol[Any],
    view: SchedulingView,
    method: str,
    questions: tuple[str, ...],
    outcome: Callable[[work.ScoredJudgment], tuple[str, str, str | None] | None],
    pools: Pools | None = None,
) -> tuple[dict[str, AdaptiveState], int]:
    """The AdaptiveState per question after every counted judgment, kept per process between
    assignments and fed only the judgments stored since (AdaptiveState.update), instead of
    replaying the whole study each time. Rebuilt from scratch when an annotator's status changed
    (their judgments may no longer count). Same outcomes, same order as a full replay."""
    statuses = work.annotator_status_mark(view.session, view.study_id)
    caches = scheduler_state(protocol.store).adaptive
    key = (view.study_id, method, questions, pools is not None)
    cache = caches.get(key)
    if cache is None or cache.statuses != statuses:
        states = {q: study_state([], method, protocol.config, guided=(pools or {}).get(q)) for q in questions}
        cache = AdaptiveCache(states, 0, statuses)
    for j in work.scheduling_judgments(view.session, view.study_id, after_id=cache.floor):
        if j.id in cache.fed:
            continue
        cache.fed.add(j.id)
        if is_filtered(j.annotator_status, j.annotator_meta) or j.meta.get("judge"):
            continue  # filtered annotators and LLM judges are not people's outcomes
        o = outcome(j)
        if o is None or j.question not in cache.states:
            continue
        # the test counts per annotator; a judge-guided judgment carries its ticket
        cache.states[j.question].update(*o[:3], j.annotator, j.meta.get("guided"))
        cache.judgments += 1
    if cache.fed:
        top = max(cache.fed)
        if top - cache.floor > 2 * REREAD_WINDOW:
            cache.floor = top - REREAD_WINDOW
            cache.fed = {i for i in cache.fed if i > cache.floor}
    caches[key] = cache
    return cache.states, cache.judgments


def adaptive_note(protocol: Protocol[Any]) -> str | None:
    """One line for the admin page about adaptive collection (None when it is disabled)."""
    cfg = protocol.config.adaptive
    if not cfg.enabled:
        return None
    events = work.list_events(protocol.store, protocol.study.study_id, ADAPTIVE_STOPPED)
    head = (
        f"Adaptive collection on (selection {cfg.selection}, anytime-valid stopping at alpha {cfg.alpha:g}, "
        f"Bonferroni over the bot pairs)"
    )
    if cfg.judge is not None:
        head += _guided_note(protocol)
    if not events:
        return head + ": still collecting."
    p = events[0]["payload"]
    rankings = "; ".join(
        f"{q}: {' > '.join(v['ranking']) if v.get('ranking') else 'partial order'}"
        for q, v in (p.get("questions") or {}).items()
    )
    return f"{head}: stopped ({p.get('reason')}) after {p.get('judgments')} judgments. {rankings}".strip()


def _guided_note(protocol: Protocol[Any]) -> str:
    """How far the judge had labelled the units when judge-guided collection froze its pools."""
    cfg = protocol.config.adaptive
    frozen = work.list_events(protocol.store, protocol.study.study_id, work.GUIDED_POOLS_EVENT)
    if not frozen:
        return (
            f", judge-guided by {cfg.judge} (its labels are read at the first assignment: run "
            f"`dialeval judge STUDY --bot {cfg.judge}` before anyone starts)"
        )
    pools = frozen[0]["payload"].get("pools", [])
    units = sum(len(p["units"]) for p in pools)
    judged = sum(int(p["judged"]) for p in pools)
    note = f", judge-guided by {cfg.judge} ({judged} of {units} units labelled when collection began"
    return note + (": no labels, so units are drawn uniformly)" if judged == 0 else ")")
