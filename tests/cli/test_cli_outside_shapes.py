"""Shapes of public releases that once broke `dialeval import` (found by importing them as a user
would): each is written here by hand, small, in the release's shape, and run through the command line.

- Arena-Hard-Auto's prompts and model answers, as of 2024 (`question_id`, `turns: [{"content"}]`,
  `choices[0].turns: [{"content", "token_len"}]`) and of 2025 (`uid`, `prompt`; `messages` whose
  assistant `content` is `{"answer": ...}`): the answers were stored as Python reprs ("{'answer': ...}").
- AlpacaEval outputs with an empty `output`: refused with "asks for 1 answer(s); this has 1".
- A prompt longer than the import limit (Arena-Hard v2.0 has one of 27,586 characters): `import
  answers --max-text-chars` was ignored, and the other commands named an option they do not have.
- A prompt file that is one JSON list (AlpacaEval's shape): "line 1: not valid JSON".
- A gzip-compressed release (hh-rlhf's *.jsonl.gz): "not utf-8 text ... pass --encoding".
- A JSON list over many lines (FastChat's ShareGPT-style data/dummy_conversation.json) given to a
  JSON-lines importer: "line 1: not valid JSON (Expecting value at column 2)".
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def run(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*DIALEVAL, *map(str, args)],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def prompts_study(tmp_path: Path, prompt_file: str, systems: tuple[str, ...] = ("sys-a", "sys-b")) -> Path:
    assert run("init", "prompts", "st", cwd=tmp_path).returncode == 0
    folder = tmp_path / "st"
    data = yaml.safe_load((folder / "study.yaml").read_text(encoding="utf-8"))
    data["bots"] = [{"name": s, "type": "imported"} for s in systems]
    data["protocol"].update({"prompts": prompt_file, "baseline": None})
    (folder / "study.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return folder


def stored_answers(folder: Path) -> dict[str, tuple[list[str], str | None]]:
    """Conversation id -> (the bot turns' texts, the error)."""
    from dialeval.store import Store

    store = Store(f"sqlite:///{folder / 'dialeval.db'}")
    try:
        dataset = store.load_dataset(store.get_study().id)
        return {c.id: ([t.text for t in c.turns if t.speaker == "bot"], c.error) for c in dataset.conversations}
    finally:
        store.close()


def test_arena_hard_2024_turn_objects_are_read_as_text(tmp_path):
    questions = [
        {"question_id": "q1", "category": "c", "cluster": "k", "turns": [{"content": "Write a limerick."}]},
        {"question_id": "q2", "category": "c", "cluster": "k", "turns": [{"content": "Sort [3, 1, 2]."}]},
    ]
    folder = prompts_study(tmp_path, "question.jsonl")
    jsonl(folder / "question.jsonl", questions)
    files = []
    for system in ("sys-a", "sys-b"):
        rows = [
            {
                "question_id": q["question_id"],
                "answer_id": f"{system}-{q['question_id']}",
                "model_id": system,
                "choices": [
                    {"index": 0, "turns": [{"content": f"{system} says hi to {q['question_id']}", "token_len": 7}]}
                ],
                "tstamp": 1.0,
            }
            for q in questions
        ]
        files.append(jsonl(tmp_path / f"{system}.jsonl", rows))
    done = run("import", "answers", *files, "st", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "imported 4 answers of 2 systems" in done.stdout
    assert stored_answers(folder)["answer:sys-a:q2"] == (["sys-a says hi to q2"], None)


def test_arena_hard_2025_uid_and_answer_objects_are_read_as_text(tmp_path):
    folder = prompts_study(tmp_path, "question.jsonl")
    jsonl(
        folder / "question.jsonl",
        [{"uid": "u1", "category": "hard_prompt", "subcategory": "coding", "prompt": "Explain recursion."}],
    )
    rows = [
        {
            "uid": "u1",
            "ans_id": f"x-{system}",
            "model": system,
            "messages": [
                {"role": "user", "content": "Explain recursion."},
                {"role": "assistant", "content": {"answer": f"{system}: a function calling itself."}},
            ],
            "tstamp": 1.0,
            "metadata": {"token_len": 6},
        }
        for system in ("sys-a", "sys-b")
    ]
    done = run("import", "answers", jsonl(tmp_path / "answers.jsonl", rows), "st", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    answers = stored_answers(folder)
    assert answers["answer:sys-b:u1"] == (["sys-b: a function calling itself."], None)


def test_an_answer_that_is_no_text_is_refused_naming_the_field_and_nothing_is_stored(tmp_path):
    folder = prompts_study(tmp_path, "prompts.jsonl")
    jsonl(folder / "prompts.jsonl", [{"id": "p1", "prompt": "Hi?"}])
    rows = [
        {
            "model": "sys-a",
            "prompt_id": "p1",
            "messages": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": {"tool": 1}}],
        }
    ]
    done = run("import", "answers", jsonl(tmp_path / "a.jsonl", rows), "st", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "a.jsonl line 1: 'messages[1].content' is an object, not an answer's text" in done.stderr
    assert stored_answers(folder) == {}


def test_an_empty_answer_is_kept_as_a_failed_answer_and_named(tmp_path):
    folder = prompts_study(tmp_path, "prompts.jsonl")
    jsonl(folder / "prompts.jsonl", [{"id": "p1", "prompt": "Hi?"}, {"id": "p2", "prompt": "Bye?"}])
    outputs = [
        {"dataset": "d", "instruction": "Hi?", "output": "Hello.", "generator": "sys-a"},
        {"dataset": "d", "instruction": "Bye?", "output": "", "generator": "sys-a"},
    ]
    (tmp_path / "out.json").write_text(json.dumps(outputs), encoding="utf-8")
    done = run("import", "answers", "out.json", "st", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "imported 1 answer of 1 system" in done.stdout
    assert "1 answers are empty, kept as failed answers (never shown to people): sys-a to p2" in done.stdout
    assert "missing: sys-a has no answer to 1 of 2 prompts: p2" in done.stdout
    answers = stored_answers(folder)
    assert answers["answer:sys-a:p1"] == (["Hello."], None)
    assert answers["answer:sys-a:p2"][0] == [] and "empty answer 1 of 1 in" in answers["answer:sys-a:p2"][1]


def test_a_prompt_file_that_is_one_json_list_is_read(tmp_path):
    folder = prompts_study(tmp_path, "prompts.json")
    (folder / "prompts.json").write_text(json.dumps([{"id": "p1", "instruction": "Hi?"}]), encoding="utf-8")
    done = run(
        "import",
        "answers",
        jsonl(tmp_path / "a.jsonl", [{"prompt_id": "p1", "system": "sys-a", "answer": "Hey."}]),
        "st",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert stored_answers(folder)["answer:sys-a:p1"] == (["Hey."], None)


def test_a_prompt_over_the_text_limit_names_the_setting_every_command_honours(tmp_path):
    folder = prompts_study(tmp_path, "prompts.jsonl")
    jsonl(folder / "prompts.jsonl", [{"id": "p1", "prompt": "long " * 5000}])  # 25,000 characters
    answers = jsonl(tmp_path / "a.jsonl", [{"prompt_id": "p1", "system": "sys-a", "answer": "Ok."}])
    refused = run("import", "answers", answers, "st", cwd=tmp_path, env={"DIALEVAL_MAX_TEXT_CHARS": ""})
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "a prompt's text of 25,000 characters is longer than the limit of 20,000" in refused.stderr
    assert "set DIALEVAL_MAX_TEXT_CHARS=25000 (or more) for every dialeval command on this study" in refused.stderr
    # the import's own option is honoured for the files it reads, the study's prompts included
    done = run(
        "import",
        "answers",
        answers,
        "st",
        "--max-text-chars",
        "30000",
        cwd=tmp_path,
        env={"DIALEVAL_MAX_TEXT_CHARS": ""},
    )
    assert done.returncode == 0, done.stderr
    assert stored_answers(folder)["answer:sys-a:p1"] == (["Ok."], None)


def test_a_compressed_release_is_named_as_such(tmp_path):
    line = json.dumps({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]})
    with gzip.open(tmp_path / "test.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(line + "\n")
    with zipfile.ZipFile(tmp_path / "dump.zip", "w") as archive:
        archive.writestr("test.jsonl", line + "\n")
    for name, kind, tool in (("test.jsonl.gz", "gzip-compressed", "gunzip -k"), ("dump.zip", "a zip archive", "unzip")):
        for extra in ([], ["--encoding", "latin-1"]):  # whatever encoding is asked for
            done = run("import", "openai-messages", name, "om", *extra, cwd=tmp_path)
            assert done.returncode == 2 and "Traceback" not in done.stderr
            assert f"{name}: is {kind}, not text; unpack it first ({tool} {name})" in done.stderr
            assert not (tmp_path / "om").exists()


def test_a_json_list_over_many_lines_given_to_a_json_lines_importer_is_named(tmp_path):
    rows = [{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}]
    (tmp_path / "chats.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    done = run("import", "openai-messages", "chats.json", "om", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "chats.json, line 1: is one JSON list over many lines; this reads JSON lines" in done.stderr
    assert "jq -c '.[]' chats.json > chats.jsonl" in done.stderr
    assert not (tmp_path / "om").exists()
