"""What a method is: one `Method` object, exported by the package `dialeval.methods.<id>`.

Everything the rest of dialeval knows about a method is read from here (through
`dialeval.methods.registry`), never from a list or a switch of method ids elsewhere.

Parts that need heavy imports (pandas, scipy, matplotlib, the web framework) are named as
``"module:attribute"`` strings and imported on first use by `load_part`, so reading the registry
(`dialeval --help`, the study-file check) stays cheap.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PlanningModel:
    """How `dialeval plan` sizes a study of this method."""

    seconds_per_judgment: float  # annotator time per judgment, from the method's paper
    test: str  # "binomial" (pairwise preference), "ttest" (ratings), "mannwhitney" (Likert)
    source: str = ""  # where the number comes from (paper, table)
    draws: bool = False  # judgments may be draws (`draw_share` of the expectations applies)


@dataclass(frozen=True)
class SimulationModel:
    """How `dialeval simulate` drives this method's pages (simulate/annotator.py is the generic driver)."""

    step: str  # "module:function": (SimulatedAnnotator, assignment id, task page HTML) -> None
    judgment_actions: tuple[str, ...]  # the page actions that record a judgment
    seconds: dict[str, float]  # mean seconds of a person per step kind (think(kind) in the step)
    abandon_within: int = 0  # an abandoning annotator leaves before one of the first N page visits of a unit
    corpus: bool = False  # the simulated annotator chats, opening with lines of the bundled corpus
    checks: str | None = None  # "module:function": (store, study_id, annotator_id) -> extra QC reasons


@dataclass(frozen=True)
class Method:
    """One evaluation method. Built-in methods and outside packages register the same way: an
    entry point in the group ``dialeval.methods`` whose value is this object."""

    id: str  # the study file's `method:` value
    title: str  # shown to researchers (report, admin page, docs)
    paper: str  # the citation the report's methods section gives
    options: str  # "module:Model": pydantic model of the study file's `protocol:` block
    analysis: str  # "module:function": Dataset -> report dict
    protocol: str | None = None  # "module:Class": the annotation pages; None = import-only method
    figures: str | None = None  # "module:function": report dict -> {name: matplotlib Figure}
    methods_text: str | None = None  # the report's methods paragraph: what annotators did, what is reported
    study_template: str | None = None  # "package:file.yaml": the study file `dialeval init` writes
    demo: dict[str, Any] | None = None  # the demo study (bots, protocol...); None = not in the demo
    simulation: SimulationModel | None = None  # None = `dialeval simulate` cannot drive this method
    planning: PlanningModel | None = None  # None = `dialeval plan` does not size this method
    question_presets: dict[str, Any] = field(default_factory=dict)
    importers: tuple[str, ...] = ()  # format names (dialeval.formats registry) that yield this method
    judge: str | None = None  # "module:function": the LLM-judge adapter; None = judges not supported
    paired: bool = False  # a judgment compares two bots (a one-bot study is refused)
    live: bool = False  # annotators chat with the bots (no pre-generated conversations)
    onboarding_check: bool = False  # the pages run an onboarding check before the task
    templates: str | None = None  # package whose templates/ folder holds the task and instructions pages
    instructions: str | None = None  # the instructions page's template (in `templates`)
    limits: str = ""  # the report answer's "Limits:" paragraph
    answer_pairs: str | None = None  # "module:function": report dict -> the answer's pairs of systems
    excluded_bot_types: frozenset[str] = frozenset()  # bot types never compared (adaptive scheduler, report)
    # units exist before collection, so a judge can label them first and adaptive.judge can steer
    # which units people see (adaptive.py, protocols/guided.py)
    judge_guided: bool = False
    session_option: str | None = None  # the protocol option giving an annotator's judgments per session
    order: int = 1000  # position in lists (help, demo, admin); entry points come in no useful order

    @property
    def package(self) -> str:
        """The Python package of the method (where its parts live)."""
        return self.options.partition(":")[0].rpartition(".")[0]

    @property
    def collectable(self) -> bool:
        """True when the method has annotation pages (False: import and analysis only)."""
        return self.protocol is not None


def load_part(spec: str) -> Any:
    """Import ``"module:attribute"`` and return the attribute."""
    module_name, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module_name), attribute)
