"""Judge-guided anytime-valid test (stats/ppi_sequential.py): unbiasedness, type-I error with wrong
judges, confidence-sequence coverage, power against the human-only beta-binomial test, bad input.
Fixed seeds; simulation sizes keep each test under ~20 s on 2 shared cores."""

import json

import numpy as np
import pytest

from dialeval.stats.ppi_sequential import GuidedPairTest, GuidedPool, guided_probabilities
from dialeval.stats.sequential import SequentialPairTest

TIE = 0.1  # share of human ties in the simulations


def human_mean(p):
    """E[Y | u] when a person calls a tie with probability TIE, else a wins with probability p_u."""
    return (1 - TIE) * np.asarray(p) + TIE * 0.5


def label(rng, p_u):
    r = rng.random()
    if r < TIE:
        return 0.5
    return 1.0 if rng.random() < p_u else 0.0


def guided_run(pool, p, rng, steps, alpha=0.05, **kw):
    t = GuidedPairTest(pool, alpha, grid=kw.pop("grid", 0), **kw)
    while t.n < steps and not t.decided:
        u = pool.draw(rng)
        t.update(u, label(rng, p[u]))
    return t


def uniform_bb_steps(p, rng, steps):
    """Human steps (ties included) the beta-binomial mixture test needs on uniformly drawn units."""
    s = SequentialPairTest()
    k = 0
    while not s.decided and k < steps:
        u = int(rng.integers(len(p)))
        y = label(rng, p[u])
        s.update("tie" if y == 0.5 else y == 1.0)
        k += 1
    return k


# -- the pseudo-outcome -------------------------------------------------------------------------------


@pytest.mark.parametrize("lam", [1.0, 0.4])
def test_pseudo_outcome_is_unbiased_exactly(lam):
    f = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    mu = np.array([0.2, 0.9, 0.5, 0.7, 0.05])  # E[Y | u], unrelated to the judge
    q = np.array([0.1, 0.4, 0.2, 0.05, 0.25])
    pool = GuidedPool(f, q)
    # Z is linear in y, so E[Z | u] = Z(u, E[Y | u]); then average over u ~ q
    expected = sum(q[u] * pool.pseudo_outcome(u, mu[u], lam) for u in range(5))
    assert expected == pytest.approx(mu.mean(), abs=1e-12)
    lo, hi = pool.bounds(lam)
    zs = [pool.pseudo_outcome(u, y, lam) for u in range(5) for y in (0.0, 1.0)]
    assert min(zs) == pytest.approx(lo) and max(zs) == pytest.approx(hi)


def test_guided_probabilities_and_draws():
    v = np.array([0.0, 0.25, 1.0, 0.0])
    q = guided_probabilities(v, mix=0.5)
    assert q.sum() == pytest.approx(1.0)
    assert q[0] == pytest.approx(0.5 / 4) and q[2] == pytest.approx(0.5 * 1 / 1.5 + 0.125)
    assert np.allclose(guided_probabilities(np.zeros(3)), 1 / 3)
    pool = GuidedPool(np.array([1.0, 0.5, 0.0, 1.0]), q)
    rng = np.random.default_rng(0)
    counts = np.bincount([pool.draw(rng) for _ in range(40000)], minlength=4) / 40000
    assert np.allclose(counts, q, atol=0.01)
    back = GuidedPool.from_dict(json.loads(json.dumps(pool.to_dict())))
    assert np.array_equal(back.judge_scores, pool.judge_scores) and np.array_equal(back.probabilities, q)
    assert pool.mean_judge == pytest.approx(0.625)


def test_uniform_draws_and_constant_judge_reproduce_the_beta_binomial_mixture():
    """q uniform, f = ½ everywhere, no tuning: Z = Y and the wealth is SequentialPairTest's."""
    n = 50
    pool = GuidedPool(np.full(n, 0.5), np.full(n, 1 / n))
    t = GuidedPairTest(pool, 0.05, tune=False, grid=0)
    s = SequentialPairTest()
    pattern = [1.0, 1.0, 0.0, 1.0, 0.5, 0.0, 1.0]  # no streak long enough to hit the 0.9 truncation
    for k in range(140):
        y = pattern[k % len(pattern)]
        t.update(k % n, y)
        s.update("tie" if y == 0.5 else y == 1.0)
        assert t.e_value == pytest.approx(s.e_value, rel=1e-9)
    assert t.p_value == pytest.approx(s.p_value, rel=1e-9)
    assert t.decided == s.decided


# -- validity -------------------------------------------------------------------------------------------


def null_pool(rng, n=200):
    """θ = ½ exactly: half the units lean to a (0.8), half to b (0.2)."""
    p = np.where(np.arange(n) < n // 2, 0.8, 0.2)
    return p, float(human_mean(p).mean())


def type_one_error(pool, p, rng, runs=400, steps=600):
    return np.mean([guided_run(pool, p, rng, steps).decided for _ in range(runs)])


def test_type_one_error_with_an_anticorrelated_judge():
    rng = np.random.default_rng(11)
    p, theta = null_pool(rng)
    assert theta == pytest.approx(0.5, abs=1e-12)
    f = 1.0 - np.round(p)  # always says the wrong bot wins
    v = np.where(rng.random(len(p)) < 0.5, 0.01, 1.0)  # and is sure of itself on half the units, at random
    rate = type_one_error(GuidedPool(f, guided_probabilities(v)), p, rng)
    print(f"type-I error, anti-correlated judge: {rate:.4f}")
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 400), rate


