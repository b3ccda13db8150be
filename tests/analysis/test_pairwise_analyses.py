"""Analysis functions on small synthetic Datasets (ACUTE, PW-Turn, SM-Turn/SM-Dialog) and text stats."""

import json
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from dialeval.methods.acute.analysis import analyze_acute
from dialeval.methods.pairwise_turn.analysis import analyze_pairwise_turn
from dialeval.methods.single_model.analysis import analyze_single_model
from dialeval.records import SM_QUALITIES, Annotator, Conversation, Dataset, Judgment, Turn, Unit
from dialeval.stats.text import justification_lengths, top_tfidf_terms

T0 = datetime(2024, 5, 1, 9, 0)


def _conv(cid, bot):
    return Conversation(
        id=cid, bots=[bot], turns=[Turn("human", "Hi!"), Turn("bot", "hello", bot=bot)], source="self-chat"
    )


def acute_dataset():
    """strong beats weak in 8 of 10, mid vs weak 3:2, strong vs mid 4:1; one A/A unit; one onboarding; one filtered."""
    ds = Dataset(method="acute")
    for b in ("strong", "mid", "weak"):
        for i in range(10):
            ds.conversations.append(_conv(f"{b}{i}", b))
    annotators = []

    def add(a_bot, b_bot, winner_first, k, question="engaging", meta=None, annot=None, conv=(0, 1)):
        uid = f"u{len(ds.units)}"
        ca, cb = f"{a_bot}{conv[0] % 10}", f"{b_bot}{conv[1] % 10}"
        ds.units.append(
            Unit(id=uid, kind="acute", conversation_ids=[ca, cb], payload={"speakers_to_eval": [a_bot, b_bot]})
        )
        aid = annot or f"w{len(annotators)}"
        annotators.append(aid)
        w, l_ = (ca, cb) if winner_first else (cb, ca)
        ds.judgments.append(
            Judgment(
                annotator_id=aid,
                unit_id=uid,
                question=question,
                value={"winner": w, "loser": l_},
                justification="more engaging and detailed" if winner_first else "shorter",
                elapsed_s=60.0,
                created_at=T0 + timedelta(minutes=k),
                shown_order=[ca, cb],
                meta=meta or {},
            )
        )

    k = 0
    for i in range(10):
        add("strong", "weak", i < 8, k, conv=(i, i))
        k += 1
    for i in range(5):
        add("mid", "weak", i < 3, k, conv=(i, i + 1))
        k += 1
    for i in range(5):
        add("strong", "mid", i < 4, k, conv=(i, i + 2))
        k += 1
    add("mid", "mid", True, k, conv=(0, 1))
    k += 1
    add("mid", "mid", False, k, conv=(1, 2))
    k += 1
    # a second annotation on the first strong-vs-weak pair (agrees)
    add("strong", "weak", True, k, conv=(0, 0))
    k += 1
    # onboarding judgment (would favour weak) and a filtered annotator (would favour weak)
    add("weak", "strong", True, k, meta={"onboarding": True}, annot="w_onb")
    k += 1
    add("weak", "strong", True, k, annot="bad")
    k += 1
    ds.annotators = [Annotator(id=a) for a in sorted(set(annotators)) if a != "bad"] + [
        Annotator(id="bad", meta={"filtered": True})
    ]
    return ds


def test_analyze_acute():
    r = analyze_acute(acute_dataset(), n_boot=200)
    json.dumps(r, allow_nan=False)  # JSON-ready, no NaN
    assert r["method"] == "acute" and r["question"] == "engaging"
    assert r["excluded"]["onboarding_judgments"] == 1
    assert r["excluded"]["filtered_judgments"] == 1
    assert [s["name"] for s in r["systems"]] == ["strong", "mid", "weak"]
    strong = r["systems"][0]
    assert strong["score"] == pytest.approx((9 / 11 + 4 / 5) / 2)
    m = {(x["a"], x["b"]): x for x in r["matchups"]}
    sw = m[("strong", "weak")]
    assert (sw["wins_a"], sw["wins_b"], sw["win_rate_a"]) == (9, 2, pytest.approx(9 / 11))
    assert sw["p"] == pytest.approx(0.06542968750)
    assert m[("mid", "weak")]["wins_a"] == 3
    assert r["grid"]["bots"] == ["strong", "mid", "weak"]
    assert r["grid"]["rates"][0][2] == pytest.approx(9 / 11)
    assert next(x["name"] for x in r["leaderboard"]) == "strong"
    assert r["agreement"]["items"] == 1 and r["agreement"]["majority"] == 1.0
    assert r["aa_test"]["n"] == 2 and r["aa_test"]["rate"] == 0.5
    assert r["justifications"]["top_terms"]["strong"][0][0] in {"engaging", "detailed"}
    tts = {(x["a"], x["b"]): x for x in r["time_to_significance"]}
    assert tts[("strong", "weak")]["seconds_per_judgment"] == 60.0
    assert tts[("strong", "weak")]["n_needed"] is not None
    assert r["question_agreement"][0]["question"] == "engaging"


