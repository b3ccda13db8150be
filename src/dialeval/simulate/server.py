"""Run the real web app in this process (uvicorn in a thread, 127.0.0.1, a free port) for a simulation.

    with running_app([folder]) as base_url:
        httpx.get(base_url + "/healthz")

The app is exactly the one `dialeval serve` runs (``web.app.create_app``), with one difference:
the per-annotator message rate limit is raised (``relax_rate_limit``), because simulated people
type in milliseconds; a simulated annotator still waits out any 429 it gets from a real server.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from ..errors import DialevalError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_app(
    study_folders: Sequence[str | Path], *, relax_rate_limit: bool = True, timeout: float = 60.0
) -> Iterator[str]:
    """Serve the study folders on 127.0.0.1 while the block runs; yields the base URL."""
    import uvicorn

    from ..web.app import create_app
    from ..web.ratelimit import RateLimiter

    app = create_app([Path(f) for f in study_folders], prepare=True)
    if relax_rate_limit:
        for served in app.state.studies.values():
            served.limiter = RateLimiter(rate=1000.0, burst=1000)
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=30
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"dialeval-sim-server-{port}", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    try:
        while True:
            if not thread.is_alive():
                raise DialevalError("the simulation's web server stopped while starting")
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise DialevalError(f"the simulation's web server did not start within {timeout:.0f} s")
            time.sleep(0.05)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        for served in app.state.studies.values():
            with contextlib.suppress(Exception):  # closing is best effort
                served.ctx.store.close()
