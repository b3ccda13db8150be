"""The scheduler's adaptive state is kept between assignments and fed only new judgments; it must
equal a full replay of the study at every point, and start over when an annotator is blocked."""

from __future__ import annotations

from dialeval.annotator_rules import is_filtered
from dialeval.methods.acute.protocol import _adaptive_outcome
from dialeval.scheduling.process_state import scheduler_state
from dialeval.scheduling.state import study_state
from dialeval.store import work

from .test_adaptive_scheduling import Served, adaptive_study


def full_replay(s: Served) -> dict:
    outcomes: dict[str, list] = {"preference": []}
    with s.store.read() as session:
        for j in work.scheduling_judgments(session, s.sid):
            o = _adaptive_outcome(j)
            if o is not None and not is_filtered(j.annotator_status, j.annotator_meta) and j.question in outcomes:
                outcomes[j.question].append((*o[:3], j.annotator))  # the test counts per annotator block
    return {q: study_state(v, "acute", s.config).stopping_table() for q, v in outcomes.items()}


def cached(s: Served) -> dict:
    caches = scheduler_state(s.store).adaptive
    (cache,) = caches.values()
    return {q: st.stopping_table() for q, st in cache.states.items()}


def test_incremental_state_equals_full_replay(tmp_path):
    folder = adaptive_study(tmp_path / "a", {"enabled": True, "prior": 2}, per_bot=4, comparisons=3, per_pair=50)
    s = Served(folder)
    try:
        first = s.annotate(0)
        second = s.annotate(1)
        assert first and second
        s.annotate(2)  # its first assignment fed the judgments of the two before
        assert cached(s) == full_replay(s)
        n_before = sum(r["n"] for r in full_replay(s)["preference"])
        assert n_before >= len(first) + len(second)
        # block the first annotator: their judgments stop counting, the cache is rebuilt
        s.store.set_annotator_status(1, "blocked", ["test"])
        s.annotate(3)
        after = full_replay(s)
        assert cached(s) == after
        prefs = [j for j in work.list_judgments(s.store, s.sid) if j.question == "preference"]
        assert sum(r["n"] for r in after["preference"]) == sum(1 for j in prefs if j.annotator_id != 1)
    finally:
        s.close()
