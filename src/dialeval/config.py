"""Study files: YAML validated into typed config. An error names the file, the field and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import methods
from .errors import StudyFileError
from .methods import load_part

STUDY_FILE = "study.yaml"
IMPORTED_BOT = "imported"


class _Strict(BaseModel):
    # A misspelt key is an error, not silently ignored.
    model_config = ConfigDict(extra="forbid")


class BotConfig(_Strict):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.+\-]+$")
    type: str
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _options_fit_type(self) -> BotConfig:
        if self.type == IMPORTED_BOT:  # a system known only from imported data; it cannot chat
            return self
        from .bots.registry import validate_bot_options  # the bots know their own options

        validate_bot_options(self.type, self.options, name=self.name)
        return self


class GenerationConfig(_Strict):
    """How conversations are made before annotation (ACUTE self-chats, Spot The Bot bot-bot chats)."""

    mode: Literal["self-chat", "bot-bot", "none"] = "none"
    conversations: int = Field(10, ge=1, le=100_000, description="per bot (self-chat) or per bot pair (bot-bot)")
    turns: int = Field(6, ge=1, le=100, description="turns per side")
    personas: bool = True
    seed_from_corpus: bool = True
    corpus: str | None = None
    concurrency: int = Field(4, ge=1, le=256)
    human_conversations: int = Field(0, ge=0, description="human-human corpus conversations mixed in")


class QuestionConfig(_Strict):
    id: str
    text: str | None = None  # None: the preset of that id
    choice: str | None = None


class OnboardingConfig(_Strict):
    enabled: bool = True
    on_fail: Literal["block", "flag"] = "block"
    tries: int = Field(2, ge=1, le=5, description="practice attempts before on_fail applies")


class AnnotationConfig(_Strict):
    units_per_annotator: int = Field(5, ge=1)
    expire_minutes: float = Field(30, gt=0)
    require_justification: bool = True
    min_justification_words: int = Field(2, ge=0)


class QualityConfig(_Strict):
    worker_filters: bool = True
    offensive_words: str | None = None  # a file of one word per line, replacing the default list
    drop_never_justifies: bool = True


class RecruitmentConfig(_Strict):
    platform: Literal["link", "prolific", "mturk", "volunteer"] = "link"
    completion_code: str | None = None
    # A Prolific/MTurk id opened in a second browser: "refuse" it, or "confirm" (the annotator
    # confirms and the study moves to this browser; the first one is signed out).
    second_browser: Literal["refuse", "confirm"] = "confirm"
    # Where a screened-out annotator returns the study (shown on the practice-failed page);
    # default: Prolific's submissions page for Prolific, MTurk's "Return" button for MTurk.
    return_url: str | None = None


class LimitsConfig(_Strict):
    """Sizes of texts that reach the store from bots and annotators (imports: --max-text-chars)."""

    bot_reply_chars: int = Field(4000, ge=100, le=100_000, description="a longer bot reply is cut here")
    message_chars: int = Field(2000, ge=10, le=20_000, description="longest annotator chat message")


class PagesConfig(_Strict):
    title: str | None = None
    consent: str = (
        "You are invited to take part in a research study on chatbots. Your answers are stored "
        "without your name. You may stop at any time."
    )
    instructions: str | None = None


class AdaptiveConfig(_Strict):
    """Adaptive collection (acute, pairwise-turn): which bot pair the next unit comes from and when
    the study stops (adaptive.py). `prior`: a of the Beta(a, a) mixing prior of the anytime-valid
    test; `transitive`: a pair whose order follows from decided pairs gets no more units;
    `max_judgments`: optional study-wide budget of judgments (the study stops there, decided or not);
    `annotator_block`: most judgments of one annotator on one pair taken as one factor by the
    annotator-level test (stats/sequential.py)."""

    enabled: bool = False
    stopping: Literal["none", "confidence-sequence"] = "confidence-sequence"
    alpha: float = Field(0.05, gt=0, lt=0.5)
    selection: Literal["uniform", "variance-reduction", "rank-overlap"] = "uniform"
    prior: float = Field(20, gt=0, le=10_000)
    transitive: bool = True
    max_judgments: int | None = Field(None, ge=1)
    # judgments of one annotator on one pair that form one factor of the annotator-level test
    annotator_block: int = Field(10, ge=1, le=1000)
    # judge-guided collection (adaptive.py, protocols/guided.py): the name of a judge under `judges:`
    # whose labels, run beforehand with `dialeval judge`, decide which units people see (the units
    # it is unsure about more often) and enter each pair's prediction-powered anytime-valid test
    judge: str | None = None
    # share of plain uniform sampling mixed into the judge-guided draw (keeps every unit's chance of
    # being seen away from 0, so a wrongly confident judge cannot blow up the test's weights)
    judge_mix: float = Field(0.5, gt=0, le=1)


def protocol_options(method: str) -> type[BaseModel]:
    """The pydantic model of the `protocol:` block of a method (methods/<id>/options.py)."""
    return load_part(methods.get(method).options)


class StudyConfig(_Strict):
    name: str = Field(min_length=1, max_length=200)
    method: str  # a registered method id (dialeval.methods.ids())
    description: str = ""
    seed: int = 0
    database: str | None = None  # None: dialeval.db in the study folder (or $DIALEVAL_DATABASE_URL)
    bots: list[BotConfig] = Field(min_length=1)
    # LLM judges (`dialeval judge STUDY --bot NAME`): bots that answer the annotators' questions,
    # never evaluated themselves (no conversations, no units)
    judges: list[BotConfig] = Field(default_factory=list)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    questions: list[QuestionConfig] = Field(default_factory=list)
    onboarding: OnboardingConfig = Field(default_factory=OnboardingConfig)
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    recruitment: RecruitmentConfig = Field(default_factory=RecruitmentConfig)
    pages: PagesConfig = Field(default_factory=PagesConfig)
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    protocol: dict[str, Any] = Field(default_factory=dict)
    imported_from: dict[str, Any] | None = None  # {format, path, ...} for a study made by `dialeval import`

    @field_validator("method")
    @classmethod
    def _known_method(cls, value: str) -> str:
        if value not in methods.ids():
            known = ", ".join(f"'{m}'" for m in methods.ids())
            raise ValueError(f"unknown method '{value}'; choose one of: {known}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> StudyConfig:
        names = [b.name for b in self.bots]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"bot names must be unique; repeated: {', '.join(duplicates)}")
        judges = [b.name for b in self.judges]
        clashes = sorted({n for n in judges if judges.count(n) > 1 or n in names})
        if clashes:
            raise ValueError(f"judge names must be unique and differ from the bots'; repeated: {', '.join(clashes)}")
        if methods.get(self.method).paired and self.imported_from is None:
            compared = [b.name for b in self.bots if b.type != "degraded"]
            if len(compared) < 2:
                raise ValueError(
                    f"a {self.method} study compares bots in pairs: list at least two bots under "
                    f"bots (it has {len(compared)}: {', '.join(compared) or 'none'})"
                )
        if self.adaptive.judge is not None:
            if self.adaptive.judge not in judges:
                listed = ", ".join(judges) or "none"
                raise ValueError(
                    f"adaptive.judge names '{self.adaptive.judge}', which is not a judge of this study "
                    f"(judges: {listed}); add it under judges: and run `dialeval judge` before collecting"
                )
            if not methods.get(self.method).judge_guided:
                raise ValueError(
                    f"adaptive.judge needs units that exist before collection, which a judge can label "
                    f"first; method '{self.method}' makes its units during collection"
                )
        presets = methods.get(self.method).question_presets
        for q in self.questions:
            if q.text is None and q.id not in presets:
                allowed = ", ".join(presets) or "none for this method"
                raise ValueError(f"question '{q.id}' has no text and is not a preset (presets: {allowed})")
        try:
            options = self.options  # validates the protocol block for this method
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"protocol.{_location(first['loc'])}: {first['msg']}") from None
        for pair in getattr(options, "pairs", None) or []:
            for bot in pair:
                if bot not in names:
                    raise ValueError(f"protocol.pairs names bot '{bot}', which is not in bots ({', '.join(names)})")
        return self

    @property
    def options(self) -> Any:
        """The method's own options (AcuteOptions, SpotTheBotOptions, ...), defaults filled in."""
        return protocol_options(self.method).model_validate(self.protocol)

    def bot(self, name: str) -> BotConfig:
        for b in self.bots:
            if b.name == name:
                return b
        raise StudyFileError(f"study '{self.name}' has no bot '{name}' (bots: {', '.join(b.name for b in self.bots)})")


