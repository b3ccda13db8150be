"""The annotator models of stats/annotators.py recover simulated reliabilities, and the voter screen
flags a rigging voter and not the honest ones (crowd-kit is too heavy to be even a test dependency:
checked on simulated parameters and hand-computed values instead)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from dialeval.analysis.annotators import cap_prompts, prompt_clusters
from dialeval.stats.annotators import (
    crowd_bt,
    dawid_skene,
    mace,
    majority_vote,
    pair_cells,
    pair_sums,
    screen_votes,
    voter_eprocess,
)


def labelled(seed: int, accuracy: np.ndarray, n_items: int = 300, per_item: int = 5, classes: int = 3):
    """Each annotator gives the true label with probability accuracy[a], else a uniform random label."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, classes, n_items)
    rows = []
    for i in range(n_items):
        for a in rng.choice(len(accuracy), per_item, replace=False):
            knows = rng.random() < accuracy[a]
            rows.append((i, a, truth[i] if knows else rng.integers(0, classes)))
    items, annotators, labels = (np.array(x) for x in zip(*rows))
    return truth, items, annotators, labels


ACCURACY = np.array([0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.9, 0.8, 0.0, 0.0, 0.6, 0.5])  # two spammers


def test_dawid_skene_recovers_accuracies_and_beats_majority():
    truth, i, a, y = labelled(1, ACCURACY)
    fit = dawid_skene(i, a, y, 300, len(ACCURACY), 3)
    expected = ACCURACY + (1 - ACCURACY) / 3  # a random label is right a third of the time
    assert np.max(np.abs(fit.reliability - expected)) < 0.1
    assert spearmanr(fit.reliability, expected).statistic > 0.9
    mv = majority_vote(i, y, 300, 3).argmax(axis=1)
    assert (fit.labels == truth).mean() >= (mv == truth).mean()
    assert (fit.labels == truth).mean() > 0.95


def test_mace_competence_is_the_share_of_known_labels():
    truth, i, a, y = labelled(2, ACCURACY)
    fit = mace(i, a, y, 300, len(ACCURACY), 3)
    assert np.max(np.abs(fit.reliability - ACCURACY)) < 0.12
    assert fit.reliability[8] < 0.15 and fit.reliability[9] < 0.15  # the spammers
    assert (fit.labels == truth).mean() > 0.95


def test_dawid_skene_on_a_case_by_hand():
    """Two items, three annotators agreeing: each item's posterior puts nearly all mass on the
    shared label, and every annotator's estimated accuracy is near 1."""
    fit = dawid_skene([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 1, 0, 0, 0], 2, 3, 2)
    assert list(fit.labels) == [1, 0]
    assert np.all(fit.reliability > 0.95)


def test_crowd_bt_finds_spammers_and_the_order():
    rng = np.random.default_rng(3)
    strength = np.array([1.0, 0.5, 0.0, -0.5, -1.0])
    voters = 30
    spam = np.arange(voters) >= 24  # 20 % answer at random
    n = 4000
    a = rng.integers(0, 5, n)
    b = (a + rng.integers(1, 5, n)) % 5
    v = rng.integers(0, voters, n)
    honest = rng.random(n) < 1 / (1 + np.exp(-(strength[a] - strength[b])))
    score = np.where(spam[v], rng.random(n) < 0.5, honest).astype(float)
    fit = crowd_bt(a, b, score, v, 5, voters)
    assert list(np.argsort(-fit.theta)) == [0, 1, 2, 3, 4]
    assert fit.eta[spam].max() < 0.8 < fit.eta[~spam].min()
    assert abs(fit.eta[spam].mean() - 0.5) < 0.15
    # strengths on the true scale despite the noise the spammers add
    assert abs((fit.theta[0] - fit.theta[4]) - 2.0) < 0.35


def test_eprocess_by_hand():
    """Pair 0, two voters: voter 0 votes outcome 0 twice, voter 1 votes outcome 1 once. For voter 1,
    others' shares with one pseudo-vote each: p(1) = (0 + 1) / (2 + 2) = 1/4, factor 1/(2 * 1/4) = 2.
    For voter 0: p(0) = (0 + 1) / (1 + 2) = 1/3 each time, factor 3/2, product 9/4."""
    e = voter_eprocess([0, 0, 0], [0, 0, 1], [0, 0, 1], 2, n_outcomes=2)
    assert math.isclose(e[0], 9 / 4) and math.isclose(e[1], 2.0)


