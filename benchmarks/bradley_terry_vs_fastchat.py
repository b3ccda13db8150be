"""Bradley–Terry: dialeval.stats.bradley_terry vs FastChat's MLE Elo (fschat 0.2.36).

1,000,000 synthetic pairwise votes among 100 bots (10% ties). dialeval fits the aggregated
counts and runs 1,000 multinomial bootstrap rounds; FastChat's
`fastchat.serve.monitor.elo_analysis.compute_elo_mle_with_tie` (per-vote logistic regression) is
run once on all votes and for a few bootstrap rounds with its own `get_bootstrap_result`.

FastChat is never a dialeval dependency: it runs in a separate venv, e.g.

    python3 -m venv /tmp/bench-venv
    /tmp/bench-venv/bin/pip install fschat==0.2.36 --no-deps
    /tmp/bench-venv/bin/pip install numpy pandas scikit-learn pytz tqdm plotly requests

    .venv/bin/python benchmarks/bradley_terry_vs_fastchat.py --fastchat-python /tmp/bench-venv/bin/python

elo_analysis imports fastchat.model.model_registry, whose package __init__ pulls torch and
transformers (unused by the Elo code); the FastChat child process therefore registers an empty
`fastchat.model` package pointing at the real directory so only model_registry.py is loaded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dialeval.stats.bradley_terry import aggregate_votes, bootstrap_bt, bradley_terry, fit_bt, to_elo

FASTCHAT_CHILD = r"""
import json, os, sys, time, types
import numpy as np, pandas as pd
import fastchat
pkg = types.ModuleType("fastchat.model")
pkg.__path__ = [os.path.join(os.path.dirname(fastchat.__file__), "model")]
sys.modules["fastchat.model"] = pkg
from fastchat.serve.monitor.elo_analysis import compute_elo_mle_with_tie, get_bootstrap_result

data = np.load(sys.argv[1], allow_pickle=False)
names = data["names"]
df = pd.DataFrame({"model_a": names[data["a"]], "model_b": names[data["b"]],
                   "winner": np.array(["model_a", "model_b", "tie"])[data["w"]]})
rounds = int(sys.argv[2])
t = time.perf_counter()
full = compute_elo_mle_with_tie(df)
t_full = time.perf_counter() - t
times = []
boots = []
np.random.seed(0)
for _ in range(rounds):
    t = time.perf_counter()
    b = get_bootstrap_result(df, compute_elo_mle_with_tie, num_round=1)
    times.append(time.perf_counter() - t)
    boots.append(b.iloc[0].to_dict())
# FastChat's function once more with sklearn's solver run to convergence (same objective and penalty),
# to tell solver tolerance apart from model differences
import functools, warnings
import sklearn.linear_model as sk_lm
loose = sk_lm.LogisticRegression
sk_lm.LogisticRegression = functools.partial(loose, tol=1e-10, max_iter=10000)
if True:
    t = time.perf_counter()
    tight = compute_elo_mle_with_tie(df)
    t_tight = time.perf_counter() - t
sk_lm.LogisticRegression = loose
print(json.dumps({"full": full.to_dict(), "t_full": t_full, "round_times": times, "boot": boots,
                  "tight": tight.to_dict(), "t_tight": t_tight}))
