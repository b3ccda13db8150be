"""Arena battles analysis: Bradley–Terry with ties, bootstrap and sandwich intervals, tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dialeval.formats.arena import read_arena_battles
from dialeval.methods.arena.analysis import analyze_arena
from dialeval.records import Annotator, Dataset, Judgment
from dialeval.stats.bradley_terry import aggregate_votes, bootstrap_bt, fit_bt, sandwich_intervals

# arena-rank 0.1.1 (PyPI; LMArena's own ranking code) on ../shared/data/arena-judges/human.jsonl,
# frozen here because the package pins numpy==2.3.3 and pulls jax (benchmarks/arena_rank_check.py
# re-runs it live). The call, with jax_enable_x64:
#   ds = PairDataset.from_pandas(pd.read_json("human.jsonl", lines=True))   # default outcome map:
#   r = BradleyTerry(n_competitors=len(ds.competitors)).compute_ratings_and_cis(ds, ci_method="sandwich")
# model: (rating, sandwich lower, sandwich upper), 95%, scale 400, base 10, init 1000.
ARENA_RANK = {
    "RWKV-4-Raven-14B": (941.856, 931.554, 952.159),
    "alpaca-13b": (921.283, 911.928, 930.638),
    "chatglm-6b": (892.541, 881.867, 903.214),
    "claude-instant-v1": (1169.219, 1156.191, 1182.247),
    "claude-v1": (1191.981, 1180.958, 1203.004),
    "dolly-v2-12b": (845.600, 833.550, 857.650),
    "fastchat-t5-3b": (899.560, 888.723, 910.396),
    "gpt-3.5-turbo": (1138.028, 1128.174, 1147.882),
    "gpt-4": (1237.435, 1225.947, 1248.923),
    "gpt4all-13b-snoozy": (946.598, 927.269, 965.927),
    "guanaco-33b": (1078.933, 1059.061, 1098.804),
    "koala-13b": (1001.627, 993.317, 1009.936),
    "llama-13b": (824.284, 809.939, 838.628),
    "mpt-7b-chat": (953.425, 941.861, 964.989),
    "oasst-pythia-12b": (924.662, 915.786, 933.539),
    "palm-2": (1048.356, 1036.882, 1059.831),
    "stablelm-tuned-alpha-7b": (855.501, 843.555, 867.446),
    "vicuna-13b": (1058.956, 1050.699, 1067.214),
    "vicuna-7b": (1024.383, 1012.765, 1036.000),
    "wizardlm-13b": (1045.773, 1027.399, 1064.147),
}


def _battles(rows, judge="crowd"):
    judgments = [
        Judgment(
            annotator_id=judge,
            unit_id=None,
            question="battle",
            value={"model_a": a, "model_b": b, "winner": w},
            meta={"battle": str(k)},
        )
        for k, (a, b, w) in enumerate(rows)
    ]
    return Dataset(method="arena", annotators=[Annotator(judge)], judgments=judgments)


def test_ties_count_half_a_win_both_kinds():
    # x beats y once, then a tie and a both-bad tie: x has 2 of 3 points => P = 2/3 => 400 log10(2)
    report = analyze_arena(_battles([("x", "y", "model_a"), ("y", "x", "tie"), ("x", "y", "tie (bothbad)")]), n_boot=0)
    score = {s["name"]: s["score"] for s in report["systems"]}
    assert score["x"] - score["y"] == pytest.approx(400 * math.log10(2), abs=0.05)
    assert report["win_rates"]["x"]["y"] == pytest.approx(2 / 3, abs=1e-3)
    assert report["battle_counts"]["x"]["y"] == 3 and report["battle_counts"]["x"]["x"] is None
    assert "half a win" in report["ties"]


def test_sandwich_agrees_with_the_bootstrap_on_simulated_battles():
    rng = np.random.default_rng(3)
    strength = np.array([0.0, 0.4, 0.8, 1.2])
    rows = []
    for _ in range(6000):
        i, j = rng.choice(4, 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[i] - strength[j])))
        u = rng.random()
        rows.append((f"m{i}", f"m{j}", "tie" if u < 0.2 else "model_a" if u < 0.2 + 0.8 * p else "model_b"))
    frame = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])
    names, wins, ties = aggregate_votes(frame, "model_a", "model_b", "winner")
    theta = fit_bt(wins, ties)
    se, _ = sandwich_intervals(wins, ties, theta)
    boot_se = bootstrap_bt(wins, ties, n_boot=2000, seed=1).std(axis=0)
    assert np.allclose(se, boot_se, rtol=0.15)


def test_published_battles_match_arena_rank(shared_data):
    report = analyze_arena(read_arena_battles(shared_data("arena-judges/human.jsonl")), n_boot=300)
    ours = {s["name"]: s for s in report["systems"]}
    assert set(ours) == set(ARENA_RANK)
    # arena-rank leaves the mean where its optimiser started; compare ratings centred alike
    offset = np.mean([v[0] for v in ARENA_RANK.values()]) - np.mean([s["score"] for s in ours.values()])
    for name, (rating, low, high) in ARENA_RANK.items():
        assert ours[name]["score"] + offset == pytest.approx(rating, abs=0.5), name
        assert ours[name]["sandwich_low"] + offset == pytest.approx(low, abs=0.5), name
        assert ours[name]["sandwich_high"] + offset == pytest.approx(high, abs=0.5), name
    top = report["systems"][0]
    assert top["name"] == "gpt-4" and top["rank"] == 1 and top["rank_interval"] == [1, 1]
    assert top["ci_low"] < top["score"] < top["ci_high"]
    assert report["outcomes"] == {"model_a": 9516, "model_b": 9391, "tie": 2880, "tie (bothbad)": 5132}
    assert sum(s["n"] for s in report["systems"]) == 2 * 26919
    rates = report["win_rates"]
    assert rates["gpt-4"]["claude-v1"] + rates["claude-v1"]["gpt-4"] == pytest.approx(1, abs=2e-3)


def test_a_judge_is_set_against_the_crowd_not_ranked(shared_data):
    folder = shared_data("arena-judges")
    ds = read_arena_battles(folder / "human.jsonl", judge_files=[folder / "gpt-4-0125-preview.jsonl"])
    # annotator models off (a study file's `annotators: {models: false}`): Dawid-Skene and MACE with
    # their bootstrap on these 54k labels were 87% of this test's time and it checks none of them
    # (tests/judges/test_judge_data.py reports this data with the annotator models on)
    ds.meta["config"] = {**(ds.meta.get("config") or {}), "annotators": {"models": False}}
    report = analyze_arena(ds, n_boot=0)
    assert "annotator models off" in report["annotator_model"]["note"]
    assert report["battles"] == 26919  # the judge's verdicts stay out of the leaderboard
    judge = report["judges"]["gpt-4-0125-preview"]
    # the data's README: agreement with the crowd on non-tie votes 83.3% (GPT-4)
    assert judge["agreement_non_tie"] == pytest.approx(0.833, abs=0.001)
    assert judge["battles"] == 26919
