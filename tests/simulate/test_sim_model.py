"""The simulated annotator model: pure functions with a seeded RNG (docs/simulated-crowd.md)."""

from __future__ import annotations

import random
import statistics

import pytest

from dialeval.corpus import load_corpus
from dialeval.quality import filters
from dialeval.records import DA_CRITERIA, DA_NEGATIVE
from dialeval.simulate import model
from dialeval.simulate.model import SimTruth


def share(n, fn):
    return sum(fn() for _ in range(n)) / n


def test_pairwise_choice_follows_the_logistic_model():
    rng = random.Random(1)
    # strength gap 1, temperature 0.5: P(A) = sigmoid(2) = 0.881
    p = share(5000, lambda: model.choose_pairwise(1.0, 0.0, 0.0, 0.5, rng) == 0)
    assert p == pytest.approx(model.sigmoid(2.0), abs=0.02)
    # equal bots: only the position bias decides (left favoured by 0.5 logit -> 0.622)
    p = share(5000, lambda: model.choose_pairwise(0.3, 0.3, 0.5, 0.7, rng) == 0)
    assert p == pytest.approx(model.sigmoid(0.5), abs=0.02)
    p = share(5000, lambda: model.choose_pairwise(0.3, 0.3, 0.0, 0.7, rng) == 0)
    assert p == pytest.approx(0.5, abs=0.02)


def test_likert_and_slider_use_strength_lenience_and_stay_on_the_scale():
    rng = random.Random(2)
    good = [model.likert(1.0, 0.0, 0.5, rng) for _ in range(2000)]
    weak = [model.likert(-1.0, 0.0, 0.5, rng) for _ in range(2000)]
    lenient_weak = [model.likert(-1.0, 1.0, 0.5, rng) for _ in range(2000)]
    assert set(good) | set(weak) <= {1, 2, 3, 4, 5}
    assert statistics.mean(good) == pytest.approx(4.0, abs=0.1)
    assert statistics.mean(weak) == pytest.approx(2.0, abs=0.1)
    assert statistics.mean(lenient_weak) == pytest.approx(3.0, abs=0.1)  # lenience +1 point
    sliders = [model.slider(0.5, -0.5, 0.6, rng) for _ in range(2000)]
    assert min(sliders) >= 0 and max(sliders) <= 100
    assert statistics.mean(sliders) == pytest.approx(50, abs=1.5)
    assert statistics.mean(model.slider(1.0, 0.0, 0.6, rng) for _ in range(2000)) == pytest.approx(70, abs=1.5)


def test_spot_the_bot_weak_bots_and_long_segments_are_spotted_more():
    rng = random.Random(3)

    def spotted(strength, k):
        return share(4000, lambda: model.stb_label(True, strength, k, rng) == "bot")

    assert spotted(-1.0, 2) > spotted(1.0, 2) + 0.2
    assert spotted(0.0, 5) > spotted(0.0, 2) + 0.1
    # exact: 1 - (1 - h)^k
    h = model.detection_per_exchange(0.0)
    assert spotted(0.0, 3) == pytest.approx(1 - (1 - h) ** 3, abs=0.025)
    humans = [model.stb_label(False, 2.0, 3, rng) for _ in range(4000)]
    assert humans.count("bot") / len(humans) == pytest.approx(0.08, abs=0.02)
    careless = [model.stb_label(True, -2.0, 5, rng, careless=True) for _ in range(3000)]
    assert all(careless.count(x) / 3000 == pytest.approx(1 / 3, abs=0.04) for x in ("human", "bot", "unsure"))


def test_da_ratings_qc_bot_is_rated_low_by_careful_annotators_only():
    rng = random.Random(4)

    def positive_mean(ratings):
        return statistics.mean(r[c] for r in ratings for c in DA_CRITERIA if c not in DA_NEGATIVE)

    ordinary = [model.da_ratings(0.0, False, rng=rng) for _ in range(300)]
    qc = [model.da_ratings(0.0, True, rng=rng) for _ in range(300)]
    assert set(ordinary[0]) == set(DA_CRITERIA)
    assert positive_mean(qc) < 10
    assert positive_mean(ordinary) > 40
    # negatives are raw slider positions: a weak bot is judged robotic
    assert statistics.mean(r["robotic"] for r in qc) > 90
    careless_qc = [model.da_ratings(0.0, True, careless=True, rng=rng) for _ in range(300)]
    assert positive_mean(careless_qc) == pytest.approx(50, abs=4)


def test_careful_chat_messages_pass_the_worker_filters_and_careless_ones_are_caught():
    rng = random.Random(5)
    corpus = load_corpus()
    for _ in range(20):
        used: list[str] = []
        for _ in range(6):
            used.append(model.chat_message(rng, corpus, False, used=set(used)))
        assert filters.check_messages(used) == [], used
    expected = {"short": filters.SHORT_MESSAGES, "caps": filters.ALL_CAPS, "repeat": filters.REPEATS_FIRST}
    for style, reason in expected.items():
        for _ in range(10):
            msgs: list[str] = []
            for _ in range(5):
                msgs.append(model.chat_message(rng, corpus, True, style=style, first=msgs[0] if msgs else None))
            assert reason in filters.check_messages(msgs), (style, msgs)


def test_justifications_careless_never_give_a_reason():
    rng = random.Random(6)
    careful = [model.justification(rng, False) for _ in range(5)]
    careless = [model.justification(rng, True) for _ in range(5)]
    assert not filters.never_gives_reason(careful)
    assert all(len(j.split()) >= 2 for j in careful + careless)  # both pass the page's 2-word minimum
    assert filters.never_gives_reason(careless)


def test_truth_defaults_to_the_bot_order_and_round_trips(tmp_path):
    truth = SimTruth.from_bots(["a", "b", "c", "qc"], qc_bots=["qc"])
    assert truth.strengths == {"a": 0.6, "b": 0.0, "c": -0.6}
    assert truth.order() == ["a", "b", "c"]
    assert truth.strength("human") == model.HUMAN_STRENGTH
    assert truth.strength("qc") == model.QC_STRENGTH
    path = truth.save(tmp_path)
    assert path == tmp_path / "simulation" / "truth.json"
    assert SimTruth.load(tmp_path) == truth
    given = SimTruth.from_bots(["a", "b"], {"a": -1.0, "b": 2.0})
    assert given.order() == ["b", "a"]
    with pytest.raises(ValueError):
        SimTruth.from_bots(["a", "b"], {"a": 1.0})


def test_seconds_are_lognormal_around_the_method_mean():
    rng = random.Random(7)
    xs = [model.seconds("acute", rng) for _ in range(20000)]
    assert statistics.mean(xs) == pytest.approx(model.seconds_table()["acute"], rel=0.05)
    assert min(xs) > 0
    fast = [model.seconds("acute", rng, speed=0.33) for _ in range(5000)]
    assert statistics.mean(fast) < 0.4 * statistics.mean(xs)


def test_profiles_are_reproducible_and_varied():
    a = model.sample_profile(random.Random(8), "x", careless=False)
    b = model.sample_profile(random.Random(8), "x", careless=False)
    assert a == b
    profiles = [model.sample_profile(random.Random(i), str(i), careless=i % 2 == 0) for i in range(200)]
    assert {p.platform for p in profiles} == {"volunteer", "prolific", "link"}
    assert {p.careless_style for p in profiles} == set(model.CARELESS_STYLES)
    assert statistics.mean(p.speed for p in profiles if p.careless) < statistics.mean(
        p.speed for p in profiles if not p.careless
    )
