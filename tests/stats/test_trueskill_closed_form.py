"""Our closed-form 1-vs-1 TrueSkill gives the trueskill package's ratings (to round-off).

``ranking.trueskill_ratings`` rates matches without the package's factor graph (for speed); these
tests play the same matches in the same orders through ``trueskill.rate_1vs1`` and compare.
"""

from __future__ import annotations

import numpy as np
import pytest
import trueskill

from dialeval.formats.spot_the_bot import read_spot_the_bot
from dialeval.methods.spot_the_bot.analysis import annotation_frame, ranking_matches
from dialeval.stats import ranking


def package_ratings(a, b, outcome, n_shuffles, seed, sigma=0.5):
    """The previous implementation of ``trueskill_ratings``: every match through the package."""
    systems = sorted(set(a) | set(b))
    index = {s: i for i, s in enumerate(systems)}
    ia = [index[x] for x in a]
    ib = [index[x] for x in b]
    env = trueskill.TrueSkill(mu=0.0, sigma=sigma, beta=max(0.025 * sigma**2 * len(a), 1e-6), tau=0.0)
    rng = np.random.default_rng(seed)
    mus = np.zeros(len(systems))
    sigmas = np.zeros(len(systems))
    for _ in range(n_shuffles):
        r = [env.create_rating() for _ in systems]
        for k in rng.permutation(len(a)):
            i, j, o = ia[k], ib[k], outcome[k]
            if o == 1:
                r[i], r[j] = trueskill.rate_1vs1(r[i], r[j], env=env)
            elif o == -1:
                r[j], r[i] = trueskill.rate_1vs1(r[j], r[i], env=env)
            else:
                r[i], r[j] = trueskill.rate_1vs1(r[i], r[j], drawn=True, env=env)
        mus += [x.mu for x in r]
        sigmas += [x.sigma for x in r]
    return dict(zip(systems, mus / n_shuffles)), dict(zip(systems, sigmas / n_shuffles))


@pytest.mark.parametrize("domain", ["dailydialog", "empathetic"])
def test_trueskill_matches_the_package_on_published_segments(shared_data, domain):
    frame = annotation_frame(read_spot_the_bot(str(shared_data("spot-the-bot")), domain))
    m = ranking_matches(frame[frame["bot_bot"]].reset_index(drop=True), "annotation")
    a, b, outcome = m["a"].tolist(), m["b"].tolist(), m["outcome"].astype(int).tolist()
    assert len(a) > 1000 and {-1, 0, 1} <= set(outcome)  # wins both ways and draws
    ours = ranking.trueskill_ratings(a, b, outcome, n_shuffles=2, seed=3)
    mu, sigma = package_ratings(a, b, outcome, n_shuffles=2, seed=3)
    assert len(ours) == len(mu) >= 4
    for row in ours.to_dict("records"):
        assert abs(row["mu"] - mu[row["system"]]) < 1e-9
        assert abs(row["sigma"] - sigma[row["system"]]) < 1e-9
    # not trivially equal: the ratings moved away from the prior
    assert max(abs(x) for x in mu.values()) > 1e-3


def test_one_update_matches_the_package_across_skill_gaps_and_draws():
    rng = np.random.default_rng(7)
    for beta, tau, p_draw in [(0.25, 0.0, 0.1), (4.1667, 0.0833, 0.1), (2.0, 0.5, 0.3)]:
        env = trueskill.TrueSkill(mu=0.0, sigma=1.0, beta=beta, tau=tau, draw_probability=p_draw)
        rate = ranking._trueskill_1vs1(beta, tau, p_draw)
        for _ in range(300):
            m1, m2 = rng.normal(0, 3 * beta, size=2)
            s1, s2 = rng.uniform(0.05, 3, size=2) * beta
            drawn = bool(rng.random() < 0.3)
            try:
                want = trueskill.rate_1vs1(trueskill.Rating(m1, s1), trueskill.Rating(m2, s2), drawn=drawn, env=env)
            except FloatingPointError:
                with pytest.raises(FloatingPointError):
                    rate(m1, s1, m2, s2, drawn)
                continue
            got = rate(m1, s1, m2, s2, drawn)
            expected = (want[0].mu, want[0].sigma, want[1].mu, want[1].sigma)
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
