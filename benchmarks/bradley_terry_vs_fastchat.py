"""Bradley–Terry: dialeval.stats.bradley_terry vs FastChat's MLE Elo (fschat 0.2.36).

1,000,000 synthetic pairwise votes among 100 bots (`--tie-share` ties, default 10%; true
log-strengths ~ N(0, `--spread`)). dialeval fits the aggregated counts and runs 1,000 multinomial
bootstrap rounds; FastChat's `fastchat.serve.monitor.elo_analysis.compute_elo_mle_with_tie`
(per-vote logistic regression) is run once on all votes and for a few bootstrap rounds with its own
`get_bootstrap_result`, each round timed.

What FastChat's users see: `report_elo_analysis_results(rating_system="bt")` (the default) shows
as "rating" the point estimate `compute_elo_mle_with_tie(battles)` on all votes (not the bootstrap
median, which only the online-Elo mode uses), printed with `.0f`; the bootstrap only supplies
rating_q025/rating_q975. Ratings are 1000 + 400 * coefficient (mean 1000, since L-BFGS from zero
keeps the coefficients' sum at zero), shifted so llama-13b = 800 only if llama-13b is present
(not here). So the like-for-like comparison is point estimate vs point estimate, both mean 1000.

FastChat's LogisticRegression keeps scikit-learn's defaults (lbfgs, tol=1e-4, max_iter=100, C=1).
From scikit-learn 1.4 the lbfgs loss is averaged over rows, so tol=1e-4 stops it early on large
data; the script therefore also runs FastChat's function with the solver run to convergence, and
dialeval with FastChat's exact C=1 penalty, to separate solver error from model differences. Run
the child with different FastChat venvs (e.g. scikit-learn 1.3.2 vs current) to see both.

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
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dialeval.stats.bradley_terry import aggregate_votes, bootstrap_bt, bradley_terry, fit_bt, to_elo

FASTCHAT_CHILD = r"""
import json, os, sys, time, types, warnings
import numpy as np, pandas as pd
import fastchat
pkg = types.ModuleType("fastchat.model")
pkg.__path__ = [os.path.join(os.path.dirname(fastchat.__file__), "model")]
sys.modules["fastchat.model"] = pkg
from fastchat.serve.monitor.elo_analysis import compute_elo_mle_with_tie, get_bootstrap_result
import functools
import sklearn
import sklearn.linear_model as sk_lm
from sklearn.exceptions import ConvergenceWarning

# compute_elo_mle_with_tie does `from sklearn.linear_model import LogisticRegression` at call time;
# this subclass only records the solver's iteration count (settings untouched)
ITERS = []
class Recording(sk_lm.LogisticRegression):
    def fit(self, *a, **k):
        r = super().fit(*a, **k)
        ITERS.append(int(np.ravel(self.n_iter_)[0]))
        return r
shipped = sk_lm.LogisticRegression
sk_lm.LogisticRegression = Recording
warnings.simplefilter("always", ConvergenceWarning)

data = np.load(sys.argv[1], allow_pickle=False)
names = data["names"]
df = pd.DataFrame({"model_a": names[data["a"]], "model_b": names[data["b"]],
                   "winner": np.array(["model_a", "model_b", "tie"])[data["w"]]})
rounds = int(sys.argv[2])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    t = time.perf_counter()
    full = compute_elo_mle_with_tie(df)  # what report_elo_analysis_results(rating_system="bt") shows as "rating"
    t_full = time.perf_counter() - t
    it_full = ITERS[-1]
    times = []
    boots = []
    np.random.seed(42)  # elo_analysis.py's __main__ seeds 42
    for _ in range(rounds):
        t = time.perf_counter()
        b = get_bootstrap_result(df, compute_elo_mle_with_tie, num_round=1)
        times.append(time.perf_counter() - t)
        boots.append(b.iloc[0].to_dict())
    it_boot = ITERS[1:]