def _eprocess_one_vote_at_a_time(pairs, outcomes, voters, n_voters, n_outcomes):
    """The e-process as first written, a vote at a time: the reference the column-wise one meets."""
    K = n_outcomes
    totals = np.zeros((max(pairs) + 1, K))
    np.add.at(totals, (pairs, outcomes), 1.0)
    own: dict = {}
    for p_, o_, v_ in zip(pairs, outcomes, voters):
        own.setdefault((int(v_), int(p_)), np.zeros(K))[o_] += 1.0
    log_e, best = np.zeros(n_voters), np.zeros(n_voters)
    for p_, o_, v_ in zip(pairs, outcomes, voters):
        others = totals[p_] - own[(int(v_), int(p_))]
        share = (others[o_] + 1.0) / (others.sum() + K)
        log_e[v_] -= np.log(K * share)
        best[v_] = max(best[v_], log_e[v_])
    return np.exp(best)


@pytest.mark.parametrize("kinds", [2, 3])
def test_eprocess_by_columns_is_the_vote_at_a_time_one_bit_for_bit(kinds):
    rng = np.random.default_rng(kinds)
    n = 20_000
    pairs, outcomes = rng.integers(0, 40, n), rng.integers(0, kinds, n)
    voters = np.minimum(rng.geometric(0.01, n), 700) - 1  # some voters with one vote, some with hundreds
    voters[voters == 5] = 6  # and a voter without votes
    got = voter_eprocess(pairs, outcomes, voters, 700, n_outcomes=kinds)
    assert np.array_equal(got, _eprocess_one_vote_at_a_time(pairs, outcomes, voters, 700, kinds))
    assert got[5] == 1.0 and (got > 1).any()


def test_pair_sums_are_the_sums_of_add_at_bit_for_bit():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 30, 50_000), rng.integers(0, 30, 50_000)
    to_a = rng.random(50_000)
    expected = np.zeros((30, 30))
    np.add.at(expected, (a, b), to_a)
    np.add.at(expected, (b, a), 1.0 - to_a)
    assert np.array_equal(pair_sums(pair_cells(a, b, 30), to_a, 30), expected)


def _crowd_bt_as_first_written(a, b, s, v, n_systems, n_voters, prior=(9.0, 1.0), tol=1e-4):
    """Crowd-BT's EM as first written (np.add.at, P(a beats b) per vote): the reference."""
    from dialeval.stats.annotators import EPS
    from dialeval.stats.bradley_terry import fit_bt

    eta = np.full(n_voters, prior[0] / (prior[0] + prior[1]))
    W = np.zeros((n_systems, n_systems))
    np.add.at(W, (a, b), s)
    np.add.at(W, (b, a), 1.0 - s)
    theta = fit_bt(W)
    for it in range(1, 201):  # noqa: B007 (the count is returned)
        p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
        e = eta[v]
        follow_a = e * p / (e * p + (1 - e) * (1 - p) + EPS)
        follow_b = e * (1 - p) / (e * (1 - p) + (1 - e) * p + EPS)
        to_a = s * follow_a + (1 - s) * (1 - follow_b)
        W = np.zeros((n_systems, n_systems))
        np.add.at(W, (a, b), to_a)
        np.add.at(W, (b, a), 1.0 - to_a)
        agree = np.bincount(v, weights=s * follow_a + (1 - s) * follow_b, minlength=n_voters)
        n_v = np.bincount(v, minlength=n_voters)
        new_eta = (agree + prior[0] - 1 + 1e-3) / (n_v + prior[0] + prior[1] - 2 + 2e-3)
        new_theta = fit_bt(W)
        done = np.abs(new_theta - theta).max() < tol and np.abs(new_eta - eta).max() < 1e-3
        eta, theta = new_eta, new_theta
        if done:
            break
    return theta, eta, W, it


def test_crowd_bt_is_the_em_as_first_written_bit_for_bit():
    rng = np.random.default_rng(3)
    n, k, voters = 60_000, 25, 900
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    s = rng.choice([0.0, 1.0, 0.5], n, p=[0.45, 0.45, 0.1])
    v = rng.integers(0, voters, n)
    fit = crowd_bt(a, b, s, v, k, voters)
    theta, eta, wins, iterations = _crowd_bt_as_first_written(a, b, s, v, k, voters)
    assert np.array_equal(fit.theta, theta) and np.array_equal(fit.eta, eta) and np.array_equal(fit.wins, wins)
    assert fit.iterations == iterations > 3


