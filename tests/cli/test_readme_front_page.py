"""README.md, the front page: every command it shows runs, as written, in a scratch folder.

The first-study block (after `<!-- readme-commands -->`) goes line by line through the real
`dialeval` command in a subprocess; the `serve` line runs in the background, on a port of the
test's own, until the server answers and prints its links. The two `make` commands are checked
against the Makefile's targets (running them would reinstall the environment), the bot example
against the study-file models, and every relative link against the repository.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MARKER = "<!-- readme-commands -->"
DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def block_after(text: str, marker: str, lang: str = "bash") -> str:
    return text.split(marker, 1)[1].split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def commands(block: str) -> list[list[str]]:
    return [argv for line in block.splitlines() if (argv := shlex.split(line, comments=True))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_until_healthy(argv: list[str], cwd: Path, port: int) -> str:
    """Start `serve`, wait for /healthz, stop it with Ctrl-C; what it printed."""
    proc = subprocess.Popen(
        [*argv, "--port", str(port)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"serve exited early: {proc.stdout.read() if proc.stdout else ''}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("serve did not answer /healthz in 120 s")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    return out or ""


def test_the_first_study_commands_run_as_written(tmp_path):
    lines = commands(block_after(README.read_text(encoding="utf-8"), MARKER))
    assert [argv[:2] for argv in lines] == [
        ["dialeval", "init"],
        ["dialeval", "generate"],
        ["dialeval", "simulate"],
        ["dialeval", "serve"],
        ["dialeval", "report"],
    ]
    printed = {}
    for argv in lines:
        full = [*DIALEVAL, *argv[1:]]
        if argv[1] == "serve":
            printed["serve"] = serve_until_healthy(full, tmp_path, free_port())
            continue
        result = subprocess.run(full, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{shlex.join(argv)}: {result.stderr}"
        printed[argv[1]] = result.stdout
    assert "PROLIFIC_PID" in printed["serve"] and "admin?token=" in printed["serve"]
    study = tmp_path / "my-study"
    report = json.loads((study / "report" / "report.json").read_text())
    assert report["method"] == "acute" and report["matchups"]
    assert (study / "report" / "index.html").is_file()


def test_the_two_commands_are_the_makefiles():
    text = README.read_text(encoding="utf-8")
    block = text.split("## The two commands", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    assert [argv for argv in commands(block)] == [["make", "demo"], ["make", "test"]]
    makefile = (REPO / "Makefile").read_text()
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "dialeval demo" in demo  # serves the demo study of every method
    # what the README's comment on `make test` names: the licence and docs checks, then the tests, with
    # the lint and wheel gates in their queue (scripts/run_tests.py GATES)
    for step in ("check_licences.py", "mkdocs build --strict", "run_tests.py"):
        assert step in test, step
    runner = (REPO / "scripts" / "run_tests.py").read_text()
    assert '"scripts/lint.sh"' in runner and '"scripts/check_wheel.py"' in runner


def test_the_bot_example_is_a_valid_bot():
    from dialeval.config import BotConfig

    text = README.read_text(encoding="utf-8")
    bots = yaml.safe_load(text.split("is a bot:", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0])["bots"]
    assert [BotConfig.model_validate(b).type for b in bots] == ["openai"]


def test_the_front_page_is_short_and_its_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text) + re.findall(r'src="([^"]+)"', text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert len(local) > 20
    missing = [t for t in local if not (REPO / t).exists()]
    assert missing == []
