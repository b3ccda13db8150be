"""The one clock of the app: every "now" that decides something (an assignment's expiry, a held
vote's change window, a volunteer's daily cap, the time stamps stored with work) is read here.

Tests move it instead of sleeping: ``clock.advance(3.5)`` makes every reader 3.5 s later at once
(the store's expiries, the protocols' windows, the web app's threads in the same process), and
``clock.reset()`` puts it back (tests/conftest.py does after each test). Only the offset is
injected; time still flows, so waits on real events (a bot's reply, a server starting) are
unaffected. Durations measured inside one request use ``time.monotonic`` and stay off this clock.

>>> t = now(); advance(60); (now() - t).total_seconds() >= 60
True
>>> reset(); offset()
0.0
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

__all__ = ["advance", "iso_now", "now", "offset", "reset", "timestamp"]

_offset = 0.0  # seconds added to the system clock (tests only)


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC) + timedelta(seconds=_offset)


def timestamp() -> float:
    """The current time as seconds since the epoch (what `time.time()` gives, moved alike)."""
    return time.time() + _offset


def iso_now() -> str:
    return now().isoformat()


def advance(seconds: float) -> None:
    """Move the clock forward (tests): every later reading is `seconds` later."""
    global _offset
    if seconds < 0:
        raise ValueError("the clock only moves forward")
    _offset += float(seconds)


def offset() -> float:
    return _offset


def reset() -> None:
    global _offset
    _offset = 0.0
