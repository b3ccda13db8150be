"""Spot The Bot stability and feature win rates, time to significance (STB, DA), automatic metrics."""

from __future__ import annotations

import json
from functools import cache
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from dialeval.analysis import metrics as am
from dialeval.analysis.metrics import metric_report
from dialeval.methods.direct_assessment.analysis import direct_assessment_frames
from dialeval.methods.direct_assessment.analysis import time_to_significance as da_tts
from dialeval.methods.spot_the_bot.analysis import (
    analyze_spot_the_bot,
    annotation_frame,
    subsample_stability_report,
)
from dialeval.methods.spot_the_bot.analysis import (
    time_to_significance as stb_tts,
)
from dialeval.records import Conversation, Dataset, Judgment, Turn
from dialeval.stats import metrics as wm
from dialeval.stats.power import mann_whitney_time_to_significance, simulate_mann_whitney_power

STRENGTH = {"A": 0.85, "B": 0.5, "C": 0.15}  # chance of being labelled human


def synthetic_stb(n_per_pair: int = 10, seed: int = 0, references: bool = False) -> Dataset:
    """Three bots A > B > C; per conversation 2 segment lengths x 2 annotations."""
    rng = np.random.default_rng(seed)
    words = "the cat sat on a mat and then it went home to sleep".split()
    convs, judgments = [], []
    for x, y in combinations(sorted(STRENGTH), 2):
        for i in range(n_per_pair):
            cid = f"{x}{y}{i}"
            turns = []
            for t in range(6):
                bot = (x, y)[t % 2]
                ref = " ".join(rng.choice(words, 6))
                # the better the bot, the more of the reference it repeats
                keep = int(round(6 * STRENGTH[bot]))
                text = " ".join(ref.split()[:keep] + ["zork"] * (6 - keep))
                meta = {"reference": ref} if references else {}
                turns.append(Turn(speaker=f"entity{t % 2}", text=text, bot=bot, meta=meta))
            convs.append(Conversation(id=cid, bots=[x, y], turns=turns, source="bot-bot"))
            for k in (2, 3):
                for a in range(2):
                    labels = ["human" if rng.random() < STRENGTH[s] else "bot" for s in (x, y)]
                    better = 0 if STRENGTH[x] > STRENGTH[y] else 1
                    feats = {
                        f: (better if rng.random() < 0.7 else "tie") for f in ("fluency", "sensibleness", "specificity")
                    }
                    judgments.append(
                        Judgment(
                            annotator_id=f"w{(i + a) % 5}",
                            unit_id=f"p{i}",
                            question="spot",
                            conversation_id=cid,
                            value={"segment_exchanges": k, "entity0": labels[0], "entity1": labels[1], **feats},
                            elapsed_s=float(20 + rng.random() * 20),
                        )
                    )
    return Dataset(method="spot-the-bot", conversations=convs, judgments=judgments)


@cache
def _synthetic_report():
    return analyze_spot_the_bot(
        synthetic_stb(), n_bootstrap=200, seed=0, survival=False, stability_sizes=(2, 5, 50), stability_repeats=10
    )


def test_stb_synthetic_stability_features_tts():
    rep = _synthetic_report()
    json.dumps(rep, allow_nan=False)
    st = rep["stability"]
    assert st["conversations_per_pair"] == {"min": 10, "max": 10}
    assert [r["k"] for r in st["subsample"]] == [2, 5, 10]  # 50 capped at the 10 available
    assert st["reference"] == rep["clusters"]
    full = st["subsample"][-1]
    assert full["reference_share"] == 1.0 and full["n_rankings"] == 1  # all the data: always the same
    assert all(0 <= r["reference_share"] <= r["modal_share"] <= 1 for r in st["subsample"])
    assert st["leave_one_out"] and "all_same" in st

    fw = {s["name"]: s for s in rep["feature_win_rates"]["systems"]}
    for f in ("fluency", "sensibleness", "specificity"):
        assert fw["A"][f] > 0.9 and fw["C"][f] < 0.1  # the better entity wins 70%, ties otherwise
    pw = rep["feature_win_rates"]["pairwise"]
    assert len(pw) == 3 * 6
    ab = next(r for r in pw if r["feature"] == "fluency" and r["a"] == "A" and r["b"] == "B")
    assert ab["losses"] == 0 and ab["wins"] + ab["draws"] == 40

    tts = {(e["a"], e["b"]): e for e in rep["time_to_significance"]}
    assert set(tts) == {("A", "B"), ("A", "C"), ("B", "C")}  # a = the winner of the pair
    assert tts["A", "C"]["n_needed"] < tts["A", "B"]["n_needed"]
    for e in tts.values():
        assert e["hours_needed"] > 0 and e["n_needed_sim"] is not None
        assert {"n", "power", "hours", "p_significant"} <= set(e["curve"][0])
        ps = [p["p_significant"] for p in e["curve"]]
        assert ps[0] == 0.0 and max(ps) >= 0.8
    assert "automatic_metrics" not in rep  # no references


def test_stb_report_carries_automatic_metrics_with_references():
    rep = analyze_spot_the_bot(
        synthetic_stb(n_per_pair=4, references=True), n_bootstrap=50, survival=False, stability=False, tts=False
    )
    am_ = rep["automatic_metrics"]
    assert {s["name"] for s in am_["systems"]} == {"A", "B", "C"}
    corr = {c["metric"]: c for c in am_["correlations"]}
    assert corr["bleu1"]["pearson"] > 0.9 and corr["rouge_l"]["spearman"] == pytest.approx(1.0)


