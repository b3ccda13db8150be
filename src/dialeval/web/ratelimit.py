"""A small token-bucket rate limiter (per key, per process), e.g. for live chat messages.

    limiter = RateLimiter(rate=1.0, burst=5)     # 1 message per second on average, bursts of 5
    if not limiter.allow(f"{study}:{annotator_id}"):
        -> answer 429

`RateLimiter` keeps its buckets in the process; `DatabaseRateLimiter` (what `serve` uses) keeps
them in the study's database, so every worker and every host counts the same bucket.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    def __init__(
        self, rate: float = 1.0, burst: int = 5, max_keys: int = 50_000, clock: Callable[[], float] = time.monotonic
    ):
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate, self.burst, self.max_keys = float(rate), int(burst), max_keys
        self.clock = clock  # seconds; tests pass a manual clock so no test depends on the wall clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str, cost: float = 1.0, now: float | None = None) -> bool:
        now = self.clock() if now is None else now
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            allowed = tokens >= cost
            if allowed:
                tokens -= cost
            if len(self._buckets) >= self.max_keys and key not in self._buckets:
                self._buckets.clear()  # crude bound on memory
            self._buckets[key] = (tokens, now)
            return allowed

    def check(self, key: str, cost: float = 1.0) -> tuple[bool, float]:
        """(allowed, seconds to wait before the next try)."""
        allowed = self.allow(key, cost)
        return allowed, (0.0 if allowed else self.retry_after(key))

    def retry_after(self, key: str) -> float:
        with self._lock:
            tokens, _ = self._buckets.get(key, (float(self.burst), 0.0))
        return max(0.0, (1.0 - tokens) / self.rate)


class DatabaseRateLimiter:
    """The same token bucket, stored in the database (Store.take_token): shared by all processes."""

    def __init__(self, store, prefix: str, rate: float = 1.0, burst: int = 5, clock: Callable[[], float] = time.time):
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.store, self.prefix, self.rate, self.burst = store, prefix, float(rate), int(burst)
        # wall-clock seconds: the hosts sharing a bucket agree on it (monotonic clocks differ per
        # machine); tests pass a manual clock
        self.clock = clock

    def check(self, key: str, cost: float = 1.0) -> tuple[bool, float]:
        return self.store.take_token(f"{self.prefix}:{key}", self.rate, self.burst, cost, now=self.clock())