def test_screen_codes_names_as_their_sorted_order():
    rng = np.random.default_rng(2)
    names = np.array(["zeta", "alpha", "Mu", "beta-2", "beta-10"])
    a, b = names[rng.integers(0, 5, 3000)], names[rng.integers(0, 5, 3000)]
    score, voters = rng.choice([0.0, 0.5, 1.0], 3000), rng.integers(0, 50, 3000)
    by_name = screen_votes(a, b, score, voters, alpha=0.05)
    order = {name: k for k, name in enumerate(sorted(names))}
    by_code = screen_votes(np.vectorize(order.get)(a), np.vectorize(order.get)(b), score, voters, alpha=0.05)
    assert np.array_equal(by_name[0], by_code[0]) and by_name[1:] == by_code[1:]


def test_screen_flags_a_rigger_and_not_honest_voters():
    rng = np.random.default_rng(4)
    strength = {"a": 0.8, "b": 0.0, "c": -0.8}
    names = list(strength)
    rows = []
    for voter in range(40):
        for _ in range(30):
            x, y = rng.choice(3, 2, replace=False)
            s = 1.0 / (1.0 + math.exp(-(strength[names[x]] - strength[names[y]]) / 0.6))
            if voter == 0 and "c" in (names[x], names[y]):  # the rigger: always for c
                won = 1.0 if names[x] == "c" else 0.0
            else:
                won = float(rng.random() < s)
            rows.append((names[x], names[y], won, voter))
    a, b, score, v = (np.array(z) for z in zip(*rows))
    e, threshold, kinds = screen_votes(a, b, score, v, alpha=0.05)
    assert kinds == 2 and threshold == 40 / 0.05
    assert e[0] >= threshold
    assert (e[1:] < threshold).all()


def test_prompt_duplicates_exact_and_near():
    prompts = [
        "What is the capital of France?",
        "what is the   capital of france?",  # exact after folding case and spaces
        "What is the capital of France? Answer briefly please",  # near duplicate
        "Write a poem about the sea and the wind",
        None,
        "What is the capital of France?",
    ]
    clusters = prompt_clusters(prompts, threshold=0.5)
    assert clusters[0] == clusters[1] == clusters[2] == clusters[5] != clusters[3]
    assert clusters[4] is None
    keep, summary = cap_prompts(prompts, cap=2, threshold=0.5)
    assert list(keep) == [True, True, False, True, True, False]
    assert summary["exact_duplicates"] == 2 and summary["near_duplicates"] == 1 and summary["dropped_by_cap"] == 2


def _dawid_skene_as_first_written(i, a, y, n_items, n_annotators, n_classes, max_iter=100, tol=1e-6):
    """Dawid-Skene's EM with np.add.at and per-label reads: the reference of the fast one."""
    T = majority_vote(i, y, n_items, n_classes)
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        prior = (T.sum(axis=0) + 0.01) / (n_items + 0.01 * n_classes)
        conf = np.full((n_annotators, n_classes, n_classes), 0.01)
        for t in range(n_classes):
            np.add.at(conf[:, t, :], (a, y), T[i, t])
        conf /= conf.sum(axis=2, keepdims=True)
        log_t = np.tile(np.log(prior), (n_items, 1))
        np.add.at(log_t, i, np.log(conf)[a, :, y])
        log_t -= log_t.max(axis=1, keepdims=True)
        new = np.exp(log_t)
        new /= new.sum(axis=1, keepdims=True)
        done = np.abs(new - T).max() < tol
        T = new
        if done:
            break
    return T, np.einsum("t,att->a", prior, conf), conf, it


def _mace_as_first_written(i, a, y, n_items, n_annotators, n_classes, max_iter=200, tol=1e-6, restarts=5, seed=0):
    """MACE's EM with np.add.at and per-label reads: the reference of the fast one."""
    from dialeval.stats.annotators import EPS

    rng = np.random.default_rng(seed)
    best = None
    same = np.eye(n_classes)[None, :, :]
    for r in range(max(1, restarts)):
        theta = np.full(n_annotators, 0.8) if r == 0 else rng.uniform(0.5, 0.95, n_annotators)
        xi = (
            np.full((n_annotators, n_classes), 1.0 / n_classes)
            if r == 0
            else rng.dirichlet(np.ones(n_classes), n_annotators)
        )
        it, ll = 0, -np.inf
        for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
            th = theta[:, None, None]
            like_table = th * same + (1.0 - th) * xi[:, :, None]
            log_t = np.zeros((n_items, n_classes))
            np.add.at(log_t, i, np.log(like_table + EPS)[a, y])
            m = log_t.max(axis=1, keepdims=True)
            new_ll = float(np.sum(m[:, 0] + np.log(np.exp(log_t - m).sum(axis=1))))
            T = np.exp(log_t - m)
            T /= T.sum(axis=1, keepdims=True)
            knew = T[i, y] * theta[a] / (like_table[a, y, y] + EPS)
            n_a = np.bincount(a, minlength=n_annotators).astype(float)
            k_a = np.bincount(a, weights=knew, minlength=n_annotators)
            theta = (k_a + 0.5) / (n_a + 1.0)
            spam = np.full((n_annotators, n_classes), 0.5)
            np.add.at(spam, (a, y), 1.0 - knew)
            xi = spam / spam.sum(axis=1, keepdims=True)
            if abs(new_ll - ll) < tol * max(1.0, abs(new_ll)):
                ll = new_ll
                break
            ll = new_ll
        if best is None or ll > best[0]:
            best = (ll, T, theta, xi, it)
    return best[1:]


