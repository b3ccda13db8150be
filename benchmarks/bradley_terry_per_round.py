"""Benchmark: one Bradley-Terry bootstrap round, dialeval vs `choix` and `arena-rank`, on the same
aggregated counts (issue 14, part 2: dialeval at least as fast per round as choix).

Data: the synthetic votes of `bradley_terry_vs_fastchat.py` (1,000,000 votes, 100 bots, seed 42,
10% ties), aggregated once into a 100 x 100 win matrix (ties = half a win each). A round = draw
the cell counts from the multinomial of the observed shares (resampling the votes) and fit.
- dialeval: `bootstrap_bt` end to end (draws + fit), time / rounds; the fit alone on the same draws
  (`_chord`: all rounds batched, warm-started at the full fit, one reused Hessian); and `fit_bt`
  on each draw alone from zero (one round at a time, as a user calling the fit would);
- choix 0.4.1: `ilsr_pairwise_dense(counts, alpha)` (its fastest dense estimator; alpha = the same
  tiny regularisation) on the same draws, one per round (fit only: the draws are made beforehand,
  their cost is `multinomial_draw_ms_per_round`);
- arena-rank 0.1.1 (JAX, L-BFGS): `BradleyTerry.fit` on a `PairDataset` whose counts are the draw,
  as its own bootstrap does (`fit_single_bootstrap_sample`), one per round (first call excluded: JIT).
FastChat's per-round times are in benchmarks/README.md (`bradley_terry_vs_fastchat.py`, separate venv).

Run (the comparison packages only in a scratch venv, never dialeval dependencies):
    python3 -m venv /tmp/bt-venv && /tmp/bt-venv/bin/pip install choix arena-rank numpy scipy pandas threadpoolctl
    PYTHONPATH=src /tmp/bt-venv/bin/python benchmarks/bradley_terry_per_round.py --rounds 20
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from dialeval.stats.bradley_terry import _chord, bootstrap_bt, fit_bt, to_elo


def votes_matrix(votes: int, bots: int, seed: int, tie_share: float) -> tuple[np.ndarray, np.ndarray]:
    """(wins, ties) aggregated from synthetic votes drawn as in bradley_terry_vs_fastchat.py."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=bots)
    a = rng.integers(0, bots, votes)
    b = (a + rng.integers(1, bots, votes)) % bots
    a_wins = rng.random(votes) < 1 / (1 + np.exp(-(strength[a] - strength[b])))
    tie = rng.random(votes) < tie_share
    wins = np.zeros((bots, bots))
    np.add.at(wins, (np.where(a_wins, a, b)[~tie], np.where(a_wins, b, a)[~tie]), 1)
    ties = np.zeros((bots, bots))
    np.add.at(ties, (a[tie], b[tie]), 1)
    return wins, ties + ties.T


def draws(wins: np.ndarray, ties: np.ndarray, rounds: int, seed: int) -> list[np.ndarray]:
    """Bootstrap win matrices (ties folded in as halves), as bootstrap_bt draws them."""
    K = wins.shape[0]
    iu = np.triu_indices(K, k=1)
    cells = np.concatenate([wins[iu], wins.T[iu], ties[iu]])
    rng = np.random.default_rng(seed)
    out = []
    m = len(iu[0])
    for _ in range(rounds):
        d = rng.multinomial(int(cells.sum()), cells / cells.sum())
        W = np.zeros((K, K))
        W[iu] = d[:m] + 0.5 * d[2 * m :]
        W[iu[1], iu[0]] = d[m : 2 * m] + 0.5 * d[2 * m :]
        out.append(W)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--votes", type=int, default=1_000_000)
    ap.add_argument("--bots", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tie-share", type=float, default=0.1)
    args = ap.parse_args()
    wins, ties = votes_matrix(args.votes, args.bots, args.seed, args.tie_share)
    W = wins + 0.5 * ties
    theta = fit_bt(wins, ties)
    result: dict = {"votes": args.votes, "bots": args.bots, "rounds": args.rounds}

    t = time.perf_counter()
    bootstrap_bt(wins, ties, n_boot=max(args.rounds, 200), seed=1, theta0=theta)
    result["dialeval_bootstrap_bt_ms_per_round"] = 1000 * (time.perf_counter() - t) / max(args.rounds, 200)
    t = time.perf_counter()
    boot = draws(wins, ties, args.rounds, 2)
    result["multinomial_draw_ms_per_round"] = 1000 * (time.perf_counter() - t) / args.rounds
    t = time.perf_counter()
    _chord(np.stack(boot), theta, 1e-6)
    result["dialeval_fit_only_ms_per_round (batched, warm start)"] = 1000 * (time.perf_counter() - t) / args.rounds
    t = time.perf_counter()
    for d in boot:
        fit_bt(d)
    result["dialeval_fit_bt_cold_ms_per_round"] = 1000 * (time.perf_counter() - t) / args.rounds

    try:
        import choix

        alpha = 1e-6
        ref = choix.ilsr_pairwise_dense(W, alpha=alpha)
        ref = ref - ref.mean()
        result["choix_vs_dialeval_max_abs_elo"] = float(np.abs(to_elo(ref) - to_elo(theta)).max())
        t = time.perf_counter()
        for d in boot:
            choix.ilsr_pairwise_dense(d, alpha=alpha)
        result["choix_ilsr_pairwise_dense_fit_only_ms_per_round"] = 1000 * (time.perf_counter() - t) / args.rounds
    except ImportError:
        result["choix"] = "not installed"

    try:
        import jax.numpy as jnp
        from arena_rank.models.bradley_terry import BradleyTerry
        from arena_rank.utils.data_utils import PairDataset

        K = args.bots
        ii, jj = np.nonzero(np.triu(np.ones((K, K)), 1))

        def dataset(M: np.ndarray) -> PairDataset:
            # one row per (pair, outcome): i beats j (outcome 1) and j beats i (outcome 0); ties are
            # already halves in M, which is the same likelihood
            pairs = np.concatenate([np.stack([ii, jj], 1), np.stack([ii, jj], 1)]).astype(np.int32)
            outcomes = np.concatenate([np.ones(len(ii)), np.zeros(len(ii))])
            counts = np.concatenate([M[ii, jj], M[jj, ii]])
            return PairDataset(
                [str(k) for k in range(K)],
                jnp.asarray(pairs),
                jnp.asarray(outcomes),
                jnp.asarray(counts),
                jnp.ones(len(counts)),
                jnp.asarray(counts),
            )

        model = BradleyTerry(K)
        model.fit(dataset(W))  # compiles
        r = np.asarray(model.params["ratings"])
        result["arena_rank_vs_dialeval_max_abs_elo"] = float(
            np.abs(400 / math.log(10) * (r - r.mean()) - (to_elo(theta) - 1000)).max()
        )
        t = time.perf_counter()
        for d in boot:
            m = BradleyTerry(K)
            m.fit(dataset(d))
        result["arena_rank_fit_ms_per_round"] = 1000 * (time.perf_counter() - t) / args.rounds
    except ImportError:
        result["arena_rank"] = "not installed"
    with open("/proc/loadavg") as f:
        result["loadavg"] = f.read().split()[:3]
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}, indent=1))


if __name__ == "__main__":
    main()
