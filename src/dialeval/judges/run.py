"""Run an LLM judge over a study: ask every task not answered yet, store answers as they come.

The judge is an annotator of platform `judge` named ``judge-<bot>``. Its judgments carry
``meta["judge"]``: ``key`` (the task), ``role`` ("order": one side order of a pairwise task;
"verdict": the method's judgment, stored once both orders agree or for a task asked once;
"failure": an answer that could not be read twice running, or a failed request), ``order``,
``chose_first`` and the start of the ``answer``. A rerun asks only what has no answer yet (failures
are asked again), so running twice never duplicates. An unreachable endpoint stops the run with
one message; what was stored stays.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..asyncrun import run_blocking
from ..bots.base import Bot, BotContext, ChatMessage
from ..errors import BotError, DialevalError
from ..records import JUDGE_PLATFORM, Annotator, Dataset, Judgment, judge_annotator_id
from .parse import JudgeParseError
from .tasks import JudgeAdapter, JudgeTask

FAILURE_QUESTION = "judge-failure"
FATAL_KINDS = ("refused", "config", "client")  # the endpoint or its settings are wrong: stop, do not guess
FLUSH_EVERY = 20  # answers written per transaction (a crash loses at most these)
ANSWER_KEPT = 300  # characters of each raw answer kept with the judgment


def judge_meta(j: Judgment) -> dict[str, Any]:
    value = (j.meta or {}).get("judge")
    return value if isinstance(value, dict) else {}


def adapter_for(method: str) -> JudgeAdapter:
    """The method's judge adapter, named by its spec in the method registry."""
    from ..registry import get, load_part

    spec = get(method).judge
    if spec is None:
        raise DialevalError(f"method '{method}' has no LLM-judge support")
    adapter = load_part(spec)
    if not isinstance(adapter, JudgeAdapter):
        raise DialevalError(f"the judge adapter {spec} of method '{method}' is not a JudgeAdapter")
    return adapter


@dataclass
class JudgeRunResult:
    judge: str
    tasks: int = 0  # items the study offers
    already_done: int = 0  # items answered by an earlier run
    answered: int = 0  # answers stored by this run (one per side order)
    verdicts: int = 0  # verdicts stored by this run
    inconsistent: int = 0  # pairwise items whose two orders disagreed (no verdict)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (task key, order, why)
    retried: int = 0  # answers that needed the second attempt


class _Writer:
    """Collects judgments and writes them in small transactions (save_dataset maps external ids)."""

    def __init__(self, store: Any, study_id: int, method: str, annotator: Annotator):
        self.store, self.study_id, self.method, self.annotator = store, study_id, method, annotator
        self.pending: list[Judgment] = []

    def add(self, judgment: Judgment) -> None:
        self.pending.append(judgment)
        if len(self.pending) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            batch, self.pending = self.pending, []
            self.store.save_dataset(
                self.study_id, Dataset(method=self.method, annotators=[self.annotator], judgments=batch)
            )