@pytest.mark.parametrize("seed, classes", [(0, 2), (1, 3), (2, 4), (3, 9)])
def test_label_models_are_the_em_as_first_written_bit_for_bit(seed, classes):
    rng = np.random.default_rng(seed)
    n_items, n_annotators = 3_000, 120
    accuracy = rng.uniform(0.3, 0.95, n_annotators)
    truth = rng.integers(0, classes, n_items)
    i = rng.integers(0, n_items - 40, 12_000)  # the last 40 items have no label
    a = rng.integers(0, n_annotators, len(i))
    y = np.where(rng.random(len(i)) < accuracy[a], truth[i], rng.integers(0, classes, len(i)))
    ds = dawid_skene(i, a, y, n_items, n_annotators, classes)
    T, reliability, conf, iterations = _dawid_skene_as_first_written(i, a, y, n_items, n_annotators, classes)
    assert np.array_equal(ds.posteriors, T) and np.array_equal(ds.reliability, reliability)
    assert np.array_equal(ds.confusion, conf) and ds.iterations == iterations
    ds = dawid_skene(i, a, y, n_items, n_annotators, classes, max_iter=30, tol=1e-4)
    T, *_ = _dawid_skene_as_first_written(i, a, y, n_items, n_annotators, classes, max_iter=30, tol=1e-4)
    assert np.array_equal(ds.posteriors, T)
    for restarts in (1, 5):
        mc = mace(i, a, y, n_items, n_annotators, classes, restarts=restarts, seed=seed)
        T, theta, xi, iterations = _mace_as_first_written(
            i, a, y, n_items, n_annotators, classes, restarts=restarts, seed=seed
        )
        assert np.array_equal(mc.posteriors, T) and np.array_equal(mc.reliability, theta)
        assert np.array_equal(mc.spam_labels, xi) and mc.iterations == iterations


def test_crowd_bt_with_other_scores_is_the_em_as_first_written_bit_for_bit():
    """Scores besides 0, 1/2 and 1 take the full expressions (the 0 and 1 groups their one quotient)."""
    rng = np.random.default_rng(5)
    n, k, voters = 20_000, 12, 300
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    s = rng.choice([0.0, 1.0, 0.5, 0.25, 0.9], n)
    v = rng.integers(0, voters, n)
    fit = crowd_bt(a, b, s, v, k, voters)
    theta, eta, wins, iterations = _crowd_bt_as_first_written(a, b, s, v, k, voters)
    assert np.array_equal(fit.theta, theta) and np.array_equal(fit.eta, eta) and np.array_equal(fit.wins, wins)
    assert fit.iterations == iterations


def test_vote_scores_by_columns_are_the_per_vote_ones():
    import random

    from dialeval.analysis.annotators import _score, _scores

    values = ["model_a", "model_b", "a", "b", "left", "right", "tie", None, float("nan"), "x", "y", 1, "A"]
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 40)
        w, x, y = ([rng.choice(values) for _ in range(n)] for _ in range(3))
        assert np.array_equal(_scores(w, x, y), np.array([_score(*t) for t in zip(w, x, y)]))


def test_screen_voters_with_the_callers_codes_is_the_same_screen():
    import pandas as pd

    from dialeval.analysis.annotators import _codes, screen_voters

    rng = np.random.default_rng(6)
    names = np.array(["zeta", "alpha", "Mu", "beta-2", "beta-10"])
    votes = pd.DataFrame(
        {
            "annotator": [f"w{k}" for k in rng.integers(0, 40, 2000)],
            "a": names[rng.integers(0, 5, 2000)],
            "b": names[rng.integers(0, 5, 2000)],
            "score": rng.choice([0.0, 0.5, 1.0], 2000),
        }
    )
    order = {n: k for k, n in enumerate(sorted(names))}
    people, who = _codes(votes["annotator"])
    codes = (people, who, votes["a"].map(order).to_numpy(), votes["b"].map(order).to_numpy())
    assert screen_voters(votes, 0.05, codes=codes) == screen_voters(votes, 0.05)