def test_metric_report_ranks_systems_and_none_without_references():
    ds = synthetic_stb(n_per_pair=3, references=True)
    human = {"systems": [{"name": "A", "score": 0.9}, {"name": "B", "score": 0.5}, {"name": "C", "score": 0.1}]}
    rep = metric_report(ds, human)
    by = {s["name"]: s for s in rep["systems"]}
    assert [s["name"] for s in rep["systems"]] == ["A", "B", "C"]
    for m in ("bleu1", "bleu4", "rouge_l", "gleu"):
        assert by["A"][m] > by["B"][m] > by["C"][m]
    corr = {c["metric"]: c for c in rep["correlations"]}
    for m in ("bleu1", "bleu4", "rouge_l", "gleu"):
        assert corr[m]["pearson"] > 0.9 and corr[m]["spearman"] == pytest.approx(1.0) and corr[m]["n"] == 3
    if "meteor" in by["A"]:
        assert corr["meteor"]["pearson"] > 0 and rep["note"] is None
    assert metric_report(synthetic_stb(n_per_pair=2), human) is None


def test_metric_report_without_wordnet_keeps_other_metrics(monkeypatch):
    def missing():
        raise wm.WordNetUnavailable("no WordNet here")

    monkeypatch.setattr(am.wm, "wordnet_reader", missing)
    ds = synthetic_stb(n_per_pair=2, references=True)
    rep = metric_report(ds, {"systems": [{"name": s, "score": v} for s, v in STRENGTH.items()]})
    assert "meteor" not in rep["systems"][0] and "bleu4" in rep["systems"][0]
    assert "METEOR" in rep["note"] and "no WordNet here" in rep["note"]
    assert {c["metric"] for c in rep["correlations"]} == {"bleu1", "bleu4", "rouge_l", "gleu"}


def test_simulated_mann_whitney_power_matches_scipy():
    rng = np.random.default_rng(3)
    x, y = np.round(rng.normal(0.4, 1, 60), 1), np.round(rng.normal(0, 1, 70), 1)  # rounded: ties
    n = 25
    ours = simulate_mann_whitney_power(x, y, [n], n_sim=3000, seed=1)[0]
    hits = [
        stats.mannwhitneyu(rng.choice(x, n), rng.choice(y, n), alternative="greater").pvalue < 0.05 for _ in range(1500)
    ]
    assert ours == pytest.approx(np.mean(hits), abs=0.05)
    r = mann_whitney_time_to_significance(x, y, seconds_per_judgment=360)
    assert r["n_needed"] is not None and r["hours_needed"] == pytest.approx(2 * r["n_needed"] * 360 / 3600)
    same = mann_whitney_time_to_significance(x, x, n_max=200)
    assert same["n_needed"] is None


@cache
def _stb_published(folder: str, domain: str):
    from dialeval.formats.spot_the_bot import PAPER_NAMES, read_spot_the_bot

    return annotation_frame(read_spot_the_bot(folder, domain, rename=PAPER_NAMES))


def test_dailydialog_stability_grows_with_k(shared_data):
    frame = _stb_published(str(shared_data("spot-the-bot")), "dailydialog")
    bots = frame[frame["bot_bot"]].reset_index(drop=True)
    st = subsample_stability_report(bots, sizes=(3, 10, 44), n_repeats=30, n_bootstrap=200, seed=0)
    assert st["conversations_per_pair"] == {"min": 45, "max": 45}
    share = {r["k"]: r["reference_share"] for r in st["subsample"]}
    # three conversations per pair almost never give the full-data clustering; 44 of 45 often do
    assert share[44] >= share[10] and share[44] > share[3] + 0.2


def test_dailydialog_time_to_significance(shared_data):
    frame = _stb_published(str(shared_data("spot-the-bot")), "dailydialog")
    tts = {(e["a"], e["b"]): e for e in stb_tts(frame)}
    assert len(tts) == 6
    # the clearest pair (GPT over the weak DR) needs the fewest annotations
    assert min(tts.values(), key=lambda e: e["n_needed"])["b"] == "DR"
    assert tts["GPT", "DR"]["n_needed"] < tts["GPT", "S2"]["n_needed"]
    for e in tts.values():
        # resampling ~ the exact binomial (the discrete rejection region makes small n jumpy)
        assert 0.6 < e["n_needed_sim"] / e["n_needed"] < 1.6
        assert 30 < e["seconds_per_judgment"] < 120
    json.dumps(list(tts.values()), allow_nan=False)


def test_direct_assessment_time_to_significance(shared_data):
    from dialeval.formats.dialogue_eval import read_dialogue_eval_csv

    ds = read_dialogue_eval_csv(str(shared_data("dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv")))
    tts = da_tts(direct_assessment_frames(ds))
    assert len(tts) == 45  # 10 ordinary systems
    by = {(e["a"], e["b"]): e for e in tts}
    # far apart (A vs E) needs far fewer conversations than neighbours (A vs B, p = 0.047 in the data)
    assert by["biencoder", "lan_model"]["n_needed"] < 20 < 100 < by["biencoder", "polyencoder"]["n_needed"]
    assert by["biencoder", "polyencoder"]["judgments_needed"] == 2 * by["biencoder", "polyencoder"]["n_needed"]
    e = by["biencoder", "polyencoder"]
    assert e["overhead"] > 1.5  # QC conversations and failing annotators are paid for
    assert e["hours_needed"] == pytest.approx(e["judgments_needed"] * e["seconds_per_judgment"] / 3600)
    assert {"hours", "p_significant"} <= set(e["curve"][0])
    json.dumps(tts, allow_nan=False)