"""


def synthetic_votes(n_votes: int, n_bots: int, tie_share: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n_bots)  # natural-log strengths, sd ~ 174 Elo points
    a = rng.integers(0, n_bots, n_votes)
    b = rng.integers(0, n_bots - 1, n_votes)
    b[b >= a] += 1
    p = 1.0 / (1.0 + np.exp(-(strength[a] - strength[b])))
    w = np.where(rng.random(n_votes) < p, 0, 1)  # 0: a wins, 1: b wins
    w[rng.random(n_votes) < tie_share] = 2
    names = np.array([f"bot{i:03d}" for i in range(n_bots)])
    return names, a, b, w, strength


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--votes", type=int, default=1_000_000)
    ap.add_argument("--bots", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=1000, help="dialeval bootstrap rounds")
    ap.add_argument("--fastchat-rounds", type=int, default=5, help="FastChat bootstrap rounds (timed one by one)")
    ap.add_argument("--fastchat-python", default="/tmp/bench-venv/bin/python")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    names, a, b, w, strength = synthetic_votes(args.votes, args.bots, 0.1, args.seed)
    df = pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": np.array(["model_a", "model_b", "tie"])[w]})

    # dialeval: end to end (aggregation + fit + bootstrap + table)
    t0 = time.perf_counter()
    board = bradley_terry(df, n_boot=args.rounds, seed=0)
    t_total = time.perf_counter() - t0
    # the parts, for a per-round figure
    t0 = time.perf_counter()
    bots, wins, ties = aggregate_votes(df)
    t_agg = time.perf_counter() - t0
    t0 = time.perf_counter()
    theta = fit_bt(wins, ties)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    bootstrap_bt(wins, ties, n_boot=args.rounds, seed=1, theta0=theta)
    t_boot = time.perf_counter() - t0
    ours = pd.Series(to_elo(theta), index=bots)
    true_elo = pd.Series(to_elo(strength - strength.mean()), index=names)
    res = {
        "votes": args.votes,
        "bots": args.bots,
        "dialeval": {
            "total_s_with_bootstrap": t_total,
            "aggregate_s": t_agg,
            "fit_s": t_fit,
            "bootstrap_s": t_boot,
            "rounds": args.rounds,
            "per_round_s": t_boot / args.rounds,
            # ties (10%, independent of strength) count as half wins and pull ratings together,
            # so this is a sanity check of order and scale, not an accuracy target
            "spearman_vs_truth": float(ours.rank().corr(true_elo[ours.index].rank())),
            "mean_ci_width": float((board["ci_high"] - board["ci_low"]).mean()),
        },
    }
    print(f"dialeval: total {t_total:.2f}s for fit + {args.rounds} bootstrap rounds "
          f"(aggregate {t_agg:.2f}s, fit {t_fit:.3f}s, {1000 * t_boot / args.rounds:.2f} ms/round)", flush=True)

    if args.fastchat_python and Path(args.fastchat_python).exists() and args.fastchat_rounds >= 0:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "votes.npz"
            np.savez(path, names=names, a=a, b=b, w=w)
            out = subprocess.run([args.fastchat_python, "-c", FASTCHAT_CHILD, str(path), str(args.fastchat_rounds)],
                                 capture_output=True, text=True, check=True)
        fc = json.loads(out.stdout.strip().splitlines()[-1])
        theirs = pd.Series(fc["full"])[ours.index]
        diff = (ours - theirs).abs()
        centred = ((ours - ours.mean()) - (theirs - theirs.mean())).abs()
        rt = np.array(fc["round_times"])
        tight = pd.Series(fc["tight"])[ours.index]
        res["fastchat"] = {
            "full_fit_s": fc["t_full"],
            "converged_fit_s": fc["t_tight"],
            "rounds": len(rt),
            "round_times_s": rt.tolist(),
            "per_round_median_s": float(np.median(rt)) if rt.size else None,
        }
        res["comparison"] = {
            "max_abs_rating_diff": float(diff.max()),
            "max_abs_rating_diff_centred": float(centred.max()),
            "mean_abs_rating_diff": float(diff.mean()),
            "max_abs_rating_diff_vs_converged_fastchat": float((ours - tight).abs().max()),
            "fastchat_solver_gap": float((theirs - tight).abs().max()),
            "speedup_per_round": float(np.median(rt) / (t_boot / args.rounds)) if rt.size else None,
        }
        print(f"FastChat: full fit {fc['t_full']:.1f}s, bootstrap median {np.median(rt):.1f}s/round over {len(rt)} rounds")
        print(f"ratings max |dialeval - FastChat| = {diff.max():.4f} Elo points (mean {diff.mean():.4f})")
        print(f"vs FastChat's function with sklearn run to convergence: max {(ours - tight).abs().max():.4f}; "
              f"FastChat default vs converged: {(theirs - tight).abs().max():.4f}")
        print(f"speed-up per bootstrap round: {res['comparison']['speedup_per_round']:.0f}x")
    print(json.dumps(res, indent=2))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    sys.exit(main())
