"""Judge-corrected intervals (stats/ppi.py): agreement with ppi_py, coverage, λ, classical limit."""

import numpy as np
import pytest

from dialeval.stats import ppi
from dialeval.stats.bradley_terry import fit_bt, sandwich_cov


def _xcheck_mean_data():
    rng = np.random.default_rng(20261124)
    n, N = 300, 3000
    y = rng.choice([0, 0.5, 1], size=n + N, p=[0.4, 0.2, 0.4])
    yh = np.where(rng.random(n + N) < 0.7, y, rng.choice([0, 0.5, 1], size=n + N))
    return rng, y[:n], yh[:n], yh[n:]


def _xcheck_logistic_data(rng):
    K, n, N = 4, 400, 4000
    th = np.array([0.0, 0.4, -0.3, 0.8])
    a = rng.integers(0, K, n + N)
    b = (a + rng.integers(1, K, n + N)) % K
    p = 1 / (1 + np.exp(-(th[a] - th[b])))
    y = (rng.random(n + N) < p).astype(float)
    yh = np.where(rng.random(n + N) < 0.6, y, (rng.random(n + N) < 0.5).astype(float))
    return ppi.pair_moments(K, a[:n], b[:n], y[:n], yh[:n], a[n:], b[n:], yh[n:])


def test_agrees_with_ppi_python():
    # Frozen from ppi-python 0.2.3 (PyPI ppi_python; numpy 2.4.6, scipy 1.17.1) in a scratch venv on
    # 2026-11-24, on exactly these data: ppi_mean_ci / ppi_mean_pointestimate (λ tuned), and
    # ppi_logistic_ci / ppi_logistic_pointestimate with λ = 0.5 on the design x = e_a − e_b without
    # bot 0's column (so its coefficients are θ_k − θ_0). Our numbers: the same to 1e-15 (mean) and
    # 1e-8 (logistic; ppi_py stops L-BFGS at ftol 1e-15). With λ tuned the logistic fits differ a
    # little (ours 0.1405 vs 0.1364 for θ_1 − θ_0) because λ minimises the trace of the covariance,
    # which depends on the parametrisation: ppi_py's drops bot 0, ours has mean-zero strengths.
    rng, y, yh, u = _xcheck_mean_data()
    r = ppi.ppi_mean(y, yh, u, small_sample=False)  # ppi_py's variance convention (ddof 0)
    assert float(r.estimate) == pytest.approx(0.49747442506815864, abs=1e-12)
    assert float(r.ci_low) == pytest.approx(0.46266383530184146, abs=1e-12)
    assert float(r.ci_high) == pytest.approx(0.5322850148344759, abs=1e-12)
    res = ppi.ppi_bradley_terry(_xcheck_logistic_data(rng), lam=0.5, small_sample=False)
    d, _, half = res.differences()
    est = [0.14406675321998985, -0.3109136132834672, 0.5906890265255418]
    lo = [-0.15848257822282685, -0.6090536031590014, 0.2668571902972892]
    hi = [0.44661608466280656, -0.012773623407933088, 0.9145208627537944]
    assert d[1:, 0] == pytest.approx(est, abs=1e-6)
    assert (d - half)[1:, 0] == pytest.approx(lo, abs=1e-6)
    assert (d + half)[1:, 0] == pytest.approx(hi, abs=1e-6)


def _world(K=5, seed=7, ties=0.15):
    """True strengths of a Bradley–Terry world with ties, and the estimand θ* of the logistic fit with
    ties as half-wins: the solution of E[(σ(θ_i − θ_j) − Y) x] = 0 under uniform pairs, found by
    fitting the expected scores (one 'battle' per ordered pair with score E[Y])."""
    rng = np.random.default_rng(seed)
    th = rng.normal(0, 0.6, K)
    a, b = np.nonzero(~np.eye(K, dtype=bool))
    ey = (1 - ties) / (1 + np.exp(-(th[a] - th[b]))) + ties * 0.5
    star = ppi.ppi_bradley_terry(ppi.pair_moments(K, a, b, ey, ey), lam=0).theta
    return th, star