def pw_turn_dataset(n_conv=12, p_a=0.75, seed=0):
    rng = np.random.default_rng(seed)
    ds = Dataset(method="pairwise-turn")
    k = 0
    for c in range(n_conv):
        cid = f"c{c}"
        ds.conversations.append(Conversation(id=cid, bots=["A", "B"], turns=[], source="live"))
        ds.units.append(Unit(id=f"u{c}", kind="pairwise-turn", conversation_ids=[cid]))
        ds.annotators.append(Annotator(id=f"w{c}"))
        for t in range(1, 7):
            # turn 1 is a coin flip for everyone; later turns favour A
            a_wins = rng.random() < (0.5 if t == 1 else p_a)
            chosen, other = ("A", "B") if a_wins else ("B", "A")
            ds.judgments.append(
                Judgment(
                    annotator_id=f"w{c}",
                    unit_id=f"u{c}",
                    conversation_id=cid,
                    question="preference",
                    value={"turn": t, "chosen": chosen, "other": other},
                    justification="flows well" if a_wins else "random topic paris",
                    elapsed_s=120.0,
                    created_at=T0 + timedelta(minutes=k),
                )
            )
            k += 1
    ds.judgments.append(
        Judgment(
            annotator_id="w0",
            unit_id="onb",
            question="preference",
            value={"turn": 1, "chosen": "B", "other": "A"},
            elapsed_s=300.0,
            meta={"onboarding": True},
        )
    )
    return ds


def test_analyze_pairwise_turn_matches_direct_counts():
    ds = pw_turn_dataset()
    r = analyze_pairwise_turn(ds, n_boot=100)
    json.dumps(r, allow_nan=False)
    rows = pd.DataFrame([{**j.value, "conversation": j.conversation_id} for j in ds.judgments if not j.meta])
    rng_rows = rows[rows.turn.between(2, 6)]
    wa = int((rng_rows.chosen == "A").sum())
    m = r["matchups"][0]
    assert (m["a"], m["b"]) == ("A", "B")
    assert m["wins_a"] == wa and m["n"] == len(rng_rows)
    assert m["lin"] == pytest.approx(wa / len(rng_rows))
    per = rng_rows.assign(x=rng_rows.chosen == "A").groupby("conversation")["x"].agg(["sum", "count"])
    x, y = per["sum"], per["count"] - per["sum"]
    assert m["sqr"] == pytest.approx(float((x**2 / (x**2 + y**2)).mean()))
    assert m["wta"] == pytest.approx(float((x > y).mean() + 0.5 * (x == y).mean()))
    assert m["all_turns"]["n"] == 72
    assert [p["turn"] for p in m["per_turn"]] == [1, 2, 3, 4, 5, 6]
    # turns 2-6 take 10 min per conversation: 120 min => 2 full chunks of 45 min, the partial third is dropped
    assert m["variability"]["chunks"] == 2 and m["variability"]["std"] is not None
    assert r["systems"][0]["name"] == "A" and r["systems"][0]["score"] == pytest.approx(m["lin"])
    assert r["excluded"]["onboarding_judgments"] == 1 and r["onboarding_seconds"] == 300.0
    tts = r["time_to_significance"][0]
    assert tts["onboarding_seconds"] == 300.0 and tts["judgments_per_annotator"] == 5.0
    assert r["leaderboard"][0]["name"] == "A"


