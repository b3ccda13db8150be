"""What the scheduler keeps in memory between assignments, per process and per store.

Two things are kept, both so that handing out a unit does not replay a whole study:

- ``adaptive``: per (study, method, questions, judge-guided?) the AdaptiveState of every question
  and which judgments it has been fed (plan.py feeds it only the judgments stored since);
- ``pools``: per study, the judge-guided pools once they are stored (tickets.py; a frozen pool
  never changes).

Everything here can be rebuilt from the database: losing it (a new process, a new Store) costs one
replay, never a different decision. The caches belong to one Store object (a weak reference: they
go with it), so two stores of two databases in one process never share them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from .pools import PairPool
from .state import AdaptiveState

Pools = dict[str, dict[tuple[str, str], PairPool]]  # question -> {(a, b): PairPool}


@dataclass
class AdaptiveCache:
    """The adaptive states of one study's questions after the judgments fed so far."""

    states: dict[str, AdaptiveState]
    judgments: int
    statuses: tuple  # annotators per status when built: a flag or a block means a full replay
    fed: set[int] = field(default_factory=set)  # ids fed above `floor`
    floor: int = 0  # every judgment with an id <= floor has been fed (or never will be)


@dataclass
class SchedulerState:
    adaptive: dict[tuple, AdaptiveCache] = field(default_factory=dict)
    pools: dict[int, Pools] = field(default_factory=dict)  # study id -> its frozen pools


_BY_STORE: WeakKeyDictionary[Any, SchedulerState] = WeakKeyDictionary()


def scheduler_state(store: Any) -> SchedulerState:
    """The scheduler's per-process state for `store` (made on first use)."""
    state = _BY_STORE.get(store)
    if state is None:
        state = _BY_STORE[store] = SchedulerState()
    return state
