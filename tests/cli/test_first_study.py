"""docs/tutorials/own-endpoints.md, followed as written (issue 21, item 9): its commands in a subprocess, its
bots block pointed at two real OpenAI-compatible endpoints on loopback (one with a key, one
without: `api_key_env` is optional), its simulated trial in a copy, its Prolific block served
without a warning. And the README says what the app does."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.bots.fake_openai_server import start_fake_openai
from tests.cli.test_cli_commands import free_port, stop, wait_healthy

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "tutorials" / "own-endpoints.md"
DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.DOTALL)


def replace_block(study_yaml: str, key: str, block: str) -> str:
    """The study file with its top-level `key:` block (up to the next top-level key) replaced."""
    match = re.search(rf"^{key}:.*?(?=^[a-z_]+:|\Z)", study_yaml, re.DOTALL | re.MULTILINE)
    assert match, key
    return study_yaml[: match.start()] + block.rstrip() + "\n\n" + study_yaml[match.end() :]


def test_first_study_as_the_doc_says(tmp_path):
    doc = DOC.read_text(encoding="utf-8")
    commands = [
        shlex.split(line) for b in blocks(doc, "bash") for line in b.splitlines() if line.startswith("dialeval ")
    ]
    assert [c[1] for c in commands] == ["init", "simulate", "serve", "report"]
    bots = next(b for b in blocks(doc, "yaml") if b.startswith("bots:"))
    recruitment = next(b for b in blocks(doc, "yaml") if b.startswith("recruitment:"))
    env = {**os.environ, "MODEL_B_KEY": "key-of-b"}

    def run(args: list[str]) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [*DIALEVAL, *args[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result

    with start_fake_openai() as url_a, start_fake_openai() as url_b:
        run(commands[0])  # init
        study = tmp_path / "my-study" / "study.yaml"
        own = bots.replace("http://127.0.0.1:8001/v1", url_a).replace("http://127.0.0.1:8002/v1", url_b)
        study.write_text(replace_block(study.read_text(encoding="utf-8"), "bots", own), encoding="utf-8")
        run(commands[1])  # the simulated trial, in a copy
        assert url_a.state.requests > 0 and url_b.state.requests > 0
        assert all("authorization" not in h for h in url_a.state.headers)  # no api_key_env: no key sent
        assert {h.get("authorization") for h in url_b.state.headers} == {"Bearer key-of-b"}
        # the endpoints stay up: serve checks them at start
        trial = json.loads((tmp_path / "my-study-trial" / "report" / "report.json").read_text(encoding="utf-8"))
        assert {s["name"] for s in trial["systems"]} == {"model-a", "model-b"}
        assert trial["answer"]["summary"][-1].startswith("All data of this report are simulated")
        assert not (tmp_path / "my-study" / "report").exists()  # the study itself is untouched

        study.write_text(replace_block(study.read_text(encoding="utf-8"), "recruitment", recruitment), encoding="utf-8")
        serve = commands[2]
        port = free_port()
        serve[serve.index("--host") + 1], serve[serve.index("--port") + 1] = "127.0.0.1", str(port)
        proc = subprocess.Popen(
            [*DIALEVAL, *serve[1:]], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            wait_healthy(port, proc)
        finally:
            out = stop(proc)
        assert "prolific   http://" in out and "warning" not in out
    run([*commands[3][:2], "my-study-trial"])  # report (on the trial: the study itself has no votes)


def test_readme_says_what_the_app_does():
    """The front page links the walk-through; the docs say what the app does (issue 21, item 9)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/tutorials/own-endpoints.md)" in readme
    docs = " ".join(p.read_text(encoding="utf-8") for p in (REPO / "docs").rglob("*.md"))
    assert "`api_key_env` is optional" in docs
    assert "--copy DIR" in docs and "--include-simulated" in docs
    assert "onboarding_weak_bot` must be one of `bots:`" in docs


def test_init_arena_has_a_commented_openai_bot(tmp_path):
    result = subprocess.run([*DIALEVAL, "init", "arena", str(tmp_path / "a")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "a" / "study.yaml").read_text(encoding="utf-8")
    assert "  #   type: openai" in text and "api_key_env is optional" in text
