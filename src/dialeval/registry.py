"""The method registry: what a method is (`Method`, one object per method) and every method dialeval
knows, read from one place.

Methods are found through the entry-point group ``dialeval.methods`` (pyproject.toml), so
dialeval's own methods and an outside package's are registered the same way. Each entry point's
value is a `Method`; the package ``dialeval.methods.<id>`` holds all of a built-in method (the
folder holds plug-ins only; this module is the registry). Everything the rest of dialeval knows
about a method is read from here, never from a list or a switch of method ids elsewhere.

Parts that need heavy imports (pandas, scipy, matplotlib, the web framework) are named as
``"module:attribute"`` strings and imported on first use by `load_part` (or the typed loaders
`Method.load_*`), so reading the registry (`dialeval --help`, the study-file check) stays cheap:
this module imports nothing of dialeval but its errors.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol, cast

from .errors import DialevalError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .records import Dataset


# -- the shapes of a method's parts (typing.Protocol: any function with these parameters fits) ------


class AnalysisFunction(Protocol):
    """``Method.analysis``: a data set -> the report dict (JSON-able). The report builder passes the
    study's analysis options (``exclude_annotators``, ``n_boot``, ``seed``, ...) as keywords; an
    analysis declares those it uses, with defaults."""

    def __call__(self, dataset: Dataset, /, **options: Any) -> dict[str, Any]: ...


class FiguresFunction(Protocol):
    """``Method.figures``: the report dict -> {name: matplotlib Figure}."""

    def __call__(self, report: dict[str, Any], /) -> dict[str, Any]: ...


class SimulationStep(Protocol):
    """``SimulationModel.step``: drive one page visit (simulate/annotator.py's SimulatedAnnotator,
    the assignment id, the task page's HTML)."""

    def __call__(self, sim: Any, assignment_id: int, html: str, /) -> None: ...


class AnswerPairsFunction(Protocol):
    """``Method.answer_pairs``: the report dict -> the pairs of systems the report's answer names."""

    def __call__(self, report: dict[str, Any], /) -> list[Any]: ...


@dataclass(frozen=True)
class PlanningModel:
    """How `dialeval plan` sizes a study of this method."""

    seconds_per_judgment: float  # annotator time per judgment, from the method's paper
    test: str  # "binomial" (pairwise preference), "ttest" (ratings), "mannwhitney" (Likert)
    source: str = ""  # where the number comes from (paper, table)
    draws: bool = False  # judgments may be draws (`draw_share` of the expectations applies)
    # "module:function": (pilot report dict, sd or None) -> PilotReading; what `plan --pilot` reads
    # from this method's report. None = the method is not planned from a pilot.
    pilot: str | None = None


@dataclass(frozen=True)
class PilotReading:
    """What a pilot's report says for planning: {(better, worse): P(better preferred)} per pair, the
    SD of ratings (t-test methods), seconds per judgment and the share of draws, when it says them."""

    expectations: dict[tuple[str, str], float]
    sd: float | None = None
    seconds_per_judgment: float | None = None
    draw_share: float | None = None


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
    # which units people see (scheduling/tickets.py)
    judge_guided: bool = False
    session_option: str | None = None  # the protocol option giving an annotator's judgments per session
    # "module:function": (opened study, concurrency, on_total, on_done) -> dialogue.generate.GenerationResult;
    # what `dialeval generate` and the demo run for a method whose material is not self-chats
    generate: str | None = None
    # "module:function": (study config, study folder) -> how many items `generate` makes (progress totals)
    planned: str | None = None
    # format name -> "module:function" (opened study, output path, keep_ties) -> rows written: the
    # method's own `dialeval export --format NAME` (e.g. preference pairs)
    exports: dict[str, str] = field(default_factory=dict)
    # format name -> "module:function" (study folder, [paths], echo): `dialeval import NAME FILES... STUDY`
    # adding material to an existing study of this method (e.g. answers made elsewhere)
    study_imports: dict[str, str] = field(default_factory=dict)
    # "module:function": (data set with the judges' answers, report dict, excluded annotators) -> the
    # report's `examples` (the HTML report's example browser: items, answers, votes, verdicts) or None
    examples: str | None = None
    # The judgment fields its analysis reads, for a report that reads only those, as columns
    # (records.JudgmentColumns): {"question": q, "value": {key: "string" | "integer" | "boolean"},
    # "meta": {key: type}}; None = the analysis gets whole Judgment objects.
    report_columns: dict[str, Any] | None = None
    # False: the analysis reads no turn of a conversation (its bots and meta only), so a report
    # loads only the turns its other sections read (Store.load_dataset: an imported Direct
    # Assessment study of 100,000 ratings holds 2.3 million turns)
    report_reads_turns: bool = True
    # "module:function": (OpenStudy, *, gone: annotator ids) -> int. Brings the store up to date
    # before a report reads it (the arena: held votes whose change window is over become
    # judgments); gone: annotators who have left for good (a simulation's end): nothing they hold
    # can change any more.
    settle: str | None = None
    order: int = 1000  # position in lists (help, demo, admin); entry points come in no useful order

    @property
    def package(self) -> str:
        """The Python package of the method (where its parts live)."""
        return self.options.partition(":")[0].rpartition(".")[0]

    @property
    def collectable(self) -> bool:
        """True when the method has annotation pages (False: import and analysis only)."""
        return self.protocol is not None

    # -- the parts, loaded and typed (the protocol class: protocols.get_protocol) --------------------

    def load_options(self) -> type[BaseModel]:
        """The pydantic model of the study file's `protocol:` block."""
        return cast("type[BaseModel]", load_part(self.options))

    def load_analysis(self) -> AnalysisFunction:
        return cast(AnalysisFunction, load_part(self.analysis))

    def load_figures(self) -> FiguresFunction | None:
        return cast(FiguresFunction, load_part(self.figures)) if self.figures else None

    def load_answer_pairs(self) -> AnswerPairsFunction | None:
        return cast(AnswerPairsFunction, load_part(self.answer_pairs)) if self.answer_pairs else None

    def load_simulation_step(self) -> SimulationStep | None:
        return cast(SimulationStep, load_part(self.simulation.step)) if self.simulation else None


def load_part(spec: str) -> Any:
    """Import ``"module:attribute"`` and return the attribute."""
    module_name, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


__all__ = [
    "ENTRY_POINT_GROUP",
    "AnalysisFunction",
    "AnswerPairsFunction",
    "FiguresFunction",
    "Method",
    "SimulationStep",
    "PilotReading",
    "PlanningModel",
    "SimulationModel",
    "all_methods",
    "get",
    "ids",
    "load_part",
]

ENTRY_POINT_GROUP = "dialeval.methods"


@cache
def all_methods() -> dict[str, Method]:
    """Every registered method by id, ordered by `Method.order` (dialeval's own first, in the order
    of the papers), then by id."""
    found: dict[str, Method] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        method = entry.load()
        if not isinstance(method, Method):
            raise DialevalError(f"entry point '{entry.name}' of group {ENTRY_POINT_GROUP} is not a dialeval Method")
        if method.id != entry.name:
            raise DialevalError(f"entry point '{entry.name}' names method '{method.id}'; the two must match")
        found.setdefault(method.id, method)
    if not found:
        raise DialevalError(
            f"no evaluation method is registered (entry-point group {ENTRY_POINT_GROUP}); "
            "reinstall dialeval (pip install -e .) so its package metadata is current"
        )
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


def get(method_id: str) -> Method:
    """The method with this id; an unknown id raises DialevalError naming the known ones."""
    known = all_methods()
    if method_id not in known:
        raise DialevalError(f"unknown method '{method_id}'; known: {', '.join(known)}")
    return known[method_id]


def ids(*, collectable: bool | None = None) -> tuple[str, ...]:
    """Method ids; `collectable=True` only those with annotation pages, False only import-only."""
    return tuple(m.id for m in all_methods().values() if collectable is None or m.collectable == collectable)