def _battles(rng, th, M, agree=0.75, ties=0.15):
    K = len(th)
    a = rng.integers(0, K, M)
    b = (a + rng.integers(1, K, M)) % K
    p = 1 / (1 + np.exp(-(th[a] - th[b])))

    def vote():
        return np.where(rng.random(M) < ties, 0.5, (rng.random(M) < p).astype(float))

    y = vote()
    # the judge copies the person with probability `agree`, else votes independently from the same law,
    # so its vote correlates `agree` with the person's
    yh = np.where(rng.random(M) < agree, y, vote())
    return a, b, y, yh


def test_coverage_and_gain_on_synthetic_data():
    """300 studies, each n = 1,000 human labels + N = 10,000 judge labels, from a Bradley–Terry world with
    15% ties whose true win rates and strengths are known: the 95% intervals (a pair's win rate, each
    strength, each difference) cover at 95% within a statistical tolerance (±2.5 points is over 3
    standard errors; with ~40 labels per pair instead of ~100 the win-rate interval covers ~93.5%, the
    usual small-sample shortfall of a CLT interval, classical 94%), and a judge agreeing with people
    75% of the time gets λ near 0.75 and shortens the intervals."""
    K, n, N, reps, ties = 5, 1000, 10000, 300, 0.15
    th, star = _world(K, ties=ties)
    rate01 = (1 - ties) / (1 + np.exp(-(th[0] - th[1]))) + ties * 0.5
    rng = np.random.default_rng(11)
    hit_rate, hit_bt, hit_diff, ratio, ratio_bt, lams = [], [], [], [], [], []
    for _ in range(reps):
        a, b, y, yh = _battles(rng, th, n + N, ties=ties)
        m = ppi.pair_moments(K, a[:n], b[:n], y[:n], yh[:n], a[n:], b[n:], yh[n:])
        res = ppi.ppi_bradley_terry(m)
        lams.append(res.lam)
        lo, hi = res.intervals()
        hit_bt.append(np.mean((lo <= star) & (star <= hi)))
        d, _, half = res.differences()
        true_d = star[:, None] - star[None, :]
        iu = np.triu_indices(K, 1)
        hit_diff.append(np.mean(np.abs(d - true_d)[iu] <= half[iu]))
        ratio_bt.append(np.mean(res.se / ppi.ppi_bradley_terry(m, lam=0).se))
        rates = ppi.ppi_win_rates(m)
        k01 = 0  # pair (0, 1) is the first of the upper triangle
        hit_rate.append(rates.ci_low[k01] <= rate01 <= rates.ci_high[k01])
        ratio.append(rates.se[k01] / rates.classical_se[k01])
    for hits in (hit_rate, hit_bt, hit_diff):
        assert abs(np.mean(hits) - 0.95) <= 0.025, np.mean(hits)
    assert 0.6 <= np.median(lams) <= 0.85
    # variance ratio ≈ 1 − λ²·N/(n+N)-ish: well under 1 for ρ = 0.75
    assert np.median(ratio) < 0.85 and np.mean(ratio_bt) < 0.85


def test_random_judge_gets_lambda_near_zero_and_costs_little():
    th, _ = _world(5)
    rng = np.random.default_rng(3)
    n, N = 500, 5000
    a, b, y, _ = _battles(rng, th, n + N)
    noise = rng.choice([0.0, 0.5, 1.0], size=n + N)  # a judge that ignores the battle
    m = ppi.pair_moments(5, a[:n], b[:n], y[:n], noise[:n], a[n:], b[n:], noise[n:])
    res = ppi.ppi_bradley_terry(m)
    assert res.lam < 0.1
    classical = ppi.ppi_bradley_terry(m, lam=0)
    assert np.all(res.se <= classical.se * 1.02)
    r = ppi.ppi_mean(y[:n], noise[:n], noise[n:])
    assert float(r.lam) < 0.1 and float(r.se) <= float(r.classical_se) * 1.01


