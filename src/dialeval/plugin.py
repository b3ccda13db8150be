"""The plug-in API: everything an evaluation method, an import format or a bot type is written
against, under public names, typed (docs/methods.md shows a whole outside method).

    from dialeval.plugin import Method, StrictModel, Protocol, Outcome, AnnotatorInfo, AssignmentInfo

A method is one `Method` object (its parts named as ``"module:attribute"`` strings, loaded lazily and
typed by `Method.load_protocol`, `load_options`, `load_analysis`, ...) exported by a package and
registered through the entry-point group ``dialeval.methods``:

- its options: a `StrictModel` subclass (unknown keys and wrong types are errors, as everywhere in a
  study file);
- its pages: a `Protocol` subclass parametrised by those options (``Protocol[MyOptions]``), whose
  hooks take `AnnotatorInfo` / `AssignmentInfo` and answer an `Outcome`; everything it stores or reads
  goes through `Protocol.db`, a `StudyStore` bound to the study; live chats add the `LiveProtocol`
  mixin (its own actions typed `PageAction`); `JudgmentError` refuses an input with a message for the annotator;
- its question presets: `Question`; its analysis: ``(Dataset, **options) -> report dict``
  (`AnalysisFunction`), its figures `FiguresFunction`, its simulation `SimulationModel`, its sizing
  `PlanningModel`.

Scheduling: `assign_locked` gives an annotator a `Choice` under the study lock from a
`SchedulingView` (`assign_in`: the same in a transaction of the method's own that holds the lock;
`answer_with_next`: an answer and the next assignment in one commit, the answer stored alone when
choosing fails, and whether nothing is left for the annotator, so the answer's reply can send them
to the done page); `least_loaded`, `group_load`, `cap_reached`,
`pair_key` and `bot_pairs` balance the work; `adaptive_plan` / `adaptive_note` stop pairs that are
decided; `ticket_for` / `GuidedUnits` draw the judge-guided tickets; `voter_screen` is the admin
page's screening of pairwise voters (dialeval.scheduling's docstring says why a pair was chosen).

`check_method(method)` (dialeval.conformance) runs the conformance checks a method must pass.

A name is imported when it is first used (PEP 562 module ``__getattr__``): ``from dialeval.plugin
import StrictModel`` in a method's options module loads the study-file models only, not the store,
the scheduler and the statistics behind them (pandas, scipy: seconds on every `dialeval init`). A
method package's ``__init__`` should still import `Method`, `PlanningModel` and `SimulationModel`
from `dialeval.registry`, the cheapest module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and readers see; at run time __getattr__ imports on first use
    from .bots.base import Bot, BotContext, ChatMessage
    from .config import StrictModel, StudyConfig
    from .errors import DialevalError, JudgmentError
    from .protocols.base import AdminSummary, Completion, Outcome, Protocol, StudyContext, session_progress
    from .protocols.live import LiveProtocol, PageAction
    from .protocols.voters import voter_screen
    from .questions import Question
    from .records import Conversation, Dataset, Judgment, Turn, Unit
    from .registry import (
        AnalysisFunction,
        FiguresFunction,
        Method,
        PlanningModel,
        SimulationModel,
        load_part,
    )
    from .scheduling.assign import (
        Choice,
        Group,
        SchedulingView,
        answer_with_next,
        assign_in,
        assign_locked,
        bot_pairs,
        cap_reached,
        conversation_load,
        group_load,
        least_loaded,
        pair_key,
    )
    from .scheduling.plan import ADAPTIVE_STOPPED, adaptive_note, adaptive_plan
    from .scheduling.tickets import GuidedUnits, ticket_for
    from .store.facade import StudyStore
    from .store.work import AnnotatorInfo, AssignmentInfo, JudgmentLite, UnitInfo

# the module of each public name, relative to this package
_WHERE: dict[str, str] = {
    "ADAPTIVE_STOPPED": ".scheduling.plan",
    "AdminSummary": ".protocols.base",
    "AnalysisFunction": ".registry",
    "AnnotatorInfo": ".store.work",
    "AssignmentInfo": ".store.work",
    "Bot": ".bots.base",
    "BotContext": ".bots.base",
    "ChatMessage": ".bots.base",
    "Choice": ".scheduling.assign",
    "Completion": ".protocols.base",
    "Conversation": ".records",
    "Dataset": ".records",
    "DialevalError": ".errors",
    "FiguresFunction": ".registry",
    "Group": ".scheduling.assign",
    "GuidedUnits": ".scheduling.tickets",
    "Judgment": ".records",
    "JudgmentError": ".errors",
    "JudgmentLite": ".store.work",
    "LiveProtocol": ".protocols.live",
    "Method": ".registry",
    "Outcome": ".protocols.base",
    "PageAction": ".protocols.live",
    "PlanningModel": ".registry",
    "Protocol": ".protocols.base",
    "Question": ".questions",
    "SchedulingView": ".scheduling.assign",
    "SimulationModel": ".registry",
    "StrictModel": ".config",
    "StudyConfig": ".config",
    "StudyContext": ".protocols.base",
    "StudyStore": ".store.facade",
    "Turn": ".records",
    "Unit": ".records",
    "UnitInfo": ".store.work",
    "adaptive_note": ".scheduling.plan",
    "adaptive_plan": ".scheduling.plan",
    "answer_with_next": ".scheduling.assign",
    "assign_in": ".scheduling.assign",
    "assign_locked": ".scheduling.assign",
    "bot_pairs": ".scheduling.assign",
    "cap_reached": ".scheduling.assign",
    "conversation_load": ".scheduling.assign",
    "group_load": ".scheduling.assign",
    "least_loaded": ".scheduling.assign",
    "load_part": ".registry",
    "pair_key": ".scheduling.assign",
    "session_progress": ".protocols.base",
    "ticket_for": ".scheduling.tickets",
    "voter_screen": ".protocols.voters",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, "dialeval"), name)
    globals()[name] = value  # once: the next lookup finds it without calling this
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ADAPTIVE_STOPPED",
    "AdminSummary",
    "AnalysisFunction",
    "AnnotatorInfo",
    "AssignmentInfo",
    "Bot",
    "BotContext",
    "ChatMessage",
    "Choice",
    "Completion",
    "Conversation",
    "Dataset",
    "DialevalError",
    "FiguresFunction",
    "Group",
    "GuidedUnits",
    "Judgment",
    "JudgmentError",
    "JudgmentLite",
    "LiveProtocol",
    "Method",
    "Outcome",
    "PageAction",
    "PlanningModel",
    "Protocol",
    "Question",
    "SchedulingView",
    "SimulationModel",
    "StrictModel",
    "StudyConfig",
    "StudyContext",
    "StudyStore",
    "Turn",
    "Unit",
    "UnitInfo",
    "adaptive_note",
    "adaptive_plan",
    "answer_with_next",
    "assign_in",
    "assign_locked",
    "bot_pairs",
    "cap_reached",
    "conversation_load",
    "group_load",
    "least_loaded",
    "load_part",
    "pair_key",
    "session_progress",
    "ticket_for",
    "voter_screen",
]
