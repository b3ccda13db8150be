"""Answers to the prompt set: made by the study's bots (`dialeval generate`), or read from files
made elsewhere (`dialeval import answers FILES... STUDY`). Both store one conversation per system
and prompt (promptset.answer_conversation); a failed answer is stored with its error, never shown
to people, and made again by the next `generate`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...bots.base import BotContext, ChatMessage, stable_seed
from ...errors import DialevalError
from ...records import Conversation
from .promptset import (
    SOURCE_GENERATED,
    SOURCE_IMPORTED,
    Prompt,
    answer_conversation,
    answer_id,
    compared_systems,
    load_prompts,
    system_pairs,
)

if TYPE_CHECKING:
    from ...dialogue.generate import GenerationResult
    from ...study import OpenStudy


def _answering_bots(config: Any) -> list[str]:
    """Bots that can answer here: not quality-control bots, not systems known only from imports."""
    return [b.name for b in config.bots if b.type not in ("degraded", "imported")]


async def answer_prompt(bot: Any, prompt: Prompt, system: str, seed: int) -> Conversation:
    """`bot`'s answers to every slot of `prompt`; a bot error keeps what was made and says why."""
    answers: list[str] = []
    history: list[ChatMessage] = []
    cid = answer_id(system, prompt.id)
    slots = set(prompt.slots())
    for i, (role, text) in enumerate(prompt.messages):
        history.append(ChatMessage("user" if role == "user" else "assistant", text))
        if i not in slots:
            continue
        context = BotContext(conversation_id=cid, seed=stable_seed(seed, cid, i) % 2**31)
        try:
            reply = await bot.reply(list(history), context)
        except DialevalError as exc:
            return answer_conversation(prompt, system, answers, source=SOURCE_GENERATED, error=str(exc))
        answers.append(reply)
        history.append(ChatMessage("assistant", reply))
    return answer_conversation(prompt, system, answers, source=SOURCE_GENERATED)


def planned_answers(config: Any, folder: str | Path) -> int:
    """How many answers `generate_answers` makes for a study: prompts x answering bots."""
    return len(load_prompts(config.options, folder)) * len(_answering_bots(config))


def generate_answers(
    opened: OpenStudy,
    concurrency: int | None = None,
    on_total: Callable[[int, int], None] | None = None,
    on_done: Callable[[Conversation], None] | None = None,
) -> GenerationResult:
    """Every answering bot's answer to every prompt that has none yet (or a failed one): the
    `Method.generate` hook of `dialeval generate` and the demo. Each answer is stored as it comes."""
    from ...asyncrun import run_blocking
    from ...bots.registry import build_bot
    from ...dialogue.generate import GenerationResult, throttle

    config = opened.config
    prompts = load_prompts(config.options, opened.folder)
    system_pairs(config)  # a baseline that is no bot is named now, not when serving
    systems = _answering_bots(config)
    existing = opened.store.conversation_status(opened.id)
    result = GenerationResult()
    todo = []
    for prompt in prompts:
        for system in systems:
            cid = answer_id(system, prompt.id)
            if cid in existing and existing[cid] is None:
                result.skipped.append(cid)
            else:
                todo.append((prompt, system))
    if on_total:
        on_total(len(prompts) * len(systems), len(result.skipped))
    if not todo:
        return result
    limit = concurrency or config.generation.concurrency
    bots = {s: build_bot(s, config.bot(s).type, config.bot(s).options) for s in {s for _, s in todo}}

    async def run() -> None:
        throttled = throttle(bots, limit)  # each bot's own max_concurrency, then the global limit

        async def one(prompt: Prompt, system: str) -> None:
            conv = await answer_prompt(throttled[system], prompt, system, config.seed)
            await asyncio.to_thread(opened.store.save_conversation, opened.id, conv)
            if conv.error:
                result.failed[conv.id] = conv.error
            else:
                result.made.append(conv.id)
            if on_done:
                on_done(conv)

        await asyncio.gather(*(one(p, s) for p, s in todo))
        for bot in bots.values():
            await bot.aclose()

    run_blocking(run)
    return result


