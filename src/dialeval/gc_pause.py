"""The cyclic garbage collector paused around allocation-heavy work: one place for every such pause.

Building a study's units, reading a study's judgments and building a report each make hundreds of
thousands of small objects that form no cycles. The collector's passes walk every live object each
time (the libraries' modules and the study's rows), which was half of a served study's start-up,
1.2-1.4 s of reading 1M arena battles and 10-25% of a report's CPU time, with the same peak memory
without them. Reference counting still frees everything that is not in a cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused(*, age_after: bool = False) -> Iterator[None]:
    """No cyclic collection inside the block; the collector's state before it is restored after
    (the block may run inside a longer process: tests, CliRunner, a served app).

    age_after: what the block made then counts as old (freeze + unfreeze moves every object to the
    oldest generation without a pass); else the first collection after a long block walks all of it
    at once (0.1 s after a small report). It is still collected by the next full collection."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if age_after:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()
