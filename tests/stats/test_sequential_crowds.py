"""A/A false-positive rates of adaptive stopping when annotators differ (issue 14, part 6).

Two identical bots; every annotator has their own win rate for bot a, 0.5 + N(0, 0.15) (clipped to
[0, 1]), and gives 5 or 10 consecutive judgments. The per-judgment test treats those as independent
and its false-positive rate is far above alpha; the annotator-level test (one factor per annotator
block, stats.sequential) keeps it at or below alpha. Fixed seeds; each claim is checked with a
Clopper-Pearson bound, so a real regression fails and chance alone (99% bound) almost never does.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from dialeval.config import AdaptiveConfig
from dialeval.scheduling.state import AdaptiveState
from dialeval.stats.sequential import SequentialPairTest, block_log_e_process, decision_bounds

ALPHA = 0.05
SD = 0.15
N_MAX = 1000  # judgments per simulated study
STUDIES = 3000


def clopper_pearson(x: int, n: int, conf: float = 0.99) -> tuple[float, float]:
    a = 1 - conf
    lo = 0.0 if x == 0 else float(sps.beta.ppf(a / 2, x, n - x + 1))
    hi = 1.0 if x == n else float(sps.beta.ppf(1 - a / 2, x + 1, n - x))
    return lo, hi


def crowd(per_annotator: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(judgments (studies, N_MAX) of 0/1 for bot a, annotator win rates (studies, blocks))."""
    rng = np.random.default_rng(seed)
    blocks = N_MAX // per_annotator
    p = np.clip(0.5 + rng.normal(0, SD, (STUDIES, blocks)), 0, 1)
    x = rng.random((STUDIES, blocks, per_annotator)) < p[..., None]
    return x.reshape(STUDIES, blocks * per_annotator), p


@pytest.mark.parametrize("per_annotator, seed", [(5, 11), (10, 12)])
def test_annotator_level_test_keeps_the_aa_rate_when_annotators_differ(per_annotator, seed):
    x, _ = crowd(per_annotator, seed)
    blocks = x.reshape(STUDIES, -1, per_annotator)
    log_m = block_log_e_process(blocks.sum(axis=2), np.full(blocks.shape[:2], per_annotator))
    fp = int((log_m >= math.log(1 / ALPHA)).any(axis=1).sum())
    lo, hi = clopper_pearson(fp, STUDIES)
    assert hi <= ALPHA, (fp / STUDIES, lo, hi)  # measured: 1.9% (5 each), 1.8% (10 each) at 4,000 studies

    # the per-judgment test on the very same judgments: clearly above alpha (the problem is real)
    low, high = decision_bounds(N_MAX, ALPHA)
    cum = np.cumsum(x, axis=1)
    ns = np.arange(1, N_MAX + 1)
    fp_naive = int(((cum >= high[ns]) | (cum <= low[ns])).any(axis=1).sum())
    assert clopper_pearson(fp_naive, STUDIES)[0] > ALPHA, fp_naive / STUDIES


def test_the_class_and_the_vectorised_process_agree_on_a_crowd():
    """SequentialPairTest with annotator ids (blocks closing by size) = block_log_e_process."""
    x, _ = crowd(5, 3)
    for row in x[:20, :300]:
        t = SequentialPairTest("a", "b", block=5)
        for k, won in enumerate(row):
            t.update(bool(won), annotator=f"w{k // 5}")
        blocks = row.reshape(-1, 5)
        log_m = block_log_e_process(blocks.sum(axis=1), np.full(len(blocks), 5))
        assert t.blocks == len(blocks)
        assert math.log(t.e_value) == pytest.approx(log_m[-1], abs=1e-9)
        assert t.p_value == pytest.approx(min(1.0, math.exp(-log_m.max())), rel=1e-9)


def test_one_judgment_blocks_are_the_beta_binomial_mixture_exactly():
    rng = np.random.default_rng(5)
    row = rng.random(400) < 0.56
    plain, named = SequentialPairTest(), SequentialPairTest(block=1)
    for k, won in enumerate(row):
        plain.update(bool(won))
        named.update(bool(won), annotator=f"w{k}")
    assert (plain.p_value, plain.stopped_at) == (named.p_value, named.stopped_at)
    assert not named.clustered


