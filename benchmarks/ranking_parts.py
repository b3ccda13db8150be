"""Time of each part of a pairwise leaderboard on 1M battles among 100 models.

Parts (analysis/ranking.py, stats/): the plain Bradley–Terry board (aggregation, fit, 1000-round
bootstrap, sandwich), both tie models (Davidson, Rao–Kupper) with predicted tie rates, the
robustness audit (top rank + 99 adjacent pairs, each refit-verified) and style control (Bradley–Terry
with 5 style covariates on the 1M votes, robust intervals). Target (issue: rankings that separate
substance from style): style control and the audit together add less than the plain board's time.

Votes are simulated (ties 30%, answer lengths per model, winners partly decided by length), built
in memory: this measures the statistics, not the door (benchmarks/scaling.py and the CLI timings of
benchmarks/README.md measure that).
Run: .venv/bin/python benchmarks/ranking_parts.py [--battles 1000000] [--models 100] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from dialeval.analysis.ranking import robustness_audit, tie_section
from dialeval.stats.bradley_terry import aggregate_votes, bootstrap_bt, fit_bt, sandwich_intervals
from dialeval.stats.style import fit_style_bt, style_covariates


def simulate(battles: int, models: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = np.sort(rng.normal(0, 0.6, models))[::-1]
    verbosity = rng.uniform(80, 600, models)
    a = rng.integers(0, models, battles)
    b = (a + rng.integers(1, models, battles)) % models
    la, lb = rng.poisson(verbosity[a]) + 1, rng.poisson(verbosity[b]) + 1
    features_a = np.column_stack(
        [la, rng.poisson(1, battles), rng.poisson(2, battles), rng.poisson(3, battles), rng.poisson(0.3, battles)]
    )
    features_b = np.column_stack(
        [lb, rng.poisson(1, battles), rng.poisson(2, battles), rng.poisson(3, battles), rng.poisson(0.3, battles)]
    )
    eta = strength[a] - strength[b] + 0.4 * (la - lb) / (la + lb)
    u = rng.random(battles)
    winner = np.where(u < 0.3, "tie", np.where(rng.random(battles) < 1 / (1 + np.exp(-eta)), "model_a", "model_b"))
    names = np.array([f"m{k:03d}" for k in range(models)])
    frame = pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})
    return frame, features_a, features_b


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("ranking_parts.json"))
    args = parser.parse_args()
    votes, fa, fb = simulate(args.battles, args.models)

    def plain():
        names, wins, ties = aggregate_votes(votes, "model_a", "model_b", "winner")
        theta = fit_bt(wins, ties)
        bootstrap_bt(wins, ties, n_boot=1000, theta0=theta)
        sandwich_intervals(wins, ties, theta)
        return names, wins, ties, theta

    (names, wins, ties, theta), t_plain = timed(plain)
    _, t_ties = timed(lambda: tie_section(names, wins, ties, "half"))
    audit, t_audit = timed(lambda: robustness_audit(names, wins, ties, theta))
    index = {n: k for k, n in enumerate(names)}

    def style():
        score = np.where(votes["winner"] == "model_a", 1.0, np.where(votes["winner"] == "model_b", 0.0, 0.5))
        z, _, _ = style_covariates(fa, fb)
        return fit_style_bt(
            votes["model_a"].map(index).to_numpy(), votes["model_b"].map(index).to_numpy(), score, z, len(names)
        )

    fit, t_style = timed(style)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_1min": os.getloadavg()[0],
        "battles": args.battles,
        "models": args.models,
        "seconds": {
            "plain_bt_with_bootstrap_and_sandwich": round(t_plain, 2),
            "tie_models": round(t_ties, 2),
            "robustness_audit": round(t_audit, 2),
            "style_control": round(t_style, 2),
        },
        "audit_top": audit["top"],
        "style_length_coefficient": round(float(fit.beta[0]), 4),
        "ratio_style_plus_audit_to_plain": round((t_audit + t_style) / t_plain, 2),
    }
    print(json.dumps(result, indent=2))
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
