"""Spot The Bot analysis reproduces the published findings of Deriu et al. (2020) on the released data."""

from __future__ import annotations

import json
import math
from functools import cache

import numpy as np
import pandas as pd
import pytest

from dialeval.formats.spot_the_bot import read_spot_the_bot
from dialeval.methods.spot_the_bot.analysis import (
    RELEASED,
    analyze_spot_the_bot,
    annotation_frame,
    complete_packages,
    survival_frame,
)


@cache
def _dataset(folder: str, domain: str):
    return read_spot_the_bot(folder, domain)


@cache
def _report(folder: str, domain: str, procedure: str = "released"):
    options = PREVIOUS if procedure == "previous" else {}
    return analyze_spot_the_bot(_dataset(folder, domain), seed=0, survival=False, stability=False, tts=False, **options)


# The procedure this analysis used before it defaulted to the released Table 1 one: one match per
# conversation, the paper's mean pairwise win rate, the shortest rank range.
PREVIOUS = {"matches": "conversation", "statistic": "mean_win_rate", "n_samples": None, "rank_range": "shortest"}


def report(shared_data, domain, procedure="released"):
    return _report(str(shared_data("spot-the-bot")), domain, procedure)


def by_name(rep):
    return {s["name"]: s for s in rep["systems"]}


@pytest.mark.parametrize("domain", ["dailydialog", "empathetic"])
def test_dr_last_language_models_ahead_of_s2(shared_data, domain):
    rep = report(shared_data, domain)
    names = [s["name"] for s in rep["systems"]]
    s = by_name(rep)
    assert "human" not in names
    # DR last everywhere: last in the ranked list, lowest score, lowest TrueSkill
    assert names[-1] == "DR"
    assert s["DR"]["score"] == min(x["score"] for x in rep["systems"])
    assert s["DR"]["trueskill"] == min(x["trueskill"] for x in rep["systems"])
    # GPT and BR ranked ahead of S2, in a better cluster
    assert names.index("S2") > max(names.index("GPT"), names.index("BR"))
    assert min(s["GPT"]["score"], s["BR"]["score"]) > s["S2"]["score"]
    assert s["S2"]["cluster"] > max(s["GPT"]["cluster"], s["BR"]["cluster"])
    for x in rep["systems"]:
        lo, hi = x["rank_range"]
        assert 1 <= lo <= hi <= len(names)


def test_released_procedure_is_the_default(shared_data):
    rep = report(shared_data, "empathetic")
    assert rep["settings"] | RELEASED == rep["settings"]  # every released setting in force
    assert RELEASED == {
        "matches": "annotation",
        "n_bootstrap": 1000,
        "n_samples": 5000,
        "statistic": "win_share",
        "rank_range": "released",
    }
    assert rep["settings"]["incomplete_packages"] == "keep"


def test_empathetic_clusters_as_published_with_their_seed_stability(shared_data):
    # Deriu et al. 2020, Table 1 (Empathetic Dialogues): BL > {BR, GPT} > S2 > DR.
    rep = report(shared_data, "empathetic")
    assert rep["clusters"] == [["BL"], ["BR", "GPT"], ["S2"], ["DR"]]
    st = rep["seed_stability"]
    assert st["seeds"] == 20
    # 12 of the 20 seeds (0..19) give these clusters with numpy 2's PCG64 (frozen from this code;
    # the released code's own random draws are not reproducible); the other seeds split BR from GPT
    assert 0.4 <= st["share"] <= 0.8
    assert st["clusterings"][0] == {"clusters": rep["clusters"], "share": st["share"]}
    assert [c["clusters"] for c in st["clusterings"][1:]] == [[["BL"], ["BR"], ["GPT"], ["S2"], ["DR"]]]
    s = by_name(rep)
    assert s["BL"]["cluster_seed_share"] == s["S2"]["cluster_seed_share"] == s["DR"]["cluster_seed_share"] == 1.0
    assert s["BR"]["cluster_seed_share"] == s["GPT"]["cluster_seed_share"] == st["share"]


def test_dailydialog_released_procedure_separates_gpt_and_br(shared_data):
    # The paper's text puts GPT and BR in one DailyDialog cluster. On the released annotations the
    # released procedure separates them in all 20 seeds (GPT wins 78 % of its matches, BR 64 %);
    # the previous procedure (one match per conversation) joins them, in only half of the seeds.
    rep = report(shared_data, "dailydialog")
    assert rep["clusters"] == [["GPT"], ["BR"], ["S2"], ["DR"]]
    assert rep["seed_stability"]["share"] == 1.0
    prev = report(shared_data, "dailydialog", "previous")
    assert prev["clusters"] == [["BR", "GPT"], ["S2"], ["DR"]]
    assert 0.3 <= prev["seed_stability"]["share"] <= 0.7
    win = {(w["a"], w["b"]): w for w in rep["win_rates"]}
    assert win["GPT", "S2"]["win_rate"] > 0.5 and win["GPT", "S2"]["p"] < 0.05
    assert win["BR", "S2"]["win_rate"] > 0.5 and win["BR", "S2"]["p"] < 0.05