def test_type_one_error_with_a_judge_confident_everywhere():
    rng = np.random.default_rng(12)
    p, _ = null_pool(rng)
    f = np.ones(len(p))  # "a wins" on every unit
    v = np.where(p > 0.5, 1.0, 0.01)  # unsure exactly where it is right: the b-leaning units are rarely drawn
    rate = type_one_error(GuidedPool(f, guided_probabilities(v, mix=0.3)), p, rng)
    print(f"type-I error, judge confident everywhere: {rate:.4f}")
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 400), rate


def test_confidence_sequence_covers_theta_at_all_times():
    rng = np.random.default_rng(13)
    n = 200
    p = np.clip(rng.beta(2, 1.2, n), 0, 1)
    theta = float(human_mean(p).mean())
    assert abs(theta - 0.5) > 0.05
    f = np.round(p)
    wrong = rng.random(n) < 0.3
    f[wrong] = 1 - f[wrong]
    pool = GuidedPool(f, guided_probabilities(np.where(wrong, 0.05, 0.5)))  # uncertainty backwards
    runs, covered, widths = 200, 0, []
    for _ in range(runs):
        t = GuidedPairTest(pool, 0.05, grid=101)
        ok = True
        for _ in range(300):
            u = pool.draw(rng)
            t.update(u, label(rng, p[u]))
            lo, hi = t.interval()
            ok &= lo <= theta <= hi
        covered += ok
        widths.append(hi - lo)
        lo_f, hi_f = t.fixed_n_interval()
        assert lo_f < t.estimate < hi_f
    print(f"CS coverage at all 300 steps: {covered / runs:.3f}, median final width {np.median(widths):.3f}")
    assert covered / runs >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / runs), covered / runs
    assert np.median(widths) < 0.5  # and it is not trivially wide


# -- power ---------------------------------------------------------------------------------------------


def power_pool(rng, judge, n=400):
    p = np.where(rng.random(n) < 0.69, 0.9, 0.1)
    if judge == "good":
        f = np.round(p)
        wrong = rng.random(n) < 0.15
        f[wrong] = 1 - f[wrong]
        v = np.where(wrong, 0.9, 0.05)
    else:
        f = rng.choice([0.0, 0.5, 1.0], n)
        v = np.full(n, 0.3)
    return p, GuidedPool(f, guided_probabilities(v))


@pytest.mark.parametrize("judge, bound", [("good", 1.0), ("useless", 1.5)])
def test_steps_to_decision_against_the_human_only_test(judge, bound):
    rng = np.random.default_rng(21 if judge == "good" else 22)
    p, pool = power_pool(rng, judge)
    runs, steps = 200, 3000
    guided = [guided_run(pool, p, rng, steps) for _ in range(runs)]
    assert all(t.decided and t.winner_is_first for t in guided)
    g = np.median([t.stopped_at for t in guided])
    u = np.median([uniform_bb_steps(p, rng, steps) for _ in range(runs)])
    print(f"{judge} judge: median human steps guided {g} vs uniform beta-binomial {u} (ratio {g / u:.2f})")
    assert g / u < bound


# -- bad input ------------------------------------------------------------------------------------------


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="sum to 1"):
        GuidedPool(np.array([1.0, 0.0]), np.array([0.5, 0.6]))
    with pytest.raises(ValueError, match="lengths must match"):
        GuidedPool(np.array([1.0, 0.0, 0.5]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="> 0"):
        GuidedPool(np.array([1.0, 0.0]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"judge scores must be in \[0, 1\]"):
        GuidedPool(np.array([1.5, 0.0]), np.array([0.5, 0.5]))
    pool = GuidedPool(np.array([1.0, 0.0]), np.array([0.5, 0.5]))
    t = GuidedPairTest(pool, 0.05)
    with pytest.raises(ValueError, match=r"y must be in \[0, 1\]"):
        t.update(0, 1.5)
    with pytest.raises(ValueError, match="outside the pool"):
        t.update(2, 1.0)
    with pytest.raises(ValueError, match=r"y must be in \[0, 1\]"):
        pool.pseudo_outcome(0, -0.1)
    assert t.n == 0  # refused steps leave no trace


def test_decision_is_sticky_and_bonferroni_is_stricter():
    pool = GuidedPool(np.full(10, 0.5), np.full(10, 0.1))
    one, many = GuidedPairTest(pool, 0.05), GuidedPairTest(pool, 0.05, n_pairs=10)
    for k in range(200):
        y = 0.0 if k % 5 else 1.0  # b wins 80%
        one.update(k % 10, y)
        many.update(k % 10, y)
    assert one.decided and many.decided and one.winner_is_first is False
    assert one.stopped_at < many.stopped_at
    for k in range(300):  # a comeback does not undo the decision
        one.update(k % 10, 1.0)
    assert one.decided and one.winner_is_first is False and one.p_value <= 0.05
    lo, hi = many.interval()
    assert hi < 0.5
