"""Run a coroutine to completion from synchronous code, whether or not an event loop is running.

`asyncio.run` refuses to start inside a running loop, which is where a researcher's Jupyter
notebook, Playwright's sync API or an async test harness calls dialeval's blocking functions
(generation, judging, hooks). There the coroutine runs on its own loop in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(make_coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """The result of ``make_coroutine()``, run on a fresh event loop (a worker thread's if this
    thread already runs one). The coroutine is made in the thread that runs it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make_coroutine())).result()