def _location(loc: tuple) -> str:
    return ".".join(str(part) for part in loc if not (isinstance(part, str) and part.startswith("function-")))


def format_validation_error(path: str | Path, error: ValidationError) -> str:
    lines = [f"{path}: the study file is not valid:"]
    for e in error.errors():
        where = _location(e["loc"]) or "(top level)"
        message = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            message = "unknown field (check the spelling; `dialeval init METHOD DIR` writes a commented example)"
        lines.append(f"  - {where}: {message}")
    return "\n".join(lines)


def parse_study(data: Any, path: str | Path = "<study>") -> StudyConfig:
    from .errors import BotError

    if not isinstance(data, dict):
        raise StudyFileError(
            f"{path}: a study file is a YAML mapping (name:, method:, bots: ...), not {type(data).__name__}"
        )
    if data.get("method") in methods.ids() and isinstance(data.get("protocol"), dict):
        try:  # check the method block here so its errors say protocol.<field>
            protocol_options(data["method"]).model_validate(data["protocol"])
        except ValidationError as exc:
            raise StudyFileError(format_validation_error(path, exc).replace("  - ", "  - protocol.")) from None
    try:
        return StudyConfig.model_validate(data)
    except ValidationError as exc:
        raise StudyFileError(format_validation_error(path, exc)) from None
    except BotError as exc:
        raise StudyFileError(f"{path}: {exc}") from None


def study_file(path: str | Path) -> Path:
    """A study folder or its study.yaml -> the study.yaml path."""
    p = Path(path)
    return p / STUDY_FILE if p.is_dir() or p.suffix not in {".yaml", ".yml"} else p


def load_study(path: str | Path) -> StudyConfig:
    file = study_file(path)
    if not file.exists():
        raise StudyFileError(f"{file}: no study file here; create one with `dialeval init METHOD {Path(path)}`")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise StudyFileError(f"{file}{where}: not valid YAML: {problem}") from None
    return parse_study(data, file)