def sm_dataset(seed=0):
    rng = np.random.default_rng(seed)
    ds = Dataset(method="single-model")
    for bot, p_mark, lik in (("good", 0.7, [4, 5, 5, 4]), ("bad", 0.3, [2, 3, 2, 1])):
        for c in range(16):
            cid = f"{bot}{c}"
            ds.conversations.append(Conversation(id=cid, bots=[bot], turns=[], source="live"))
            ds.units.append(Unit(id=f"u_{cid}", kind="single-model", conversation_ids=[cid]))
            for t in range(1, 7):
                ds.judgments.append(
                    Judgment(
                        annotator_id=f"w{c}",
                        unit_id=f"u_{cid}",
                        conversation_id=cid,
                        question="turn",
                        value={"turn": t, **{q: bool(rng.random() < p_mark) for q in SM_QUALITIES}},
                        elapsed_s=40.0,
                    )
                )
            ds.judgments.append(
                Judgment(
                    annotator_id=f"w{c}",
                    unit_id=f"u_{cid}",
                    conversation_id=cid,
                    question="dialog",
                    value={q: int(lik[(c + i) % 4]) for i, q in enumerate(SM_QUALITIES)},
                    elapsed_s=60.0,
                )
            )
    return ds


def test_analyze_single_model():
    r = analyze_single_model(sm_dataset(), n_boot=2000)
    json.dumps(r, allow_nan=False)
    assert [s["name"] for s in r["systems"]] == ["good", "bad"]
    good = r["systems"][0]
    assert good["n"] == 16 and good["rated_turns"] == 96
    assert good["score"] == pytest.approx(4.5)
    assert good["likert"]["engaging"]["mean"] == pytest.approx(4.5)
    assert good["success_rate_subset"]["engaging"] > r["systems"][1]["success_rate_subset"]["engaging"]
    tt = {(x["metric"]): x for x in r["ttests"]}
    assert tt["likert_mean"]["p"] < 0.001 and tt["likert_mean"]["stars"] == "***"
    ewr = {(x["metric"], x["quality"]): x for x in r["effective_win_rates"]}
    assert ewr[("sm_dialog", "engaging")]["exact"] == 1.0  # every good Likert beats every bad one
    assert ewr[("sm_dialog", "engaging")]["a"] == "good" and ewr[("sm_dialog", "engaging")]["win_rate"] == 1.0
    assert 0.5 < ewr[("sm_turn_wta", "mean")]["exact"] <= 1.0
    assert len(r["ols"]["all"]["coefficients"]) == 6
    weights = {(c["weight_turn"], c["weight_dialog"]) for c in r["combined"]}
    assert (1, 5) in weights
    metrics = {x["metric"] for x in r["time_to_significance"]}
    assert {"sm_dialog", "sm_turn", "combined_1:5"} <= metrics
    dialog_tts = next(x for x in r["time_to_significance"] if x["metric"] == "sm_dialog")
    assert dialog_tts["seconds_per_judgment"] == pytest.approx(6 * 40 + 60)


def test_empty_datasets():
    assert analyze_acute(Dataset(method="acute"))["systems"] == []
    assert analyze_pairwise_turn(Dataset(method="pairwise-turn"))["matchups"] == []
    assert analyze_single_model(Dataset(method="single-model"))["systems"] == []


def test_text_stats():
    df = pd.DataFrame(
        {
            "bot": ["A", "A", "B", "B"],
            "text": [
                "very detailed information",
                "the information is detailed",
                "it flows",
                "flows naturally and personal",
            ],
        }
    )
    lengths = justification_lengths(df).set_index("bot")
    assert lengths.loc["A", "mean_words"] == pytest.approx(3.5)
    assert lengths.loc["B", "mean_words"] == pytest.approx(3.0)
    terms = top_tfidf_terms(df, k=2)
    assert {t for t, _ in terms["A"]} == {"information", "detailed"}
    assert terms["B"][0][0] == "flows"
    assert "the" not in {t for t, _ in terms["A"]}


def test_the_annotator_model_follows_the_studys_bootstrap_rounds():
    """ACUTE's annotator_model section (Crowd-BT boards, Dawid-Skene/MACE) takes the study's n_boot,
    capped at its own defaults (200 for the boards, 40 for the label models): a quick analysis
    (the conformance run's n_boot 20) is quick there too."""
    quick = analyze_acute(acute_dataset(), n_boot=10)["annotator_model"]
    full = analyze_acute(acute_dataset(), n_boot=1000)["annotator_model"]
    assert quick["labels"]["bootstrap_rounds"] == 10
    assert full["labels"]["bootstrap_rounds"] == 40
    bounds = [(r["ci_low"], r["ci_high"]) for r in quick["pairwise"]["leaderboard"]]
    assert bounds != [(r["ci_low"], r["ci_high"]) for r in full["pairwise"]["leaderboard"]]
    assert [r["rating"] for r in quick["pairwise"]["leaderboard"]] == [
        r["rating"] for r in full["pairwise"]["leaderboard"]
    ]