def test_incomplete_packages_option(shared_data):
    ds = _dataset(str(shared_data("spot-the-bot")), "dailydialog")
    frame = annotation_frame(ds)
    complete = complete_packages(frame, ds)
    # 15 (annotator, package) pairs of the released DailyDialog data are unfinished: 50 annotations
    assert (~complete).sum() == 50
    kept = report(shared_data, "dailydialog")  # the default, incomplete_packages="keep" (analysed once)
    dropped = analyze_spot_the_bot(
        ds, survival=False, stability=False, tts=False, seed_stability_seeds=0, incomplete_packages="drop"
    )
    assert kept["n_annotations"] == 2136 and dropped["n_annotations"] == 2136 - 50
    assert dropped["settings"]["n_incomplete_package_annotations_dropped"] == 50
    assert dropped["clusters"] == kept["clusters"]
    with pytest.raises(ValueError, match="incomplete_packages"):
        analyze_spot_the_bot(ds, incomplete_packages="some")


def test_empathetic_blender_first(shared_data):
    rep = report(shared_data, "empathetic")
    s = by_name(rep)
    assert rep["systems"][0]["name"] == "BL"
    assert s["BL"]["cluster"] == 1 and s["BL"]["rank_range"] == [1, 1]
    assert rep["clusters"][0] == ["BL"]
    win = {(w["a"], w["b"]): w for w in rep["win_rates"]}
    # GPT and BR about equal: their win rate is near 0.5 and not significant
    assert abs(win["GPT", "BR"]["win_rate"] - 0.5) < 0.05 and win["GPT", "BR"]["p"] > 0.05
    for other in ("GPT", "BR", "S2", "DR"):
        assert win["BL", other]["win_rate"] > 0.75 and win["BL", other]["p"] < 0.001


@pytest.mark.parametrize("domain, median, tolerance", [("dailydialog", 25.0, 2.0), ("empathetic", 18.0, 1.5)])
def test_median_annotation_time(shared_data, domain, median, tolerance):
    rep = report(shared_data, domain)
    assert rep["time"]["median_s"] == pytest.approx(median, abs=tolerance)
    assert rep["time"]["mean_s"] > rep["time"]["median_s"]  # a few idle annotators stretch the mean


def test_agreement_best_and_worst(shared_data):
    rep = report(shared_data, "empathetic")
    ag = {(a["system"], a["label"]): a["agreement"] for a in rep["agreement"]}
    # the best bot gets the most agreement on "human", the weak one the most on "bot" (paper, Table 3)
    bots = ["BL", "GPT", "BR", "S2", "DR"]
    assert max(bots, key=lambda b: ag[b, "human"]) == "BL"
    assert max(bots, key=lambda b: ag[b, "bot"]) == "DR"
    assert min(bots, key=lambda b: ag[b, "bot"]) == "BL"
    assert all(0 < v < 1 for k, v in rep["feature_alpha"].items())


def test_report_is_json_and_complete(shared_data):
    ds = _dataset(str(shared_data("spot-the-bot")), "dailydialog")
    rep = analyze_spot_the_bot(
        ds,
        n_bootstrap=200,
        seed=0,
        survival=True,
        stability=True,
        stability_sizes=(5, 40),
        stability_repeats=3,
        tts_n_sim=200,
    )
    text = json.dumps(rep, allow_nan=False)
    assert json.loads(text)["method"] == "spot-the-bot"
    for key in ("systems", "win_rates", "survival", "cox", "agreement", "feature_alpha", "time", "stability"):
        assert key in rep
    assert len(rep["win_rates"]) == 12  # 4 systems: 6 pairs in both directions
    assert {"name", "n", "score", "rank_range", "cluster", "trueskill"} <= set(rep["systems"][0])
    bots = {"GPT", "BR", "S2", "DR"}
    # survival was computed, not replaced by a note: a curve per system (humans too), each a
    # step function that starts at S(0) = 1 and never rises
    assert "note" not in rep["survival"]
    curves = rep["survival"]["curves"]
    assert set(curves) == bots | {"human"}
    for pts in curves.values():
        assert pts[0] == [0.0, 1.0] and len(pts) > 2
        times, surv = [t for t, _ in pts], [s for _, s in pts]
        assert times == sorted(times) and all(0 <= b <= a <= 1 for a, b in zip(surv, surv[1:]))
    # humans survive longest: the bots are spotted sooner
    assert min(curves["human"][-1][1], 1) > max(curves[b][-1][1] for b in bots)
    logrank = rep["survival"]["logrank"]
    assert {frozenset((x["a"], x["b"])) for x in logrank} == {
        frozenset((a, b)) for a in bots | {"human"} for b in bots | {"human"} if a < b
    }
    for x in logrank:
        assert 0 <= x["p"] <= x["p_adjusted"] <= 1 and x["statistic"] >= 0
        assert x["p_adjusted"] == pytest.approx(min(1.0, 10 * x["p"]))  # Bonferroni over 10 pairs
    assert {(c["system"], c["feature"]) for c in rep["cox"]} == {
        (b, f) for b in bots for f in ("fluency", "sensibleness", "specificity")
    }
    assert all(c["coef"] is not None and math.isfinite(c["coef"]) and 0 <= c["p"] <= 1 for c in rep["cox"])
    assert all(c["note"] == "" for c in rep["cox"])  # every fit converged: no reason to give
    stability = rep["stability"]
    assert sorted(x["left_out"] for x in stability["leave_one_out"]) == sorted(bots)
    assert stability["all_same"] == all(x["same"] for x in stability["leave_one_out"])
    assert [x["k"] for x in stability["subsample"]] == [5, 40]
    assert stability["reference"] == rep["clusters"]


