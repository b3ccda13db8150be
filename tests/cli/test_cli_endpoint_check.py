"""`serve`, `generate` and `judge` check every endpoint once at start (issue 21): one line per failing
bot (name, URL, reason) and a refusal to start unless --yes, so a wrong URL, key or model is found
by the researcher, not by the first paid worker. The CLI in a subprocess, as the README runs it,
against the loopback OpenAI-compatible server and a port where nothing listens."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.bots.fake_openai_server import closed_port_url, start_fake_openai
from tests.e2e.conftest import free_port

DIALEVAL = str(Path(sys.executable).with_name("dialeval"))


def run(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def study(folder: Path, method: str, bots: list[tuple[str, str, str]], extra: str = "") -> Path:
    """A study file with OpenAI-compatible bots (name, base_url, model) and `extra` YAML."""
    folder.mkdir()
    lines = [f"name: {folder.name}", f"method: {method}", "seed: 1", "bots:"]
    for name, url, model in bots:
        lines.append(f'  - {{name: {name}, type: openai, options: {{base_url: "{url}", model: {model}, retries: 0}}}}')
    (folder / "study.yaml").write_text("\n".join(lines) + "\n" + extra)
    return folder


def refused_line(bot: str, url: str) -> str:
    reason = f"refused: nothing is listening at {url} — is the server running?"
    return f"endpoint check failed: bot '{bot}' at {url}: {reason}"


def failing_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("endpoint check failed:")]


def test_serve_refuses_a_down_endpoint_and_starts_with_yes(tmp_path):
    down = closed_port_url()
    with start_fake_openai() as url:
        # "fake" is listed by GET /models; "llama3" is not, so that bot is asked once (first chunk only)
        folder = study(tmp_path / "arena", "arena", [("up", url, "fake"), ("up2", url, "llama3"), ("down", down, "m")])
        port = free_port()
        started = time.monotonic()
        refused = run("serve", folder, "--port", port, timeout=30)  # old code: serves on, never returns
        took = time.monotonic() - started
        assert refused.returncode != 0
        assert failing_lines(refused.stderr) == [refused_line("down", down)], refused.stderr
        assert "--yes" in refused.stderr and "Traceback" not in refused.stderr
        assert url.state.model_lists == 2 and url.state.requests == 1  # no chat request for a listed model
        print(f"\nserve refused after {took:.2f} s (process start included)")
        with httpx.Client() as client:  # it never listened
            try:
                client.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                raise AssertionError("serve started although an endpoint is down")
            except httpx.ConnectError:
                pass

        proc = subprocess.Popen(
            [DIALEVAL, "serve", str(folder), "--port", str(port), "--yes"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, proc.communicate()
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "serve --yes did not start"
                time.sleep(0.2)
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=20)
        assert len(failing_lines(stderr)) == 1 and "going on anyway (--yes)" in stderr


def test_serve_with_every_endpoint_up_starts_without_asking(tmp_path):
    with start_fake_openai() as url:
        folder = study(tmp_path / "arena-ok", "arena", [("a", url, "fake"), ("b", url, "fake")])
        port = free_port()
        proc = subprocess.Popen(
            [DIALEVAL, "serve", str(folder), "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, proc.communicate()
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=20)
        assert b"endpoint check failed" not in stderr
        assert url.state.model_lists == 2 and url.state.requests == 0


def test_generate_and_judge_refuse_a_down_endpoint(tmp_path):
    down = closed_port_url()
    with start_fake_openai() as url:
        folder = study(
            tmp_path / "acute",
            "acute",
            [("up", url, "fake"), ("down", down, "m")],
            "generation: {mode: self-chat, conversations: 1, turns: 1}\nonboarding: {enabled: false}\n",
        )
        made = run("generate", folder)
        assert made.returncode == 2
        assert failing_lines(made.stderr) == [refused_line("down", down)], made.stderr
        assert "made" not in made.stdout  # nothing was generated
        assert url.state.requests == 0

        judged = run(
            "judge", folder, "--bot-type", "openai", "--bot", "gone", "--option", f"base_url={down}",
            "--option", "model=x",
        )  # fmt: skip
        assert judged.returncode == 2
        assert failing_lines(judged.stderr) == [refused_line("gone", down)], judged.stderr