def test_equals_classical_without_unlabelled_units():
    th, _ = _world(4)
    rng = np.random.default_rng(5)
    a, b, y, yh = _battles(rng, th, 600)
    r = ppi.ppi_mean(y, yh, [])
    assert float(r.estimate) == pytest.approx(y.mean()) and float(r.lam) == 0.0
    assert float(r.se) == pytest.approx(y.std(ddof=1) / np.sqrt(len(y)))
    res = ppi.ppi_bradley_terry(ppi.pair_moments(4, a, b, y, yh), small_sample=False)
    assert res.lam == 0.0 and res.N == 0
    # the human-only Bradley–Terry fit and its sandwich covariance of bradley_terry.py (ties as half wins)
    wins, ties = np.zeros((4, 4)), np.zeros((4, 4))
    np.add.at(wins, (a[y == 1], b[y == 1]), 1)
    np.add.at(wins, (b[y == 0], a[y == 0]), 1)
    np.add.at(ties, (a[y == 0.5], b[y == 0.5]), 1)
    ties = ties + ties.T
    theta = fit_bt(wins, ties, l2=0)
    assert res.theta == pytest.approx(theta, abs=1e-6)
    # ours uses ddof 1 (as ppi_py) where sandwich_cov sums raw squares: equal up to n/(n−1)
    assert res.cov == pytest.approx(sandwich_cov(wins, ties, theta) * 600 / 599, abs=1e-6)


def test_rank_sets_from_simultaneous_intervals():
    theta = np.array([1.0, 0.9, 0.0, -2.0])
    d = theta[:, None] - theta[None, :]
    se = np.full((4, 4), 0.1)
    # z at 0.05/6 ≈ 2.64: 1 and 0.9 (difference 0.1) overlap, every other pair is resolved
    assert ppi.rank_sets(d, se) == [(1, 2), (1, 2), (3, 3), (4, 4)]
    assert ppi.rank_sets(d, np.full((4, 4), 10.0)) == [(1, 4)] * 4


def test_active_sampling_is_unbiased_and_beats_uniform():
    """Units where the judge is unsure are sent to people more often; with the 1/π weights the mean
    stays unbiased (coverage) and its interval is shorter than with uniform sampling at the same budget."""
    rng = np.random.default_rng(9)
    M, budget, reps = 4000, 400, 300
    conf = np.where(rng.random(M) < 0.7, 0.97, 0.6)  # judge's confidence: mostly sure, sometimes not
    pi = ppi.active_probabilities(1 - conf, budget)  # a hard verdict's expected squared error
    assert pi.sum() == pytest.approx(budget, rel=1e-6) and pi.max() <= 1.0
    uniform = np.full(M, budget / M)
    hits = {"active": 0, "uniform": 0}
    se = {"active": [], "uniform": []}
    for _ in range(reps):
        yh = (rng.random(M) < 0.5).astype(float)
        y = np.where(rng.random(M) < conf, yh, 1 - yh)  # the judge is right with prob. conf
        truth = 0.5  # the mean of the population the units are drawn from (the interval's target)
        for name, p in (("active", pi), ("uniform", uniform)):
            lab = rng.random(M) < p
            r = ppi.ppi_mean_active(yh, lab, y, p)
            hits[name] += float(r.ci_low) <= truth <= float(r.ci_high)
            se[name].append(float(r.se))
    for name in hits:
        assert abs(hits[name] / reps - 0.95) <= 0.035, (name, hits[name] / reps)
    assert np.mean(se["active"]) < 0.95 * np.mean(se["uniform"])