def _prior(dataset: Dataset, annotator: str) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Answers by order and verdict keys this judge stored before."""
    answers: dict[str, dict[str, Any]] = {}
    verdicts: set[str] = set()
    for j in dataset.judgments:
        if j.annotator_id != annotator:
            continue
        meta = judge_meta(j)
        if meta.get("role") == "order":
            answers.setdefault(meta["key"], {})[meta["order"]] = j.value
        elif meta.get("role") == "verdict":
            verdicts.add(meta["key"])
            if meta.get("order") is not None:
                answers.setdefault(meta["key"], {})[meta["order"]] = j.value
    return answers, verdicts


async def _ask(bot: Bot, task: JudgeTask, order: str) -> tuple[str, Any, int]:
    """(raw answer, parsed Answer, attempts); a second attempt shows the judge why its first failed."""
    prompt = task.prompt(order)
    history = [ChatMessage("user", prompt)]
    text = await bot.reply(history, BotContext(conversation_id=f"{task.key}:{order}", seed=0))
    try:
        return text, task.parse(text, order), 1
    except JudgeParseError as first:
        history += [
            ChatMessage("assistant", text),
            ChatMessage("user", f"That answer could not be read: {first}. Reply with the JSON object only."),
        ]
        text = await bot.reply(history, BotContext(conversation_id=f"{task.key}:{order}", seed=1))
        return text, task.parse(text, order), 2


async def run_judge(
    store: Any,
    study_id: int,
    dataset: Dataset,
    config: dict[str, Any],
    bot: Bot,
    *,
    bot_meta: dict[str, Any] | None = None,
    concurrency: int = 4,
    limit: int | None = None,
    on_total: Callable[[int], None] | None = None,
    on_answer: Callable[[], None] | None = None,
) -> JudgeRunResult:
    """Ask `bot` every unanswered task of the study; store the answers; return what happened."""
    adapter = adapter_for(dataset.method)
    tasks = adapter(dataset, config)
    annotator = Annotator(
        id=judge_annotator_id(bot.name), platform=JUDGE_PLATFORM, meta={"bot": bot.name, **(bot_meta or {})}
    )
    result = JudgeRunResult(judge=annotator.id, tasks=len(tasks))
    answers, verdicts = _prior(dataset, annotator.id)
    todo: list[JudgeTask] = []
    for task in tasks:
        done = answers.get(task.key, {})
        if all(o in done for o in task.orders):
            result.already_done += 1
            if task.key not in verdicts:  # stopped between the last order and the verdict
                todo.append(task)
            continue
        todo.append(task)
    if limit is not None:
        todo = todo[:limit]
    questions = [(t, o) for t in todo for o in t.orders if o not in answers.get(t.key, {})]
    if on_total:
        on_total(len(questions))
    writer = _Writer(store, study_id, dataset.method, annotator)
    semaphore = asyncio.Semaphore(max(1, concurrency))
    fatal: list[BotError] = []

    def store_verdict(task: JudgeTask) -> None:
        got = answers.get(task.key, {})
        if task.key in verdicts or not all(o in got for o in task.orders):
            return
        verdict = task.verdict(got)
        verdicts.add(task.key)  # decided once: an inconsistent pair stays without a verdict
        if verdict is None:
            result.inconsistent += 1
            return
        if len(task.orders) > 1:  # the single-order answer was stored as the verdict already
            writer.add(_judgment(annotator.id, task, verdict, {"key": task.key, "role": "verdict"}))
            result.verdicts += 1

    async def one(task: JudgeTask, order: str) -> None:
        if fatal:
            return
        async with semaphore:
            if fatal:
                return
            try:
                text, answer, attempts = await _ask(bot, task, order)
            except JudgeParseError as exc:
                _failure(writer, annotator.id, task, order, str(exc), result)
                return
            except BotError as exc:
                if exc.kind in FATAL_KINDS:
                    fatal.append(exc)
                else:
                    _failure(writer, annotator.id, task, order, str(exc), result)
                return
            finally:
                if on_answer:
                    on_answer()
        result.retried += attempts > 1
        single = len(task.orders) == 1
        meta = {
            "key": task.key,
            "role": "verdict" if single else "order",
            "order": order,
            "chose_first": answer.chose_first,
            "answer": text[:ANSWER_KEPT],
        }
        writer.add(_judgment(annotator.id, task, answer.value, meta, shown=task.shown(order) if task.shown else None))
        result.answered += 1
        result.verdicts += single
        answers.setdefault(task.key, {})[order] = answer.value
        store_verdict(task)

    try:
        await asyncio.gather(*(one(t, o) for t, o in questions))
        for task in todo:  # tasks whose orders were all answered earlier
            store_verdict(task)
    finally:
        writer.flush()
        await bot.aclose()
    if fatal:
        raise DialevalError(
            f"judge {bot.name}: {fatal[0]}; {result.answered} answers of this run are stored, "
            "rerun the same command to continue where it stopped"
        )
    return result


def _judgment(
    annotator: str, task: JudgeTask, value: Any, judge: dict[str, Any], shown: list[str] | None = None
) -> Judgment:
    return Judgment(
        annotator_id=annotator,
        unit_id=task.unit_id,
        question=task.question,
        value=value,
        conversation_id=task.conversation_id,
        shown_order=shown,
        meta={**task.meta, "judge": judge},
    )


def _failure(writer: _Writer, annotator: str, task: JudgeTask, order: str, why: str, result: JudgeRunResult) -> None:
    result.failures.append((task.key, order, why))
    failure = _judgment(annotator, task, {"key": task.key, "order": order, "error": why}, {})
    failure.question = FAILURE_QUESTION
    failure.meta["judge"] = {"key": task.key, "role": "failure", "order": order, "error": why}
    writer.add(failure)


def build_judge_bot(config: Any, name: str | None, bot_type: str | None, options: list[str]) -> tuple[Bot, dict]:
    """The judge: one of the study file's `judges:` (or `bots:`) by name (`--bot NAME`), or one described
    on the command line (`--bot-type openai --option base_url=... --option model=...`, values read as
    YAML scalars)."""
    import yaml

    from ..bots.registry import build_bot

    if bot_type is None:
        if name is None:
            raise DialevalError("name the judge: --bot NAME (a bot of the study file) or --bot-type TYPE --option k=v")
        if options:
            raise DialevalError("--option goes with --bot-type (a bot of the study file has its options there)")
        known = {b.name: b for b in [*config.judges, *config.bots]}
        if name not in known:
            raise DialevalError(
                f"no judge or bot '{name}' in the study file; its judges and bots: {', '.join(known) or 'none'}"
            )
        chosen = known[name]
        return build_bot(chosen.name, chosen.type, chosen.options), {"type": chosen.type, **_described(chosen.options)}
    parsed: dict[str, Any] = {}
    for pair in options:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise DialevalError(f"--option takes key=value, not {pair!r}")
        parsed[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
    name = name or (str(parsed.get("model")) if parsed.get("model") else bot_type)
    if bot_type == "local-llm":  # its defaults are a chatty persona; a judge answers plainly and greedily
        parsed = {**LOCAL_JUDGE_DEFAULTS, **parsed}
    return build_bot(name, bot_type, parsed), {"type": bot_type, **_described(parsed)}


LOCAL_JUDGE_DEFAULTS = {
    "system_prompt": "You are a careful annotator. Answer with the JSON object asked for, nothing else.",
    "temperature": 0,
    "max_new_tokens": 96,
}


def _described(options: dict[str, Any] | None) -> dict[str, Any]:
    """What identifies a judge in its annotator record (never a key: only names of settings)."""
    return {k: options[k] for k in ("model", "base_url", "temperature") if options and k in options}


def judge_study(
    folder: Any,
    *,
    bot: str | None,
    bot_type: str | None,
    options: list[str],
    concurrency: int = 4,
    limit: int | None = None,
    on_total: Callable[[int], None] | None = None,
    on_answer: Callable[[], None] | None = None,
    check_judge: Callable[[Any], None] | None = None,
) -> JudgeRunResult:
    """`dialeval judge`: open the study, build the judge, run it (see `run_judge`). `check_judge`
    is called with the judge bot before any work (the CLI's endpoint check; it may raise)."""
    from ..study import open_study

    opened = open_study(folder)
    try:
        judge, meta = build_judge_bot(opened.config, bot, bot_type, options)
        if check_judge is not None:
            check_judge(judge)
        _prepare_units(opened)
        dataset = opened.store.load_dataset(opened.id)
        config = opened.config.model_dump(mode="json")
        result = run_blocking(
            lambda: run_judge(
                opened.store,
                opened.id,
                dataset,
                config,
                judge,
                bot_meta=meta,
                concurrency=concurrency,
                limit=limit,
                on_total=on_total,
                on_answer=on_answer,
            )
        )
    finally:
        opened.close()
    if not result.tasks:
        raise DialevalError(
            f"{folder} has nothing a judge can answer yet: no units or conversations of this "
            f"{dataset.method} study carry the material (generate conversations first, or import battles "
            "with their text)"
        )
    return result


def _prepare_units(opened: Any) -> None:
    """Build the units the study's pages will serve (the idempotent step `serve` runs first), so a
    judge can label them before anyone is served: judge-guided collection (adaptive.judge) needs its
    labels before the first assignment. Live methods make their units during the chats."""
    import inspect

    from ..protocols import get_protocol
    from ..protocols.base import StudyContext
    from ..registry import get

    spec = get(opened.config.method)
    if spec.protocol is None or spec.live:
        return
    ctx = StudyContext(folder=opened.folder, config=opened.config, store=opened.store, study_id=opened.id, slug="judge")
    prepare = get_protocol(opened.config.method)(ctx).prepare
    if inspect.iscoroutinefunction(prepare):
        run_blocking(prepare)
    else:
        prepare()


def summary_lines(result: JudgeRunResult) -> list[str]:
    lines = [
        f"{result.judge}: {result.tasks} items, {result.already_done} answered before; this run stored "
        f"{result.answered} answers and {result.verdicts} verdicts ({result.retried} needed a second try)"
    ]
    if result.inconsistent:
        lines.append(f"{result.inconsistent} pairs got different answers in the two side orders (no verdict)")
    if result.failures:
        lines.append(f"{len(result.failures)} answers failed (rerun to ask them again), e.g.:")
        lines += [f"  {key} [{order}]: {why}" for key, order, why in result.failures[:5]]
    return lines
