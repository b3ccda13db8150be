"""Adaptive collection wired into the real ACUTE-Eval scheduler, driven over HTTP (TestClient).

Annotators here always prefer the stronger bot (retrieval > eliza > repeat), so every outcome is
fixed and the scheduler's seeded pair draws make each run identical: the tests check exact stop
points. With `adaptive.prior: 2` an anytime-valid test at 0.05/3 (Bonferroni over 3 pairs) decides
a pair after 11 straight wins (stats/sequential.decision_bounds).
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from dialeval.config import AdaptiveConfig
from dialeval.report import build_report
from dialeval.scheduling.assign import pair_key
from dialeval.scheduling.plan import ADAPTIVE_STOPPED
from dialeval.scheduling.state import AdaptiveState
from dialeval.stats.sequential import decision_bounds
from dialeval.store import work
from dialeval.web.app import create_app

from .conftest import Annotator
from .studies import make_acute_study

RANK = {"retrieval": 0, "eliza": 1, "repeat": 2}  # the simulated truth: lower is better


def all_wins_stop(alpha: float, prior: float, n_max: int = 200) -> int:
    """The fewest judgments after which straight wins decide a pair (the stopping rule's own boundary)."""
    _, hi = decision_bounds(n_max, alpha, prior)
    return next(n for n in range(1, n_max + 1) if hi[n] <= n)


ALL_WINS_STOP = all_wins_stop(0.05 / 3, 2)  # prior 2, alpha 0.05 / 3 pairs


def adaptive_study(folder: Path, adaptive: dict | None, **kw) -> Path:
    """make_acute_study (no onboarding) plus an `adaptive:` block in study.yaml."""
    kw.setdefault("onboarding", False)
    folder = make_acute_study(folder, **kw)
    if adaptive is not None:
        data = yaml.safe_load((folder / "study.yaml").read_text())
        data["adaptive"] = adaptive
        (folder / "study.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


class Served:
    def __init__(self, folder: Path):
        self.app = create_app([folder])
        self.served = next(iter(self.app.state.studies.values()))
        self.store, self.sid = self.served.ctx.store, self.served.ctx.study_id
        self.config = self.served.ctx.config

    def close(self):
        for s in self.app.state.studies.values():
            s.ctx.store.close()

    def bots_shown(self, aid: int) -> list[str]:
        a = work.get_assignment(self.store, aid)
        return [a.payload["speakers_to_eval"][a.conversation_ids.index(c)] for c in a.shown_order]

    def annotate(self, n: int, choose=None) -> list[int]:
        """One annotator until the done page; answers for the stronger bot. Returns assignment ids."""
        ann = Annotator(self.app, "acute-test")
        page = ann.enter()
        done = []
        for _ in range(50):
            if page.url.path.endswith("/done"):
                return done
            aid = int(re.search(r"/a/(\d+)/submit", page.text).group(1))
            bots = self.bots_shown(aid)
            pick = choose(bots) if choose else min((0, 1), key=lambda i: RANK[bots[i]])
            r = ann.post(
                ann.action(page.text),
                {"choice": str(pick + 1), "justification": f"reason {n} here", "request_id": uuid.uuid4().hex},
            )
            assert r.status_code == 200, r.text
            done.append(aid)
            page = ann.task()
        raise AssertionError("annotator never reached the done page")

    def crowd(self, limit: int = 80) -> list[list[int]]:
        """Annotators one after another until one gets no work at all."""
        out = []
        for n in range(limit):
            got = self.annotate(n)
            out.append(got)
            if not got:
                return out
        raise AssertionError("the study never ran out of work")

    def comparisons(self) -> list[work.JudgmentLite]:
        return [j for j in work.list_judgments(self.store, self.sid) if j.question == "preference"]

    def report(self) -> dict:
        return build_report(self.store.load_dataset(self.sid), self.config.model_dump(mode="json"), n_boot=20, n_sim=10)


def pair_of(j) -> tuple[str, str]:
    return pair_key(j.meta["winner_bot"], j.meta["loser_bot"])


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request):
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return None


def test_adaptive_stops_when_ranking_decided_and_follows_next_pair(tmp_path, backend):
    folder = adaptive_study(
        tmp_path / "a", {"enabled": True, "prior": 2}, per_bot=4, comparisons=4, per_pair=50, database=backend
    )
    s = Served(folder)
    try:
        crowd = s.crowd()
        assert crowd[-1] == [] and all(crowd[:-1])
        prefs = s.comparisons()
        n_total = len(prefs)
        # the whole run replayed: every unit's bot pair is AdaptiveState.next_pair of the judgments
        # before it (rng from the study seed and the assignment counter), never a decided pair
        assignments = sorted(a for got in crowd for a in got)
        by_assignment = {j.assignment_id: j for j in prefs}
        bots = ["retrieval", "eliza", "repeat"]
        cfg = s.config.adaptive
        for k, aid in enumerate(assignments):
            before = [
                (j.meta["winner_bot"], j.meta["loser_bot"], j.meta["winner_bot"], j.annotator_id)
                for j in prefs
                if j.assignment_id < aid
            ]  # the test counts per annotator
            state = AdaptiveState.from_outcomes(before, bots, cfg, session=4)
            assert not state.done
            want = state.next_pair(np.random.default_rng([s.config.seed, k]))
            got = pair_of(by_assignment[aid])
            assert got == pair_key(*want), (k, got, want)
            assert got in {pair_key(a, b) for a, b in state.undecided_pairs()}
        per_pair = Counter(pair_of(j) for j in prefs)
        # adjacent pairs cannot be implied by transitivity: each is decided once 11 annotators have
        # preferred the better bot (the test counts one factor per annotator: stats.sequential)
        assert per_pair[("eliza", "retrieval")] >= ALL_WINS_STOP
        assert per_pair[("eliza", "repeat")] >= ALL_WINS_STOP
        assert n_total < 3 * 50  # the uniform design would collect 150
        # one event, with the stopping table; nothing was given out after it
        events = work.list_events(s.store, s.sid, ADAPTIVE_STOPPED)
        assert len(events) == 1
        payload = events[0]["payload"]
        assert payload["reason"] == "decided" and payload["judgments"] == n_total
        assert payload["questions"]["preference"]["ranking"] == bots
        given = work.list_events(s.store, s.sid, "assignment-given")
        assert max(e["id"] for e in given) < events[0]["id"]
        # later annotators: the done page, no assignment, no second event
        with s.store.session() as session:
            before_count = work.count_assignments(session, s.sid)
        assert s.annotate(99) == [] and s.annotate(100) == []
        with s.store.session() as session:
            assert work.count_assignments(session, s.sid) == before_count
        assert len(work.list_events(s.store, s.sid, ADAPTIVE_STOPPED)) == 1
        # the report's stopping table is the scheduler's (same judgments, same order)
        stop = s.report()["stopping"]
        assert stop["enabled"] is True and stop["used_for_stopping"] is True and stop["decided"] is True
        assert "Bonferroni" in stop["rule"] and "m = 3" in stop["rule"] and "Beta(2,2)" in stop["rule"]
        assert "Howard" in stop["rule"] and stop["selection"].startswith("uniform")
        assert stop["ranking"] == bots
        assert stop["pairs"] == payload["questions"]["preference"]["pairs"]
        rows = {(r["a"], r["b"]): r for r in stop["pairs"]}
        for key in (("retrieval", "eliza"), ("eliza", "repeat")):
            assert rows[key]["decided"] and rows[key]["decided_blocks"] == ALL_WINS_STOP
            assert rows[key]["stopped_at_n"] >= ALL_WINS_STOP
            assert rows[key]["winner"] == key[0] and rows[key]["p_always_valid"] <= 0.05 / 3
        far = rows[("retrieval", "repeat")]
        assert far["winner"] == "retrieval" and (far["decided"] or far["implied"])
    finally:
        s.close()


def test_budget_max_judgments_stops_the_study(tmp_path):
    folder = adaptive_study(tmp_path / "b", {"enabled": True, "max_judgments": 5}, per_bot=4, comparisons=2)
    s = Served(folder)
    try:
        crowd = s.crowd()
        assert [len(c) for c in crowd] == [2, 2, 1, 0]  # the 5th judgment is the last one given out
        assert len(s.comparisons()) == 5
        events = work.list_events(s.store, s.sid, ADAPTIVE_STOPPED)
        assert len(events) == 1 and events[0]["payload"]["reason"] == "max_judgments"
        assert "or after 5 judgments" in s.report()["stopping"]["rule"]
    finally:
        s.close()


def test_filtered_annotators_do_not_count(tmp_path):
    folder = adaptive_study(tmp_path / "c", {"enabled": True, "prior": 2}, per_bot=4, comparisons=4)
    s = Served(folder)
    try:
        first = s.annotate(0, choose=lambda bots: min((0, 1), key=lambda i: -RANK[bots[i]]))  # always the weaker
        assert len(first) == 4
        annotator_id = work.get_assignment(s.store, first[0]).annotator_id
        s.store.set_annotator_status(annotator_id, "blocked", ["test"])
        crowd = s.crowd()
        assert crowd[-1] == []
        counted = [j for j in s.comparisons() if j.annotator_id != annotator_id]
        table = work.list_events(s.store, s.sid, ADAPTIVE_STOPPED)[0]["payload"]["questions"]["preference"]["pairs"]
        assert sum(r["n"] for r in table) == len(counted)
        rows = {(r["a"], r["b"]): r for r in table}
        assert rows[("retrieval", "eliza")]["decided_blocks"] == ALL_WINS_STOP  # the blocked votes never counted
        report = s.report()
        assert report["excluded"]["filtered_judgments"] == 4
        assert report["stopping"]["pairs"] == table
    finally:
        s.close()


def test_disabled_keeps_balanced_allocation_and_reports_monitoring_only(tmp_path):
    folder = adaptive_study(tmp_path / "d", None, per_bot=4, comparisons=2, per_pair=4)
    s = Served(folder)
    try:
        assert s.config.adaptive.enabled is False
        pairs = [("eliza", "retrieval"), ("repeat", "retrieval"), ("eliza", "repeat")]
        counts: Counter = Counter()
        for n in range(6):
            got = s.annotate(n)
            assert len(got) == 2
            counts = Counter(pair_of(j) for j in s.comparisons())
            spread = [counts.get(p, 0) for p in pairs]
            assert max(spread) - min(spread) <= 1, (n, counts)  # balanced after every annotator
        assert counts == Counter({("eliza", "retrieval"): 4, ("repeat", "retrieval"): 4, ("eliza", "repeat"): 4})
        assert s.annotate(6) == []  # every pair at its target
        assert work.list_events(s.store, s.sid, ADAPTIVE_STOPPED) == []
        stop = s.report()["stopping"]
        assert stop["enabled"] is False and stop["used_for_stopping"] is False
        assert stop["rule"].startswith("Monitoring only, not used for stopping")
        assert stop["selection"].startswith("balanced")
        assert len(stop["pairs"]) == 3 and all(r["n"] == 4 for r in stop["pairs"])
    finally:
        s.close()


def test_adaptive_config_fields_are_validated():
    cfg = AdaptiveConfig(enabled=True, prior=5, transitive=False, max_judgments=100)
    assert (cfg.prior, cfg.transitive, cfg.max_judgments) == (5, False, 100)
    assert AdaptiveConfig().prior == 20 and AdaptiveConfig().transitive and AdaptiveConfig().max_judgments is None
    for bad in ({"prior": 0}, {"prior": -1}, {"max_judgments": 0}, {"alpha": 0.7}, {"stoping": "none"}):
        with pytest.raises(ValidationError):
            AdaptiveConfig(**bad)
    # transitive: False keeps collecting the implied pair
    outcomes = [("x", "y", "x")] * 30 + [("y", "z", "y")] * 30
    st = AdaptiveState.from_outcomes(outcomes, ["x", "y", "z"], cfg)
    assert st.transitive is False and st.prior == 5 and st.next_pair(0) == ("x", "z")
