"""Study files: YAML validated into typed config. An error names the file, the field and what is allowed."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import registry
from .errors import StudyFileError

STUDY_FILE = "study.yaml"
IMPORTED_BOT = "imported"

# Limits of a study file, which may come from a colleague or the internet: it must never make
# dialeval hang, fill the memory or run code (safe YAML tags only, aliases counted before expansion).
MAX_STUDY_BYTES = 4 * 1024 * 1024  # the biggest study file read
MAX_YAML_DEPTH = 64  # nesting of mappings and lists
MAX_YAML_NODES = 200_000  # values after every alias is expanded (a "billion laughs" has 10^9)
MAX_BOTS = 2_000  # bots (and judges) of one study
MAX_PAIRS = 100_000  # bot pairs a paired method compares (every pair of ~450 bots)
MAX_PLANNED_CONVERSATIONS = 1_000_000  # what `generation:` may ask for
MAX_INT = 2**63 - 1  # what the database stores
MAX_EXPIRE_MINUTES = 60 * 24 * 30  # a task kept open for a month at most
MAX_JUSTIFICATION_WORDS = 500


class StrictModel(BaseModel):
    # A misspelt key is an error, not silently ignored; `.inf` and `.nan` are not numbers of a study.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class BotConfig(StrictModel):
    # the bot's name in this study (letters, digits, _ . + -); shown in reports, never to annotators
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.+\-]+$")
    type: str  # openai, retrieval, degraded, repeat, eliza, human or local-llm
    options: dict[str, Any] = Field(default_factory=dict)  # the type's own options (see Bot options, per bot type)

    @model_validator(mode="after")
    def _options_fit_type(self) -> BotConfig:
        if self.type == IMPORTED_BOT:  # a system known only from imported data; it cannot chat
            return self
        from .bots.registry import validate_bot_options  # the bots know their own options

        validate_bot_options(self.type, self.options, name=self.name)
        return self


class GenerationConfig(StrictModel):
    """How conversations are made before annotation (ACUTE self-chats, Spot The Bot bot-bot chats)."""

    # self-chat: each bot plays both sides; bot-bot: every pair of bots; none: no generation
    mode: Literal["self-chat", "bot-bot", "none"] = "none"
    conversations: int = Field(10, ge=1, le=100_000, description="per bot (self-chat) or per bot pair (bot-bot)")
    turns: int = Field(6, ge=1, le=100, description="turns per side")
    personas: bool = True  # two persona sentences per side
    seed_from_corpus: bool = True  # the first exchange of a random corpus conversation starts each chat
    # seeds and human conversations come from the bundled corpus; no other can be named yet
    corpus: Literal["chitchat"] | None = Field(
        None, description="the corpus of seeds and human conversations: only the bundled 'chitchat' for now"
    )
    concurrency: int = Field(4, ge=1, le=256)  # conversations made at the same time
    human_conversations: int = Field(0, ge=0, le=100_000, description="human-human corpus conversations mixed in")


class QuestionConfig(StrictModel):
    id: str  # a preset of the method (its wording), or an id of your own with text
    text: str | None = None  # None: the preset of that id
    choice: str | None = None  # the answer's wording, {n} for the speaker's number; None: the preset's


class OnboardingConfig(StrictModel):
    enabled: bool = True  # a practice task with a known answer before the work
    on_fail: Literal["block", "flag"] = "block"  # block: the annotator cannot go on; flag: kept but marked
    tries: int = Field(2, ge=1, le=5, description="practice attempts before on_fail applies")


class AnnotationConfig(StrictModel):
    units_per_annotator: int = Field(5, ge=1, le=10_000)  # units in one annotator's session
    # an assignment left alone this long goes back to the pool
    expire_minutes: float = Field(30, gt=0, le=MAX_EXPIRE_MINUTES)
    require_justification: bool = True  # a written reason with every choice, checked by the server
    min_justification_words: int = Field(2, ge=0, le=MAX_JUSTIFICATION_WORDS)  # the shortest reason accepted, in words


class QualityConfig(StrictModel):
    worker_filters: bool = True  # flag annotators whose chat messages fail the worker filters
    offensive_words: str | None = None  # a file of one word per line, replacing the default list
    drop_never_justifies: bool = True  # flag an annotator who never gives a reason
    # flag (list, never remove) an annotator whose texts are this share pasted, or echo the bots'
    # replies this much (quality/typing.py; report `input_signals`, admin page)
    paste_flag: float = Field(0.5, gt=0, le=1)


class RecruitmentConfig(StrictModel):
    # where annotators come from: the links and the end of a session
    platform: Literal["link", "prolific", "mturk", "volunteer"] = "link"
    completion_code: str | None = None  # the code of a completed session (Prolific's redirect)
    # A Prolific/MTurk id opened in a second browser: "refuse" it, or "confirm" (the annotator
    # confirms and the study moves to this browser; the first one is signed out).
    second_browser: Literal["refuse", "confirm"] = "confirm"
    # Where a screened-out annotator returns the study (shown on the practice-failed page);
    # default: Prolific's submissions page for Prolific, MTurk's "Return" button for MTurk.
    return_url: str | None = None


class LimitsConfig(StrictModel):
    """Sizes of texts that reach the store from bots and annotators (imports: --max-text-chars)."""

    # 16,000 characters: the longest answer a current assistant writes under the usual output cap of
    # 4,096 tokens (GPT-4 Turbo, Claude 3), at ~4 characters per English token. Typical answers are
    # far shorter: 662 tokens (~2,600 characters) on average for GPT-4 Turbo on Arena-Hard-Auto (Li
    # et al., 2024, arXiv:2406.11939); a long Markdown answer of ~750 words is ~4,500. So only a
    # runaway reply is cut (at a word boundary, marked "[answer shortened]": textclean.cut_reply).
    bot_reply_chars: int = Field(16_000, ge=100, le=100_000, description="a longer bot reply is cut here")
    message_chars: int = Field(2000, ge=10, le=20_000, description="longest annotator chat message")


class PagesConfig(StrictModel):
    title: str | None = None  # the pages' title; None: the study's name
    # shown before the task; the annotator agrees to it
    consent: str = (
        "You are invited to take part in a research study on chatbots. Your answers are stored "
        "without your name. With each text you write we record how it was entered (how many "
        "characters were typed or pasted, and how long it took), never the keys themselves. You may "
        "stop at any time."
    )
    instructions: str | None = None  # replaces the method's instructions (before the task, How to)
    # Bot text shown as rendered Markdown (bot_markdown.py), on every method's pages; false shows
    # the raw text, for a protocol that must (a paper's replication). Ordinary sentences look the
    # same either way, so on is the default for the chit-chat methods too.
    markdown: bool = True


class AdaptiveConfig(StrictModel):
    """Adaptive collection (acute, pairwise-turn): which bot pair the next unit comes from and when
    the study stops (scheduling/state.py). `prior`: a of the Beta(a, a) mixing prior of the anytime-valid
    test; `transitive`: a pair whose order follows from decided pairs gets no more units;
    `max_judgments`: optional study-wide budget of judgments (the study stops there, decided or not);
    `annotator_block`: most judgments of one annotator on one pair taken as one factor by the
    annotator-level test (stats/sequential.py)."""

    enabled: bool = False  # the scheduler picks the bot pair of the next unit
    # confidence-sequence: a pair stops when decided; none: never
    stopping: Literal["none", "confidence-sequence"] = "confidence-sequence"
    alpha: float = Field(0.05, gt=0, lt=0.5)  # the study's error rate, over every pair and question
    # which undecided pair gets the next unit
    selection: Literal["uniform", "variance-reduction", "rank-overlap"] = "uniform"
    prior: float = Field(20, gt=0, le=10_000)  # a of the Beta(a, a) mixing prior of the anytime-valid test
    transitive: bool = True  # no more units for a pair whose order follows from decided pairs
    # the study stops at this many judgments, decided or not
    max_judgments: int | None = Field(None, ge=1, le=100_000_000)
    # judgments of one annotator on one pair that form one factor of the annotator-level test
    annotator_block: int = Field(10, ge=1, le=1000)
    # judge-guided collection (scheduling/tickets.py): the name of a judge under `judges:`
    # whose labels, run beforehand with `dialeval judge`, decide which units people see (the units
    # it is unsure about more often) and enter each pair's prediction-powered anytime-valid test
    judge: str | None = None
    # share of plain uniform sampling mixed into the judge-guided draw (keeps every unit's chance of
    # being seen away from 0, so a wrongly confident judge cannot blow up the test's weights)
    judge_mix: float = Field(0.5, gt=0, le=1)


class RankingConfig(StrictModel):
    """How a pairwise leaderboard is ranked and marked (analysis/ranking.py): the tie model, when a
    system is provisional, and the robustness audit."""

    # half: a tie is half a win for each side (Chatbot Arena); ignore: ties dropped; davidson /
    # rao-kupper: a model with its own tie probability (Davidson 1970; Rao & Kupper 1967)
    ties: Literal["half", "ignore", "davidson", "rao-kupper"] = "half"
    # a system with fewer votes than this, or an interval wider than this (rating points), is provisional
    provisional_votes: int = Field(100, ge=0, le=10_000_000)
    # an interval wider than this, in rating points, is provisional
    provisional_width: float = Field(100.0, gt=0, le=100_000)
    # votes to drop to reverse the top rank and each adjacent pair (Huang et al., ICLR 2026)
    robustness: bool = True


class AnnotatorsConfig(StrictModel):
    """Annotator models and voter screening (analysis/annotators.py)."""

    # Dawid-Skene, MACE and Crowd-BT sections in the report
    models: bool = True
    # alpha of the per-voter sequential outlier test (flagged when its e-value passes 1/alpha)
    screening_alpha: float = Field(0.05, gt=0, lt=1)
    # study: alpha is the chance of flagging any voter who votes like the others (each voter at
    # alpha / voters); voter: each voter at alpha, as Chatbot Arena does
    screening_per: Literal["study", "voter"] = "study"
    # leave flagged voters out of the pairwise leaderboard (they are always listed, never deleted)
    exclude_flagged: bool = False
    # count at most this many votes per prompt (exact and near duplicates together) before ranking
    prompt_cap: int | None = Field(None, ge=1, le=1_000_000)
    # word 3-shingle Jaccard similarity from which two prompts are near duplicates
    near_duplicate: float = Field(0.8, gt=0, le=1)
    # open (volunteer-link) studies: at most this many judgments per annotator per UTC day
    daily_cap: int | None = Field(None, ge=1, le=1_000_000)


class _Mark(Protocol):
    """Where a YAML event starts (PyYAML's pure-Python and C loaders have one Mark class each)."""

    @property
    def line(self) -> int: ...


def protocol_options(method: str) -> type[BaseModel]:
    """The pydantic model of the `protocol:` block of a method (methods/<id>/options.py)."""
    return registry.get(method).load_options()


class StudyConfig(StrictModel):
    name: str = Field(min_length=1, max_length=200)  # the study's name; changing it keeps the data (.study-id)
    method: str  # a registered method id (dialeval.registry.ids())
    description: str = ""  # shown to annotators on the study's start page
    seed: int = Field(0, ge=-MAX_INT, le=MAX_INT)  # the same seed gives the same conversations and units
    database: str | None = None  # None: dialeval.db in the study folder (or $DIALEVAL_DATABASE_URL)
    bots: list[BotConfig] = Field(min_length=1, max_length=MAX_BOTS)
    # LLM judges (`dialeval judge STUDY --bot NAME`): bots that answer the annotators' questions,
    # never evaluated themselves (no conversations, no units)
    judges: list[BotConfig] = Field(default_factory=list, max_length=MAX_BOTS)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    questions: list[QuestionConfig] = Field(default_factory=list, max_length=100)
    onboarding: OnboardingConfig = Field(default_factory=OnboardingConfig)
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    recruitment: RecruitmentConfig = Field(default_factory=RecruitmentConfig)
    pages: PagesConfig = Field(default_factory=PagesConfig)
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    ranking: RankingConfig = Field(default_factory=RankingConfig)
    annotators: AnnotatorsConfig = Field(default_factory=AnnotatorsConfig)
    protocol: dict[str, Any] = Field(default_factory=dict)  # the method's own settings (see protocol, per method)
    imported_from: dict[str, Any] | None = None  # {format, path, ...} for a study made by `dialeval import`

    @field_validator("method")
    @classmethod
    def _known_method(cls, value: str) -> str:
        if value not in registry.ids():
            known = ", ".join(f"'{m}'" for m in registry.ids())
            raise ValueError(f"unknown method '{value}'; choose one of: {known}")
        return value

    @field_validator("database")
    @classmethod
    def _database_folder_exists(cls, value: str | None) -> str | None:
        # A typo in the path must not silently make folders and an empty database elsewhere.
        if value and value.startswith("sqlite:///"):
            path = value.removeprefix("sqlite:///")
            if path and path != ":memory:" and not Path(path).parent.is_dir():
                raise ValueError(
                    f"the folder of the SQLite database '{path}' does not exist; create it or correct the path"
                )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> StudyConfig:
        names = [b.name for b in self.bots]
        # Counter and sets, not list.count per name: a study may have thousands of bots
        duplicates = sorted(n for n, k in Counter(names).items() if k > 1)
        if duplicates:
            raise ValueError(f"bot names must be unique; repeated: {', '.join(duplicates)}")
        judges = [b.name for b in self.judges]
        bot_names = set(names)
        clashes = sorted({n for n, k in Counter(judges).items() if k > 1} | (set(judges) & bot_names))
        if clashes:
            raise ValueError(f"judge names must be unique and differ from the bots'; repeated: {', '.join(clashes)}")
        if registry.get(self.method).paired and self.imported_from is None:
            compared = [b.name for b in self.bots if b.type != "degraded"]
            if len(compared) < 2:
                raise ValueError(
                    f"a {self.method} study compares bots in pairs: list at least two bots under "
                    f"bots (it has {len(compared)}: {', '.join(compared) or 'none'})"
                )
        chatting = sum(b.type not in ("degraded", IMPORTED_BOT) for b in self.bots)
        pairs = chatting * (chatting - 1) // 2
        if registry.get(self.method).paired and pairs > MAX_PAIRS and not self.protocol.get("pairs"):
            raise ValueError(
                f"{chatting} bots make {pairs:,} pairs to compare, more than {MAX_PAIRS:,}; "
                "list the pairs to compare under protocol.pairs"
            )
        per = {"self-chat": chatting, "bot-bot": pairs}.get(self.generation.mode, 0)
        if per * self.generation.conversations > MAX_PLANNED_CONVERSATIONS:
            raise ValueError(
                f"generation would make {per * self.generation.conversations:,} conversations "
                f"(generation.conversations x {per:,}), more than {MAX_PLANNED_CONVERSATIONS:,}"
            )
        if self.adaptive.judge is not None:
            if self.adaptive.judge not in judges:
                listed = ", ".join(judges) or "none"
                raise ValueError(
                    f"adaptive.judge names '{self.adaptive.judge}', which is not a judge of this study "
                    f"(judges: {listed}); add it under judges: and run `dialeval judge` before collecting"
                )
            if not registry.get(self.method).judge_guided:
                raise ValueError(
                    f"adaptive.judge needs units that exist before collection, which a judge can label "
                    f"first; method '{self.method}' makes its units during collection"
                )
        presets = registry.get(self.method).question_presets
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
                if bot not in bot_names:
                    raise ValueError(f"protocol.pairs names bot '{bot}', which is not in bots ({_few(names)})")
        # a method's own check of what cannot work with these bots (e.g. ACUTE's onboarding bot);
        # an imported study collects nothing, so its protocol block is never run
        check = getattr(options, "check_study", None)
        if check is not None and self.imported_from is None:
            check(self)
        return self

    @property
    def options(self) -> Any:
        """The method's own options (AcuteOptions, SpotTheBotOptions, ...), defaults filled in."""
        return protocol_options(self.method).model_validate(self.protocol)

    def bot(self, name: str) -> BotConfig:
        for b in self.bots:
            if b.name == name:
                return b
        raise StudyFileError(f"study '{self.name}' has no bot '{name}' (bots: {_few([b.name for b in self.bots])})")


def _few(names: list[str], shown: int = 10) -> str:
    """Names for a message: the first few and how many more (a study may have thousands of bots)."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _location(loc: tuple[int | str, ...]) -> str:
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
    bad = _bad_number(data)
    if bad is not None:
        where, value = bad
        raise StudyFileError(
            f"{path}: {where or '(top level)'}: {value} is not a usable number "
            f"(numbers must be finite and between -2^63 and 2^63)"
        )
    if data.get("method") in registry.ids() and isinstance(data.get("protocol"), dict):
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


def _bad_number(data: Any) -> tuple[str, str] | None:
    """(field path, value) of the first NaN, infinity or integer beyond 64 bits anywhere in the
    document (bot options and imported_from included), walked without recursion."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, bool):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            return where, str(value)
        if isinstance(value, int) and abs(value) > MAX_INT:
            return where, f"an integer of {value.bit_length()} bits"
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
    return None


def study_file(path: str | Path) -> Path:
    """A study folder or its study.yaml -> the study.yaml path."""
    p = Path(path)
    return p / STUDY_FILE if p.is_dir() or p.suffix not in {".yaml", ".yml"} else p


def load_study(path: str | Path) -> StudyConfig:
    file = study_file(path)
    if not file.exists():
        raise StudyFileError(f"{file}: no study file here; create one with `dialeval init METHOD {Path(path)}`")
    return parse_study(read_study_yaml(file), file)


_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed: same rules, faster


def read_study_yaml(file: Path) -> Any:
    """The YAML document of a study file, read within the limits above (StudyFileError otherwise).

    Only the standard tags (safe loading: no Python objects, so no code runs). Before anything is
    built, the events are scanned once: the nesting depth and the number of values *after* alias
    expansion are counted, so a "billion laughs" or a 10,000-deep list is refused in milliseconds."""
    try:
        with file.open("rb") as f:
            raw = f.read(MAX_STUDY_BYTES + 1)
    except OSError as exc:
        raise StudyFileError(f"{file}: cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_STUDY_BYTES:
        raise StudyFileError(f"{file}: the study file is larger than {MAX_STUDY_BYTES // (1024 * 1024)} MB")
    text = decode_study_text(file, raw)
    try:
        _check_yaml_shape(file, text)
        return yaml.load(text, Loader=_SafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise StudyFileError(f"{file}{where}: not valid YAML: {problem}") from None
    except ValueError:  # Python refuses to read an integer of thousands of digits
        raise StudyFileError(f"{file}: a number has too many digits (a study file's numbers have at most 19)") from None


def decode_study_text(file: Path, raw: bytes) -> str:
    """UTF-8 (a BOM is allowed); anything else is named with the line of the first bad byte."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise StudyFileError(f"{file}: the study file is UTF-16; save it as UTF-8 (any text editor can)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise StudyFileError(
            f"{file}, line {line}: not UTF-8 text (byte {exc.start}: 0x{raw[exc.start]:02x}); "
            "save the study file as UTF-8"
        ) from None


def _check_yaml_shape(file: Path, text: str) -> None:
    """Refuse nesting deeper than MAX_YAML_DEPTH and more than MAX_YAML_NODES values once aliases
    are expanded, from the parser's events (no recursion, nothing built or expanded)."""
    sizes: dict[str, int] = {}  # anchor -> values it stands for
    open_nodes: list[list[Any]] = []  # [anchor, values so far] of each open mapping or list
    total = 0

    def add(n: int, mark: _Mark | None, counted: bool = False) -> None:
        # n values at this place; `counted`: already in the total (a closed mapping or list)
        nonlocal total
        if not counted:
            total += n
        if open_nodes:
            open_nodes[-1][1] += n
        if total > MAX_YAML_NODES:
            line = mark.line + 1 if mark is not None else "?"
            raise StudyFileError(
                f"{file}, line {line}: the study file stands for more than {MAX_YAML_NODES:,} values "
                "once its aliases (*name) are expanded; a study file needs far fewer (is it a YAML bomb?)"
            )

    loader = _SafeLoader(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(open_nodes) >= MAX_YAML_DEPTH:
                    mark = event.start_mark
                    raise StudyFileError(
                        f"{file}, line {mark.line + 1 if mark else '?'}: lists and mappings are nested more than "
                        f"{MAX_YAML_DEPTH} deep; a study file needs a few levels"
                    )
                total += 1
                open_nodes.append([event.anchor, 0])
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, size = open_nodes.pop()
                if anchor is not None:
                    sizes[anchor] = size + 1
                add(size + 1, event.start_mark, counted=True)
            elif isinstance(event, yaml.ScalarEvent):
                if event.anchor is not None:
                    sizes[event.anchor] = 1
                add(1, event.start_mark)
            elif isinstance(event, yaml.AliasEvent):
                # an unknown anchor is left to the loader, which names it
                add(sizes.get(event.anchor or "", 1), event.start_mark)
    finally:
        loader.dispose()
