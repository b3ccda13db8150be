"""Cross-check: dialeval's style control (stats/style.py) against arena-rank's ContextualBradleyTerry.

Both fit Bradley–Terry with style covariates on the same simulated votes (ties half, five
standardised normalised-difference covariates). arena-rank is set to dialeval's choices: no
inverse-propensity reweighting and (almost) no ridge on the coefficients (its defaults reweight by
pair counts and put a ridge of 1 on the mean loss). Ratings are compared on the Elo scale after
centring both at the same mean. Target: within 1 Elo point.

arena-rank pins numpy==2.3.3 and pulls jax, so it is not a dependency of dialeval: run this in a
separate virtual environment that has arena-rank and dialeval's base dependencies, with dialeval on
PYTHONPATH, e.g.
    python3 -m venv /tmp/venv-arena && /tmp/venv-arena/bin/pip install 'arena-rank>=0.1.1,<0.2' <base deps>
    PYTHONPATH=src /tmp/venv-arena/bin/python benchmarks/arena_rank_style_check.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dialeval.stats.bradley_terry import to_elo
from dialeval.stats.style import fit_style_bt, style_covariates


def simulate(battles: int, models: int, seed: int) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    strength = np.sort(rng.normal(0, 0.6, models))[::-1]
    verbosity = rng.uniform(80, 600, models)
    a = rng.integers(0, models, battles)
    b = (a + rng.integers(1, models, battles)) % models
    fa = np.column_stack([rng.poisson(verbosity[a]) + 1, *(rng.poisson(lam, battles) for lam in (1, 2, 3, 0.3))])
    fb = np.column_stack([rng.poisson(verbosity[b]) + 1, *(rng.poisson(lam, battles) for lam in (1, 2, 3, 0.3))])
    z, _, _ = style_covariates(fa, fb)
    eta = strength[a] - strength[b] + z @ np.array([0.5, 0.1, 0.05, 0.1, 0.0])
    tie = rng.random(battles) < 0.25
    winner = np.where(tie, "tie", np.where(rng.random(battles) < 1 / (1 + np.exp(-eta)), "model_a", "model_b"))
    names = [f"m{k:02d}" for k in range(models)]
    frame = pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": winner})
    for k in range(z.shape[1]):
        frame[f"z{k}"] = z[:, k]
    return frame, z, names


def ours(frame: pd.DataFrame, z: np.ndarray, names: list[str]) -> tuple[pd.Series, np.ndarray]:
    index = {n: k for k, n in enumerate(names)}
    score = np.where(frame["winner"] == "model_a", 1.0, np.where(frame["winner"] == "model_b", 0.0, 0.5))
    fit = fit_style_bt(
        frame["model_a"].map(index).to_numpy(), frame["model_b"].map(index).to_numpy(), score, z, len(names)
    )
    return pd.Series(to_elo(fit.theta), index=names), fit.beta


def theirs(frame: pd.DataFrame, columns: list[str]) -> tuple[pd.Series, np.ndarray]:
    import jax

    jax.config.update("jax_enable_x64", True)
    from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
    from arena_rank.utils.data_utils import ContextualPairDataset

    data = ContextualPairDataset.from_pandas(frame, columns, reweighted=False, normalize_features=False)
    model = ContextualBradleyTerry(n_competitors=len(data.competitors), n_features=len(columns), reg=1e-12)
    result = model.compute_ratings_and_cis(data, ci_method="sandwich")
    ratings = pd.Series(np.asarray(result["ratings"]), index=list(result["competitors"]))
    return ratings - ratings.mean() + 1000.0, np.asarray(model.params["coeffs"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=100_000)
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("arena_rank_style_check.json"))
    args = parser.parse_args()
    frame, z, names = simulate(args.battles, args.models, seed=0)
    start = time.perf_counter()
    mine, beta = ours(frame, z, names)
    t_ours = time.perf_counter() - start
    start = time.perf_counter()
    other, other_beta = theirs(frame, [f"z{k}" for k in range(z.shape[1])])
    t_theirs = time.perf_counter() - start
    diff = (mine - other.reindex(mine.index)).abs()
    result = {
        "battles": args.battles,
        "models": args.models,
        "max_rating_difference_elo": round(float(diff.max()), 4),
        "max_coefficient_difference": round(float(np.abs(beta - other_beta).max()), 6),
        "coefficients_dialeval": [round(float(x), 4) for x in beta],
        "coefficients_arena_rank": [round(float(x), 4) for x in other_beta],
        "seconds": {"dialeval": round(t_ours, 2), "arena_rank": round(t_theirs, 2)},
        "target": "within 1 Elo point",
    }
    print(json.dumps(result, indent=2))
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
