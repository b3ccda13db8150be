"""Tie models (stats/ties.py) and the data-dropping robustness audit (stats/robustness.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dialeval.stats.bradley_terry import aggregate_votes, fit_bt
from dialeval.stats.robustness import votes_to_reverse
from dialeval.stats.ties import fit_tie_model, predicted_tie_rates

THETA = np.array([-0.9, -0.4, 0.0, 0.3, 1.0])
THETA = THETA - THETA.mean()


def simulate(model: str, tie_parameter: float, votes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts drawn from the published likelihoods (Davidson 1970; Rao & Kupper 1967), written
    here from their formulas, independently of stats/ties.py."""
    rng = np.random.default_rng(seed)
    K = len(THETA)
    W, T = np.zeros((K, K)), np.zeros((K, K))
    a = rng.integers(0, K, votes)
    b = (a + rng.integers(1, K, votes)) % K
    pi_a, pi_b = np.exp(THETA[a]), np.exp(THETA[b])
    if model == "davidson":
        z = pi_a + pi_b + tie_parameter * np.sqrt(pi_a * pi_b)
        p_win, p_loss = pi_a / z, pi_b / z
    else:
        p_win = pi_a / (pi_a + tie_parameter * pi_b)
        p_loss = pi_b / (pi_b + tie_parameter * pi_a)
    u = rng.random(votes)
    for x, y, w, lo, draw in zip(a, b, p_win, p_loss, u):
        if draw < w:
            W[x, y] += 1
        elif draw < w + lo:
            W[y, x] += 1
        else:
            T[x, y] += 1
            T[y, x] += 1
    return W, T


@pytest.mark.parametrize(("model", "planted"), [("davidson", 0.7), ("rao-kupper", 1.8)])
def test_tie_models_recover_simulated_parameters(model, planted):
    W, T = simulate(model, planted, 40_000, seed=3)
    fit = fit_tie_model(W, T, model)
    se = np.sqrt(np.diag(fit.covariance))
    assert np.all(np.abs(fit.theta - THETA) < 4 * se), (fit.theta, THETA, se)
    assert abs(fit.tie_parameter - planted) < 0.06 * planted
    # predicted tie rates per pair match the observed ones (40k votes: ~4k per pair)
    battles = W + W.T + T
    observed = np.where(battles > 0, T / np.maximum(battles, 1), 0)
    predicted = predicted_tie_rates(fit)
    off = ~np.eye(len(THETA), dtype=bool)
    assert np.abs(predicted - observed)[off].max() < 0.035


def test_tie_model_is_the_maximum_of_the_published_likelihood():
    """The fitted log-likelihood is the formula's value at the fit and no nearby point beats it."""
    W, T = simulate("davidson", 0.5, 5_000, seed=4)
    fit = fit_tie_model(W, T, "davidson")

    def loglik(theta, nu):
        pi = np.exp(theta)
        total = 0.0
        for i in range(len(pi)):
            for j in range(i + 1, len(pi)):
                z = pi[i] + pi[j] + nu * math.sqrt(pi[i] * pi[j])
                total += W[i, j] * math.log(pi[i] / z) + W[j, i] * math.log(pi[j] / z)
                total += T[i, j] * math.log(nu * math.sqrt(pi[i] * pi[j]) / z)
        return total

    best = loglik(fit.theta, fit.tie_parameter)
    assert best == pytest.approx(fit.log_likelihood, abs=1e-3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        nudge = rng.normal(0, 0.01, len(THETA))
        assert loglik(fit.theta + nudge, fit.tie_parameter * math.exp(rng.normal(0, 0.01))) <= best + 1e-6


def test_plain_bt_matches_choix():
    """Ties ignored, our Bradley–Terry equals choix's maximum-likelihood fit (an independent
    implementation, MIT) on the same decisive votes."""
    choix = pytest.importorskip("choix")
    W, _ = simulate("davidson", 0.3, 6_000, seed=5)
    fit = fit_tie_model(W, None, "ignore")
    data = [(i, j) for i in range(len(THETA)) for j in range(len(THETA)) for _ in range(int(W[i, j]))]
    theirs = choix.opt_pairwise(len(THETA), data, alpha=1e-6)
    assert np.allclose(fit.theta, theirs - theirs.mean(), atol=1e-4)


def test_unknown_tie_model_is_named():
    with pytest.raises(ValueError, match="unknown tie model 'bogus'"):
        fit_tie_model(np.ones((2, 2)), None, "bogus")


def _refit_flipped(W, T, i, j, by_cell):
    W, T = W.copy(), T.copy()
    for a, b, kind, k in by_cell:
        if kind == "a":
            W[a, b] -= k
        elif kind == "b":
            W[b, a] -= k
        else:
            T[a, b] -= k
            T[b, a] -= k
    assert (W >= 0).all() and (T >= 0).all()
    theta = fit_bt(W, T)
    return theta[i] <= theta[j]


def test_votes_to_reverse_is_verified_and_tight_on_the_last_vote():
    W, T = simulate("davidson", 0.6, 3_000, seed=6)
    theta = fit_bt(W, T)
    order = np.argsort(-theta)
    i, j = int(order[0]), int(order[1])
    flip = votes_to_reverse(W, T, i, j)
    assert flip.dropped and flip.dropped == sum(k for *_, k in flip.by_cell)
    assert _refit_flipped(W, T, i, j, flip.by_cell)
    # one vote fewer (from the same cells) does not reverse the order
    fewer = [list(c) for c in flip.by_cell]
    fewer[-1][3] -= 1
    assert not _refit_flipped(W, T, i, j, [tuple(c) for c in fewer if c[3] > 0])


def test_a_one_sided_lead_cannot_be_reversed_within_the_limit():
    W = np.array([[0, 100], [0, 0]], float)
    assert votes_to_reverse(W, None, 0, 1, max_share=0.5).dropped is None


def test_audit_on_the_published_arena_votes(shared_data):
    """26,919 crowd votes of Chatbot Arena (Zheng et al. 2023 release): the count the audit gives for
    gpt-4 over claude-v1 is confirmed by refitting without exactly those votes."""
    rows = [json.loads(line) for line in shared_data("arena-judges/human.jsonl").open()]
    import pandas as pd

    names, W, T = aggregate_votes(pd.DataFrame(rows), "model_a", "model_b", "winner")
    i, j = names.index("gpt-4"), names.index("claude-v1")
    flip = votes_to_reverse(W, T, i, j)
    assert flip.votes == 26_919
    assert 50 < flip.dropped < 400, flip.dropped  # 177 when written; a far other count is a change
    assert _refit_flipped(W, T, i, j, flip.by_cell)


def test_the_audit_audits_the_board_it_is_given():
    """Two fits can order two nearly equal systems differently; the audit follows the board the report
    shows (its `board`), so its "first" is the leaderboard's first."""
    from dialeval.analysis.ranking import robustness_audit

    names = ["a", "b", "c"]
    wins = np.array([[0, 10, 12], [10, 0, 12], [3, 3, 0]], dtype=float)  # a and b even
    ties = np.zeros((3, 3))
    theta = np.array([0.0, 1e-9, -1.0])  # b a hair above a
    assert robustness_audit(names, wins, ties, theta)["top"]["first"] == "b"
    audit = robustness_audit(names, wins, ties, theta, board=["a", "b", "c"])
    assert audit["top"]["first"] == "a"
    assert [(p["above"], p["below"]) for p in audit["adjacent"]] == [("a", "b"), ("b", "c")]