n_warn = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
# FastChat's function once more with sklearn's solver run to convergence (same objective and penalty),
# to tell solver tolerance apart from model differences
sk_lm.LogisticRegression = functools.partial(Recording, tol=1e-10, max_iter=10000)
t = time.perf_counter()
tight = compute_elo_mle_with_tie(df)
t_tight = time.perf_counter() - t
sk_lm.LogisticRegression = shipped
print(json.dumps({"full": full.to_dict(), "t_full": t_full, "round_times": times, "boot": boots,
                  "tight": tight.to_dict(), "t_tight": t_tight, "iters_full": it_full, "iters_boot": it_boot,
                  "iters_tight": ITERS[-1], "convergence_warnings": n_warn, "sklearn": sklearn.__version__,
                  "fastchat": fastchat.__version__}))
"""

# FastChat's objective: LogisticRegression(C=1) on every vote duplicated (2N rows), coefficients in
# log10 units (X = +-ln 10), i.e. 2 * (-loglik) + ||theta||^2 / (2 ln(10)^2) in natural-log strengths
# theta; on dialeval's per-vote scale that is a ridge l2 = 1 / (2 ln(10)^2).
FASTCHAT_L2 = 1.0 / (2.0 * math.log(10.0) ** 2)


def synthetic_votes(
    n_votes: int, n_bots: int, tie_share: float, seed: int, spread: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Uniform random pairs; true natural-log strengths ~ N(0, spread) (spread 1 = sd 174 Elo points);
    Bradley-Terry outcome, then a `tie_share` of votes (independent of strength) replaced by ties."""
    rng = np.random.default_rng(seed)
    strength = spread * rng.standard_normal(n_bots)
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
    ap.add_argument(
        "--spread",
        type=float,
        default=1.0,
        help="sd of the true natural-log strengths (1.0 = 174 Elo points; the original setting)",
    )
    ap.add_argument("--tie-share", type=float, default=0.1, help="share of votes replaced by ties")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    names, a, b, w, strength = synthetic_votes(args.votes, args.bots, args.tie_share, args.seed, args.spread)
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
    boot = bootstrap_bt(wins, ties, n_boot=args.rounds, seed=1, theta0=theta)
    t_boot = time.perf_counter() - t0
    ours = pd.Series(to_elo(theta), index=bots)
    ours_boot = pd.DataFrame(to_elo(boot), columns=bots)
    # same objective as FastChat's LogisticRegression(C=1) (ridge included), for the like-for-like check
    ours_fc_penalty = pd.Series(to_elo(fit_bt(wins, ties, l2=FASTCHAT_L2)), index=bots)
    true_elo = pd.Series(to_elo(strength - strength.mean()), index=names)
    res = {
        "votes": args.votes,
        "bots": args.bots,
        "spread": args.spread,
        "true_sd_elo": float(true_elo.std()),
        "tie_share": args.tie_share,
        "seed": args.seed,
        "dialeval": {
            "total_s_with_bootstrap": t_total,
            "aggregate_s": t_agg,
            "fit_s": t_fit,
            "bootstrap_s": t_boot,
            "rounds": args.rounds,
            "per_round_s": t_boot / args.rounds,
            "rating_sd": float(ours.std()),
            "rating_range": [float(ours.min()), float(ours.max())],
            # ties (independent of strength) count as half wins and pull ratings together,
            # so this is a sanity check of order and scale, not an accuracy target
            "spearman_vs_truth": float(ours.rank().corr(true_elo[ours.index].rank())),
            "mean_ci_width": float((board["ci_high"] - board["ci_low"]).mean()),
            "mean_boot_sd": float(ours_boot.std().mean()),
        },
    }
    print(
        f"data: {args.votes} votes, {args.bots} bots, true sd {true_elo.std():.0f} Elo, ties {args.tie_share:.0%}; "
        f"fitted ratings sd {ours.std():.0f}, range {ours.min():.0f}..{ours.max():.0f}"
    )
    print(
        f"dialeval: total {t_total:.2f}s for fit + {args.rounds} bootstrap rounds "
        f"(aggregate {t_agg:.2f}s, fit {t_fit:.3f}s, {1000 * t_boot / args.rounds:.2f} ms/round)",
        flush=True,
    )

    if args.fastchat_python and Path(args.fastchat_python).exists() and args.fastchat_rounds >= 0:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "votes.npz"
            np.savez(path, names=names, a=a, b=b, w=w)
            out = subprocess.run(
                [args.fastchat_python, "-c", FASTCHAT_CHILD, str(path), str(args.fastchat_rounds)],
                capture_output=True,
                text=True,
                check=True,
            )
        fc = json.loads(out.stdout.strip().splitlines()[-1])
        # FastChat's leaderboard "rating" (rating_system="bt") is compute_elo_mle_with_tie on all votes,
        # displayed as f"{rating:.0f}"; the bootstrap only gives rating_q025/rating_q975.
        theirs = pd.Series(fc["full"])[ours.index]
        diff = (ours - theirs).abs()
        centred = ((ours - ours.mean()) - (theirs - theirs.mean())).abs()
        shown_differs = int((ours.round() != theirs.round()).sum())
        rt = np.array(fc["round_times"])
        tight = pd.Series(fc["tight"])[ours.index]
        fc_boot = pd.DataFrame(fc["boot"])[ours.index] if fc["boot"] else None
        res["fastchat"] = {
            "version": fc["fastchat"],
            "sklearn": fc["sklearn"],
            "full_fit_s": fc["t_full"],
            "converged_fit_s": fc["t_tight"],
            "lbfgs_iterations_full": fc["iters_full"],
            "lbfgs_iterations_boot": fc["iters_boot"],
            "lbfgs_iterations_converged": fc["iters_tight"],
            "convergence_warnings": fc["convergence_warnings"],
            "mean_rating": float(theirs.mean()),
            "rounds": len(rt),
            "round_times_s": rt.tolist(),
            "per_round_median_s": float(np.median(rt)) if rt.size else None,
        }
        res["comparison"] = {
            # what users see: full-data point estimates, both mean 1000 (no llama-13b to anchor)
            "max_abs_rating_diff": float(diff.max()),
            "mean_abs_rating_diff": float(diff.mean()),
            "max_abs_rating_diff_centred": float(centred.max()),
            "bots_whose_displayed_integer_differs": shown_differs,
            # converged solver: the MLE FastChat's code defines
            "max_abs_rating_diff_vs_converged_fastchat": float((ours - tight).abs().max()),
            "max_abs_diff_same_penalty_vs_converged_fastchat": float((ours_fc_penalty - tight).abs().max()),
            "fastchat_solver_gap": float((theirs - tight).abs().max()),
            "speedup_per_round": float(np.median(rt) / (t_boot / args.rounds)) if rt.size else None,
        }
        if fc_boot is not None and len(fc_boot) >= 2:
            # bootstrap spread (pooled over bots; FastChat has few rounds, so this is rough)
            res["comparison"]["boot_sd_mean_fastchat"] = float(fc_boot.std().mean())
            res["comparison"]["boot_sd_mean_dialeval"] = float(ours_boot.std().mean())
        print(
            f"FastChat {fc['fastchat']} (scikit-learn {fc['sklearn']}): full fit {fc['t_full']:.1f}s "
            f"({fc['iters_full']} L-BFGS iterations, {fc['convergence_warnings']} ConvergenceWarnings), "
            f"bootstrap median {np.median(rt):.1f}s/round over {len(rt)} rounds (iterations {fc['iters_boot']})"
        )
        print(
            f"ratings max |dialeval - FastChat as shipped| = {diff.max():.4f} Elo points (mean {diff.mean():.4f}); "
            f"displayed integers differ for {shown_differs}/{len(ours)} bots; "
            f"FastChat mean rating {theirs.mean():.4f}"
        )
        print(
            f"vs FastChat's function with sklearn run to convergence ({fc['iters_tight']} iterations): "
            f"max {(ours - tight).abs().max():.4f} (with FastChat's C=1 ridge: "
            f"{(ours_fc_penalty - tight).abs().max():.5f}); "
            f"FastChat shipped vs converged: {(theirs - tight).abs().max():.4f}"
        )
        if "boot_sd_mean_fastchat" in res["comparison"]:
            c = res["comparison"]
            print(
                f"bootstrap sd (mean over bots): dialeval {c['boot_sd_mean_dialeval']:.2f}, "
                f"FastChat {c['boot_sd_mean_fastchat']:.2f} ({len(rt)} rounds)"
            )
        print(f"speed-up per bootstrap round: {res['comparison']['speedup_per_round']:.0f}x")
    print(json.dumps(res, indent=2))
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    sys.exit(main())
