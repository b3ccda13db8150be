"""Shared browser-test fixtures: a real server (uvicorn, in a thread or a subprocess) for study folders, and Chromium.

    def test_x(live_server, browser_page, tmp_path):
        server = live_server([make_study(tmp_path / "s")])     # -> Server(url, admin_tokens, process)
        page = browser_page()                                  # a fresh context (own cookies)
        page.goto(server.url + "/s/<slug>/")

Note: Playwright's sync API keeps an asyncio loop running in the main thread for the session, so a
later `asyncio.run(...)` in the same test run must happen in a worker thread.

`dialogs` on each page records any alert/confirm/prompt that fired (XSS checks assert it stays empty).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import in_ci

CHROMIUM = os.environ.get("DIALEVAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    process: subprocess.Popen | None  # None: served in a thread of the test process
    folders: list[Path]
    admin_tokens: dict[str, str] = field(default_factory=dict)

    def admin_url(self, slug: str) -> str:
        folder = next(f for f in self.folders if (f / ".admin-token").exists())
        return f"{self.url}/s/{slug}/admin?token={(folder / '.admin-token').read_text().strip()}"


def start_server(folders: list[Path], workers: int = 1, env: dict | None = None, timeout: float = 60) -> Server:
    """Prepare the studies, then run uvicorn with the app factory (as `serve` does) on a free port."""
    port = free_port()
    from dialeval.web.app import create_app

    app = create_app(folders, prepare=True)  # units, .secret and .admin-token made once, before workers
    for s in app.state.studies.values():
        s.ctx.store.close()
    run_env = {**os.environ, "DIALEVAL_STUDY_FOLDERS": os.pathsep.join(str(f) for f in folders), **(env or {})}
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "dialeval.web.app:app_from_env",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"server exited early:\n{out}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        proc.terminate()
        raise RuntimeError("server did not start")
    return Server(url=url, process=proc, folders=list(folders))


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture
def live_server():
    """Call with study folders (and workers=N); every server started is stopped after the test.

    One worker: the app (create_app, which prepares the studies) served by uvicorn in a thread of this
    process (tests.web's LiveServer, with the study's own rate limits). Chromium meets the same app over
    HTTP, and the server starts without a fresh interpreter importing dialeval (~3 s, far more under
    load, for each of ~50 tests). Several workers or an env: the `serve`-like subprocess above."""
    from tests.web.test_live_support import LiveServer

    started: list[Server] = []
    threaded: list[LiveServer] = []

    def start(folders: list[Path], workers: int = 1, env: dict | None = None) -> Server:
        if workers > 1 or env:
            server = start_server(folders, workers=workers, env=env)
            started.append(server)
            return server
        live = LiveServer(list(folders), fast_limits=False).__enter__()
        threaded.append(live)
        return Server(url=live.url, process=None, folders=list(folders))

    yield start
    for server in started:
        stop_server(server)
    for live in threaded:
        live.__exit__(None, None, None)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set DIALEVAL_CHROMIUM)"
        if in_ci():  # like every other optional dependency: CI must run the browser tests
            pytest.fail(message + "; the browser tests may not be skipped in CI")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def browser_page(browser):
    """Call to get a new page in a fresh context; page.dialogs lists dialogs that fired (auto-dismissed)."""
    contexts = []

    def make(viewport: dict | None = None):
        ctx = browser.new_context(viewport=viewport or {"width": 1280, "height": 900})
        contexts.append(ctx)
        page = ctx.new_page()
        page.dialogs = []

        def on_dialog(dialog):
            page.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        return page

    yield make
    for ctx in contexts:
        ctx.close()