# -- import ----------------------------------------------------------------------------------------------
def read_records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(where, record) for every record of an answers file: JSONL lines, a JSON list, or CSV rows,
    read through the importers' reading layer (formats/reading.py: decoding with the byte and line
    of a bad byte, JSON depth and number limits, a deliberate CSV field limit)."""
    from dialeval.formats.reading import csv_rows, json_document, json_lines, read_text, records_of

    if path.suffix.lower() == ".csv":
        rows = csv_rows(path)
        return [(f"{path} line {r.line}", {k.strip(): v for k, v in r.items() if k}) for r in rows]
    if read_text(path).lstrip().startswith("["):  # AlpacaEval writes one JSON list
        return [(f"{path} item {r.line}", dict(r.data)) for r in records_of(json_document(path), path)]
    return [(f"{path} line {r.line}", dict(r.data)) for r in json_lines(path, "an answer (a JSON object)")]


def _answer_text(value: Any, where: str, field: str) -> str:
    """An answer's text: a string; a turn object {"content": text} (Arena-Hard's model_answer of
    2024); an assistant content {"answer": text, ...} (Arena-Hard's of 2025: the other keys, such as
    a reasoning trace, are not the answer shown); or OpenAI text parts [{"type": "text", "text": ...}]
    (joined). Anything else is an error naming the field, never its Python repr stored as the text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("content", "answer"):
            text = value.get(key)
            if isinstance(text, str):
                return text
    if isinstance(value, list) and value and all(isinstance(p, dict) for p in value):
        texts = [p["text"] for p in value if p.get("type") == "text" and isinstance(p.get("text"), str)]
        if texts:
            return "".join(texts)
    found = {type(None): "null", dict: "an object", list: "a list"}.get(type(value), f"a {type(value).__name__}")
    raise DialevalError(
        f"{where}: '{field}' is {found}, not an answer's text (a string, {{\"content\": text}}, "
        '{"answer": text} or a list of {"type": "text", "text": ...} parts)'
    )