def test_adaptive_state_with_annotators_through_from_outcomes():
    """The public API (what the scheduler and the report replay): interleaved annotators, blocks closing
    by size and idleness, later judgments of a closed annotator counted but not tested."""
    rng = np.random.default_rng(8)
    outcomes = []
    for k in range(300):
        who = f"w{k % 7 + 7 * (k // 70)}"  # 7 annotators at a time, interleaved
        outcomes.append(("x", "y", "x" if rng.random() < 0.75 else "y", who))
    outcomes += [("x", "y", "x", "w0")] * 3  # w0 comes back after its block closed
    st = AdaptiveState.from_outcomes(outcomes, ["x", "y"], AdaptiveConfig(enabled=True, annotator_block=10), final=True)
    (row,) = st.stopping_table()
    assert row["test_level"] == "annotator" and row["untested"] >= 3
    assert row["tested_n"] + row["untested"] + row["open"] == row["n"] == 303
    assert row["decided"] and row["winner"] == "x" and row["decided_blocks"] <= row["blocks"]
    # the same judgments without annotator ids: the (invalid for crowds) per-judgment test decides sooner
    plain = AdaptiveState.from_outcomes([o[:3] for o in outcomes], ["x", "y"], AdaptiveConfig(enabled=True))
    assert plain.stopping_table()[0]["stopped_at_n"] < row["stopped_at_n"]


def test_one_alpha_for_the_whole_study_across_questions():
    from dialeval.scheduling.state import study_state

    config = {
        "bots": [{"name": n, "type": "eliza"} for n in "xyz"],
        "adaptive": {"enabled": True},
        "questions": [{"id": "q1"}, {"id": "q2"}],
    }
    st = study_state([], "acute", config)
    assert st.level == pytest.approx(0.05 / (3 * 2))


def test_filtering_annotators_after_a_decision_is_said_in_the_report():
    """A pair decided while collecting, no longer decided once an annotator is filtered out: the report's
    stopping section says so instead of silently showing an open pair."""
    from dialeval.records import Annotator, Conversation, Dataset, Judgment, Unit
    from dialeval.report import build_report

    convs = [Conversation("cx", ["x"], []), Conversation("cy", ["y"], [])]
    annotators, judgments = [], []
    for k in range(12):  # 12 annotators, one judgment each, all prefer x (8 straight wins decide)
        who = f"w{k}"
        annotators.append(Annotator(who, meta={"status": "blocked"} if k < 6 else {}))
        judgments.append(Judgment(who, "u", "preference", {"winner": "cx", "loser": "cy"}))
    config = {
        "name": "t",
        "bots": [{"name": "x", "type": "eliza"}, {"name": "y", "type": "eliza"}],
        "adaptive": {"enabled": True},
    }
    dataset = Dataset("acute", convs, annotators, [Unit("u", "acute", ["cx", "cy"])], judgments, {"config": config})
    stop = build_report(dataset, config)["stopping"]
    (row,) = stop["pairs"]
    assert not row["decided"] and row["n"] == 6
    assert row["reopened_by_filtering"] is True and row["decided_before_filtering"]["winner"] == "x"
    assert stop["reopened_by_filtering"] == [["x", "y"]]
    # and in words, in the answer at the top of the HTML report
    report = build_report(dataset, config)
    (sentence,) = [s for s in report["answer"]["summary"] if "no longer decided" in s]
    assert sentence.startswith("x vs y was decided while collecting (x preferred after 12 judgments)")
    import tempfile
    from html import unescape

    from dialeval.report.build import write_report

    with tempfile.TemporaryDirectory() as out:
        page = unescape(write_report(report, out)["html"].read_text(encoding="utf-8"))
    answer_list = page.split('data-key="answer.summary"', 1)[1].split("</ul>", 1)[0]
    assert "x vs y was decided while collecting" in answer_list


def test_report_p_values_are_always_valid_when_collection_stopped_adaptively():
    from dialeval.records import Annotator, Conversation, Dataset, Judgment, Unit
    from dialeval.report import build_report

    convs = [Conversation("cx", ["x"], []), Conversation("cy", ["y"], [])]
    annotators = [Annotator(f"w{k}") for k in range(30)]
    pick = [("cx", "cy") if k % 3 else ("cy", "cx") for k in range(30)]  # x wins 20 of 30
    judgments = [Judgment(f"w{k}", "u", "preference", {"winner": w, "loser": l_}) for k, (w, l_) in enumerate(pick)]
    config = {"name": "t", "bots": [{"name": "x", "type": "eliza"}, {"name": "y", "type": "eliza"}]}
    for enabled in (True, False):
        cfg = {**config, "adaptive": {"enabled": enabled}}
        data = Dataset("acute", convs, annotators, [Unit("u", "acute", ["cx", "cy"])], judgments, {"config": cfg})
        report = build_report(data, cfg)
        (m,) = report["matchups"]
        (row,) = report["stopping"]["pairs"]
        if enabled:  # the stopping test's p, not the fixed-size binomial one (20 of 30: p = 0.099)
            assert m["p"] == row["p_always_valid"] and m["e_value"] == row["e_value"]
            assert m["p_fixed_n"] < m["p"] and "always-valid" in report["p_values"]
        else:
            assert "p_fixed_n" not in m and "p_values" not in report