def test_a_failing_survival_analysis_raises_instead_of_becoming_a_note(shared_data, monkeypatch):
    import dialeval.stats.survival as survival

    def broken(*_args, **_kwargs):
        raise RuntimeError("bug in the survival module")

    monkeypatch.setattr(survival, "pairwise_logrank", broken)
    ds = _dataset(str(shared_data("spot-the-bot")), "dailydialog")
    with pytest.raises(RuntimeError, match="bug in the survival module"):
        analyze_spot_the_bot(ds, n_bootstrap=50, seed=0, survival=True, stability=False, tts=False)


def test_survival_frame(shared_data):
    ds = _dataset(str(shared_data("spot-the-bot")), "dailydialog")
    frame = annotation_frame(ds)
    assert len(frame) == 2136
    surv = survival_frame(ds)
    assert set(surv["system"]) == {"GPT", "BR", "S2", "DR"}
    assert len(surv) == 2 * int(frame["bot_bot"].sum())
    spotted = surv[surv["spotted"]]
    assert (spotted["lower"] == 0).all() and (spotted["upper"] == spotted["exchanges"]).all()
    survived = surv[~surv["spotted"]]
    assert (survived["lower"] == survived["exchanges"]).all() and survived["upper"].map(math.isinf).all()
    assert set(surv["fluency"]) <= {-1, 0, 1}
    with_human = survival_frame(ds, include_human=True)
    assert "human" in set(with_human["system"]) and len(with_human) == 2 * len(frame)


def test_survival_and_stability_sections(shared_data):
    ds = _dataset(str(shared_data("spot-the-bot")), "empathetic")
    rep = analyze_spot_the_bot(
        ds, n_bootstrap=300, seed=0, survival=True, stability=True, stability_sizes=(5, 44), stability_repeats=4
    )
    curves = rep["survival"]["curves"]
    assert {"BL", "GPT", "BR", "S2", "DR"} <= set(curves)
    last = {s: pts[-1][1] for s, pts in curves.items()}
    assert max(("BL", "GPT", "BR", "S2", "DR"), key=last.get) == "BL"
    assert min(("BL", "GPT", "BR", "S2", "DR"), key=last.get) == "DR"
    lr = {frozenset((x["a"], x["b"])): x["p_adjusted"] for x in rep["survival"]["logrank"]}
    # published: GPT/BR and S2/DR not significantly different in Empathetic Dialogues
    assert lr[frozenset(("GPT", "BR"))] > 0.05
    assert lr[frozenset(("S2", "DR"))] > 0.05
    assert lr[frozenset(("BL", "DR"))] < 0.05
    assert {c["feature"] for c in rep["cox"]} == {"fluency", "sensibleness", "specificity"}
    loo = rep["stability"]["leave_one_out"]
    assert [x["left_out"] for x in loo] == ["BL", "BR", "DR", "GPT", "S2"]
    assert [x["k"] for x in rep["stability"]["subsample"]] == [5, 44]
    assert rep["stability"]["reference"] == rep["clusters"]
    json.dumps(rep, allow_nan=False)


def test_survival_frame_by_columns_is_the_row_by_row_one():
    from dialeval.methods.spot_the_bot import analysis as stb_analysis

    rng = np.random.default_rng(0)
    n = 500
    systems = np.array(["human", "b1", "b2", "b3"], dtype=object)
    winners = np.array([0, 1, "tie", None, float("nan"), True, 1.0, 0.0, 2, False], dtype=object)
    frame = pd.DataFrame(
        {
            "annotator": [f"w{k}" for k in rng.integers(0, 40, n)],
            "conversation_id": [f"c{k}" for k in rng.integers(0, 90, n)],
            "exchanges": rng.integers(1, 6, n),
            "system0": systems[rng.integers(0, 4, n)],
            "system1": systems[rng.integers(0, 4, n)],
            "label0": rng.choice(["human", "unsure", "bot"], n),
            "label1": rng.choice(["human", "unsure", "bot"], n),
            "fluency": winners[rng.integers(0, 10, n)],
            "sensibleness": rng.choice([0.0, 1.0, np.nan], n),
            "specificity": rng.integers(0, 2, n),
        }
    )
    columns = list(survival_frame(frame.head(0)).columns)
    for include_human in (False, True):
        fast = survival_frame(frame, include_human=include_human)
        slow = stb_analysis._survival_frame_by_rows(frame, include_human, columns)
        assert fast.equals(slow) and (fast.dtypes == slow.dtypes).all()