def _answer_of(where: str, record: Any, by_text: dict[str, Prompt]) -> tuple[str, str, list[str]]:
    """(prompt id, system, answers) of one record in any of the four formats."""
    if not isinstance(record, dict):
        raise DialevalError(f"{where}: an answer is a JSON object (or a CSV row)")
    if "choices" in record and "question_id" in record:  # FastChat MT-Bench model_answer (and Arena-Hard's of 2024)
        system = record.get("model_id")
        choices = record.get("choices") or []
        turns = choices[0].get("turns") if choices and isinstance(choices[0], dict) else None
        if not system or not isinstance(turns, list):
            raise DialevalError(f"{where}: an MT-Bench answer needs model_id and choices[0].turns")
        texts = [_answer_text(t, where, f"choices[0].turns[{n}]") for n, t in enumerate(turns)]
        return str(record["question_id"]), str(system), texts
    if "instruction" in record and "output" in record:  # AlpacaEval outputs
        system = record.get("generator")
        if not system:
            raise DialevalError(f"{where}: an AlpacaEval output needs 'generator' (the system's name)")
        pid = record.get("id", record.get("prompt_id"))
        if pid is None:
            prompt = by_text.get(str(record["instruction"]).strip())
            if prompt is None:
                raise DialevalError(
                    f"{where}: no prompt of the study has this instruction: {str(record['instruction'])[:60]!r}"
                )
            pid = prompt.id
        return str(pid), str(system), [_answer_text(record["output"], where, "output")]
    if "messages" in record:  # OpenAI chat messages (and Arena-Hard's model_answer): the prompt, then the answer(s)
        system = record.get("system", record.get("model", record.get("generator")))
        pid = record.get("prompt_id", record.get("id", record.get("question_id", record.get("uid"))))
        messages = record["messages"]
        if not system or not isinstance(messages, list):
            raise DialevalError(f"{where}: a messages answer needs 'model' (or 'system') and a 'messages' list")
        if pid is None:
            first = next((m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
            prompt = by_text.get(str(first or "").strip())
            if prompt is None:
                raise DialevalError(
                    f"{where}: no 'prompt_id', and no prompt of the study starts with its first message"
                )
            pid = prompt.id
        texts = [
            _answer_text(m.get("content"), where, f"messages[{n}].content")
            for n, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") == "assistant"
        ]
        return str(pid), str(system), texts
    keys = {k.lower(): k for k in record}
    pid_key = next((keys[k] for k in ("prompt_id", "id", "question_id") if k in keys), None)
    sys_key = next((keys[k] for k in ("system", "model", "generator") if k in keys), None)
    ans_key = next((keys[k] for k in ("answer", "output", "response") if k in keys), None)
    if pid_key and sys_key and ans_key:  # a plain CSV (or JSONL) of prompt id, system, answer
        return (
            str(record[pid_key]).strip(),
            str(record[sys_key]).strip(),
            [_answer_text(record[ans_key], where, ans_key)],
        )
    raise DialevalError(
        f"{where}: not an answer in a known format (AlpacaEval instruction/output/generator, MT-Bench "
        "question_id/model_id/choices, OpenAI messages with model, or prompt_id/system/answer)"
    )


def import_answers(folder: Path, paths: list[Path], echo: Callable[[str], None]) -> None:
    """`dialeval import answers FILES... STUDY`: read every file, match answers to prompts by id,
    store them, and name what is missing. Nothing is stored when a file has an error."""
    from ...study import open_study

    opened = open_study(folder)
    try:
        config = opened.config
        if config.method != "prompts":
            raise DialevalError(f"{folder} holds a {config.method} study; answers are imported into a prompts study")
        prompts = {p.id: p for p in load_prompts(config.options, opened.folder)}
        system_pairs(config)  # a baseline that is no bot is named now, not when serving
        by_text = {p.messages[0][1].strip(): p for p in prompts.values()}
        bots = set(compared_systems(config))
        found: dict[tuple[str, str], Conversation] = {}
        unknown_prompts: dict[str, str] = {}
        empty: list[str] = []
        for path in paths:
            if not path.is_file():
                raise DialevalError(f"{path}: no such file")
            for where, record in read_records(path):
                pid, system, answers = _answer_of(where, record, by_text)
                prompt = prompts.get(pid)
                if prompt is None:
                    unknown_prompts.setdefault(pid, where)
                    continue
                need = len(prompt.slots())
                if len(answers) < need:
                    raise DialevalError(f"{where}: prompt '{pid}' asks for {need} answer(s); this has {len(answers)}")
                blank = next((k for k, a in enumerate(answers[:need]) if not a.strip()), None)
                if blank is not None:  # kept as a failed answer, as a failed `generate` is: never shown
                    error = f"empty answer {blank + 1} of {need} in {where}"
                    found[(system, pid)] = answer_conversation(
                        prompt, system, answers[:blank], source=SOURCE_IMPORTED, error=error
                    )
                    empty.append(f"{system} to {pid} ({where})")
                    continue
                found[(system, pid)] = answer_conversation(prompt, system, answers[:need], source=SOURCE_IMPORTED)
        strangers = sorted({s for s, _ in found} - bots)
        if strangers:
            raise DialevalError(
                f"{', '.join(strangers)} not among the bots of {folder / 'study.yaml'}; add each under bots: "
                "(type: imported for a system known only from its answers) and import again"
            )
        for conv in found.values():
            opened.store.save_conversation(opened.id, conv)
        from ...report.methods_text import count_of

        systems = len({s for s, _ in found})
        echo(f"imported {count_of(len(found) - len(empty), 'answer')} of {count_of(systems, 'system')} into {folder}")
        if empty:
            listed = ", ".join(empty[:10]) + (" ..." if len(empty) > 10 else "")
            echo(f"{len(empty)} answers are empty, kept as failed answers (never shown to people): {listed}")
        if unknown_prompts:
            listed = ", ".join(f"{pid} ({where})" for pid, where in list(unknown_prompts.items())[:10])
            echo(f"{len(unknown_prompts)} answers name prompts not in the prompt set, left out: {listed}")
        status = opened.store.conversation_status(opened.id)
        for system in sorted(bots):
            missing = [pid for pid in prompts if status.get(answer_id(system, pid), "missing") is not None]
            if missing:
                shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
                echo(f"missing: {system} has no answer to {len(missing)} of {len(prompts)} prompts: {shown}")
    finally:
        opened.close()