def test_battles_to_moments_from_verdicts():
    human = ppi.score_of_winner(["model_a", "tie", None, "model_b", "tie (bothbad)"])
    assert np.isnan(human[2]) and list(human[[0, 1, 3, 4]]) == [1.0, 0.5, 0.0, 0.5]
    judge = ppi.score_of_winner(["model_a", "model_b", "model_a", None, "tie"])
    names, m, counts = ppi.battles_to_moments(["x", "y", "x", "x", "z"], ["y", "x", "z", "y", "x"], human, judge)
    assert names == ["x", "y", "z"]
    assert counts == {"labelled": 3, "judge_only": 1, "human_without_judge": 1}
    # pair (x, y): battle 1 x beat y (judge agrees), battle 2 y vs x tie (judge: x won, i.e. 1 for x)
    assert m.n[0] == 2 and m.sy[0] == 1.5 and m.sh[0] == 2.0


def test_model_win_rates_equal_the_per_bot_means():
    th, _ = _world(4)
    rng = np.random.default_rng(8)
    a, b, y, yh = _battles(rng, th, 3000)
    n = 800
    m = ppi.pair_moments(4, a[:n], b[:n], y[:n], yh[:n], a[n:], b[n:], yh[n:])
    res = ppi.ppi_model_win_rates(m)
    for k in range(4):
        # bot k's scores on its own battles, from its side
        lab_k = np.concatenate([y[:n][a[:n] == k], 1 - y[:n][b[:n] == k]])
        hat_k = np.concatenate([yh[:n][a[:n] == k], 1 - yh[:n][b[:n] == k]])
        unl_k = np.concatenate([yh[n:][a[n:] == k], 1 - yh[n:][b[n:] == k]])
        one = ppi.ppi_mean(lab_k, hat_k, unl_k)
        assert res.estimate[k] == pytest.approx(float(one.estimate))
        assert res.se[k] == pytest.approx(float(one.se))


def test_small_sample_correction_widens_rare_bots_most():
    th, _ = _world(4)
    rng = np.random.default_rng(12)
    a, b, y, yh = _battles(rng, th, 400)
    rare = (a == 3) | (b == 3)
    keep = ~rare | (rng.random(400) < 0.1)  # bot 3 fought only ~20 battles
    m = ppi.pair_moments(4, a[keep], b[keep], y[keep], yh[keep])
    plain = ppi.ppi_bradley_terry(m, small_sample=False).se
    hc2 = ppi.ppi_bradley_terry(m).se
    ratio = hc2 / plain
    assert np.all(ratio >= 1.0) and ratio[3] == ratio.max() and ratio[3] > 1.02


def test_a_bot_without_human_votes_gets_no_finite_interval():
    th, _ = _world(4)
    rng = np.random.default_rng(13)
    a, b, y, yh = _battles(rng, th, 3000)
    n = 600
    lab = np.zeros(3000, dtype=bool)
    lab[:n] = True
    lab &= (a != 3) & (b != 3)  # people never judged bot 3; the judge did
    m = ppi.pair_moments(4, a[lab], b[lab], y[lab], yh[lab], a[~lab], b[~lab], yh[~lab])
    res = ppi.ppi_bradley_terry(m)
    lo, hi = res.intervals()
    assert np.isinf(lo[3]) and np.isinf(hi[3]) and np.all(np.isfinite(lo[:3]))
    assert res.rank_sets()[3] == (1, 4)


def test_table_is_best_first_with_elo_ratings():
    th, _ = _world(4)
    rng = np.random.default_rng(14)
    a, b, y, yh = _battles(rng, th, 4000)
    names, m, _ = ppi.battles_to_moments(
        [f"bot{k}" for k in a[:2000]] + [f"bot{k}" for k in a[2000:]],
        [f"bot{k}" for k in b],
        np.concatenate([y[:2000], np.full(2000, np.nan)]),
        yh,
    )
    rows = ppi.ppi_bradley_terry(m, names).table()
    assert [r["name"] for r in rows] == [f"bot{k}" for k in np.argsort(-th)]
    assert np.mean([r["rating"] for r in rows]) == pytest.approx(1000.0)
    top = rows[0]
    assert top["rating_low"] < top["rating"] < top["rating_high"]
    assert top["rating"] - 1000 == pytest.approx(400 / np.log(10) * top["theta"])
