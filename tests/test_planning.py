"""Study planning (dialeval.planning)."""

import json

import numpy as np
import pytest

from dialeval.planning import DEFAULT_SECONDS, PlanningError, parse_expectation, plan_from_pilot, plan_study


def test_parse_expectation():
    assert parse_expectation("bot-a>bot-b:0.60") == (("bot-a", "bot-b"), 0.6)
    assert parse_expectation(" x > y : 65% ") == (("x", "y"), 0.65)
    for bad in ("bot-a-bot-b:0.6", "a>b", "a>b:1.5", "a>a:0.6", "a>b:0", "a>b:abc", 3):
        with pytest.raises(PlanningError):
            parse_expectation(bad)
    with pytest.raises(PlanningError, match="twice"):
        plan_study("acute", ["a>b:0.6", "b>a:0.6"])
    with pytest.raises(PlanningError, match="unknown method"):
        plan_study("likert", ["a>b:0.6"])


def _check_curve(pair, n_sim, tol_sd=4.5):
    for pt in pair["curve"]:
        se = np.sqrt(max(pt["power"] * (1 - pt["power"]), 0.01) / n_sim)
        assert abs(pt["power"] - pt["power_sim"]) < tol_sd * se + 0.01, pt


def test_binomial_closed_form_matches_simulation():
    plan = plan_study("acute", {("a", "b"): 0.6}, n_sim=2000, seed=1)
    pair = plan["pairs"][0]
    assert pair["n_needed"] == 199  # exact binomial power, as stats.power computes it
    assert abs(pair["n_needed_sim"] - pair["n_needed"]) <= 0.1 * pair["n_needed"]
    _check_curve(pair, 2000)
    assert pair["hours_needed"] == pytest.approx(199 * DEFAULT_SECONDS["acute"] / 3600)
    assert pair["sequential"]["p_decided_by_cap"] > 0.99
    json.dumps(plan)  # JSON-ready


def test_ttest_closed_form_matches_simulation_and_effect():
    plan = plan_study("single-model", ["a>b:0.62"], n_sim=2000, sd=1.1, seed=2)
    pair = plan["pairs"][0]
    d = pair["effect"]["cohens_d"]
    assert d == pytest.approx(np.sqrt(2) * 0.3055, rel=1e-3)
    assert pair["effect"]["likert_difference"] == pytest.approx(1.1 * d)
    assert abs(pair["n_needed_sim"] - pair["n_needed"]) <= 0.12 * pair["n_needed"]
    _check_curve(pair, 2000)
    assert pair["judgments_needed"] == 2 * pair["n_needed"]


def test_other_methods_and_onboarding():
    stb = plan_study("spot-the-bot", ["a>b:0.6"], draw_share=0.5, n_sim=500)
    acute = plan_study("acute", ["a>b:0.6"], n_sim=500, onboarding_seconds=120, seconds_per_judgment=60)
    assert stb["pairs"][0]["n_needed"] == pytest.approx(2 * acute["pairs"][0]["n_needed"], abs=2)
    assert acute["pairs"][0]["hours_needed"] == pytest.approx(199 * 180 / 3600)
    da = plan_study("direct-assessment", ["a>b:0.65"], n_sim=300)
    assert da["pairs"][0]["n_needed_sim"] is not None
    assert abs(da["pairs"][0]["n_needed_sim"] - da["pairs"][0]["n_needed"]) <= 0.25 * da["pairs"][0]["n_needed"]


def test_ranking_of_three_bots():
    plan = plan_study("pairwise-turn", ["a>b:0.65", "b>c:0.65"], n_sim=400, seed=3)
    rk = plan["ranking"]
    assert rk["bots_best_first"] == ["a", "b", "c"]
    assert rk["n_needed"] > plan["pairs"][0]["n_needed"]  # three correct decisions at alpha/3
    curve = [pt["p_correct_ranking"] for pt in rk["curve"]]
    assert curve == sorted(curve)
    assert rk["adaptive"]["expected_judgments"] < rk["judgments_needed"]
    sm = plan_study("single-model", ["a>b:0.65", "b>c:0.65"], n_sim=400)
    assert sm["ranking"]["unit"] == "conversations per bot"
    assert plan_study("acute", ["a>b:0.6", "c>d:0.6"], n_sim=200)["ranking"].get("error")


def test_plan_from_pilot():
    report = {
        "method": "acute",
        "seconds_per_judgment": 50.0,
        "onboarding_seconds": 30.0,
        "matchups": [{"a": "x", "b": "y", "win_rate_a": 0.4, "n": 50}],
    }
    plan = plan_from_pilot(report, n_sim=300)
    assert plan["pairs"][0]["a"] == "y" and plan["pairs"][0]["win_rate"] == pytest.approx(0.6)
    assert plan["seconds_per_judgment"] == 50.0 and plan["onboarding_seconds"] == 30.0
    sm = {
        "method": "single-model",
        "systems": [
            {"name": "p", "likert_mean": {"mean": 4.2, "sd": 1.0}},
            {"name": "q", "likert_mean": {"mean": 3.9, "sd": 1.0}},
        ],
    }
    plan = plan_from_pilot(sm, n_sim=300)
    assert plan["pairs"][0]["effect"]["cohens_d"] == pytest.approx(0.3, rel=1e-6)
    with pytest.raises(PlanningError):
        plan_from_pilot({"method": "acute", "matchups": []})
    with pytest.raises(PlanningError):
        plan_from_pilot({"no": "method"})
