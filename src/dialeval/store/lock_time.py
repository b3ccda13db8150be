"""How long this process held, and waited for, the write lock that serialises a study's writers.

On SQLite that is the database's one writer (Store._writer_turn: every write transaction); on
PostgreSQL the study's advisory lock (Store.locked: scheduling, an answer with the next assignment).
Under load the lock, not the cores, can be what bounds judgments/s: it is then held nearly all the
time, and the load benchmark reports "limit: write lock", the judgments/s the measured hold time per
judgment allows (benchmarks/load.py).

The counts cost two clock reads per write transaction and are always kept. They are written out only
when ``DIALEVAL_LOCK_TIME_DIR`` names a folder: each process keeps its totals in ``<pid>.json`` there,
rewritten at most every WRITE_EVERY_S and at exit, for the load benchmark to add up."""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_TIME_DIR_ENV = "DIALEVAL_LOCK_TIME_DIR"
WRITE_EVERY_S = 0.5
TOTALS = ("turns", "waited_s", "held_s", "held_cpu_s")  # what a process's file holds


class LockTime:
    """Totals of one process: lock turns, seconds waited, seconds held, and the CPU seconds the
    holding threads used while they held it (held minus CPU: the holder waiting after its statements,
    for the database, a core or the GIL)."""

    def __init__(self, folder: str | None) -> None:
        self.turns = 0
        self.waited_s = 0.0
        self.held_s = 0.0
        self.held_cpu_s = 0.0
        self._count = threading.Lock()
        self._file = Path(folder) / f"{os.getpid()}.json" if folder else None
        self._written_at = 0.0
        if self._file is not None:
            try:
                self._file.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                self._give_up(exc)
            else:
                atexit.register(self.write)

    @contextmanager
    def turn(self, asked_at: float) -> Iterator[None]:
        """Around the time the lock is held; `asked_at` (time.monotonic) is when it was asked for."""
        got_at, cpu_at = time.monotonic(), time.thread_time()
        try:
            yield
        finally:
            held, cpu = time.monotonic() - got_at, time.thread_time() - cpu_at
            with self._count:
                self.turns += 1
                self.waited_s += got_at - asked_at
                self.held_s += held
                self.held_cpu_s += cpu
            if self._file is not None and got_at - self._written_at >= WRITE_EVERY_S:
                self._written_at = got_at
                self.write()

    def totals(self) -> dict[str, float]:
        with self._count:
            return {name: getattr(self, name) for name in TOTALS}

    def write(self) -> None:
        """The totals into the folder. Never raises: it runs as a write transaction ends, after its
        commit, and a full disk or a removed folder must not fail the request (it stops writing)."""
        if self._file is None:
            return
        partial = self._file.parent / f"{self._file.name}.{threading.get_ident()}.tmp"
        try:
            partial.write_text(json.dumps(self.totals()), encoding="utf-8")
            partial.replace(self._file)  # a reader never sees half a file
        except OSError as exc:
            self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        logging.getLogger(__name__).warning("%s: the write-lock totals are not written (%s)", LOCK_TIME_DIR_ENV, exc)
        self._file = None


LOCK_TIME = LockTime(os.environ.get(LOCK_TIME_DIR_ENV) or None)


def read_totals(folder: Path) -> dict[str, float]:
    """The totals of every process that wrote into `folder`, added up."""
    out = dict.fromkeys(TOTALS, 0.0)
    for path in Path(folder).glob("*.json"):
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not one of ours (each is replaced whole, never written in place)
        for key in out:
            out[key] += float(values.get(key, 0.0))
    return out
