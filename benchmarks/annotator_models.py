"""Benchmark: does reliability weighting (Crowd-BT, stats/annotators.py) recover the true order of
the bots with fewer votes than plain Bradley-Terry, when some voters are spammers or adversaries?
(issue 27, part 2). Results: benchmarks/README.md, "Annotator models".

The crowd is the simulated crowd's model (docs/simulated-crowd.md), drawn in numpy for speed:
K bots `step` apart on the logit scale; an honest voter picks A with P = sigmoid((s_A - s_B) /
noise), noise ~ U(0.3, 0.9); a spammer answers at random; an adversary always votes for the weakest
bot when it plays, honestly otherwise. Each voter casts `per_voter` votes on uniformly drawn pairs;
a budget of N votes is N / per_voter voters. Per budget, `reps` studies; "correct" = the exact true
order of all K bots by the point ratings. Votes to reach 95 % correct: linear interpolation on the
budget grid (None when the grid never reaches it).

Run (bounded: about 3 minutes on one core with the defaults):
    PYTHONPATH=src .venv/bin/python benchmarks/annotator_models.py --out benchmarks/annotator_models.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dialeval.stats.annotators import crowd_bt
from dialeval.stats.bradley_terry import fit_bt

BUDGETS = (300, 600, 900, 1200, 1800, 2400, 3600, 4800)


def crowd(rng, n_votes: int, k: int, step: float, per_voter: int, spam: float, adversary: float, exact: bool = False):
    strength = step * ((k - 1) / 2 - np.arange(k))
    voters = max(1, n_votes // per_voter)
    if exact:  # exactly the shares (rounded), so a small crowd is not all honest by chance
        order = rng.permutation(voters)
        n_spam, n_adv = round(voters * spam), round(voters * adversary)
        is_spam = np.zeros(voters, bool)
        is_spam[order[:n_spam]] = True
        is_adv = np.zeros(voters, bool)
        is_adv[order[n_spam : n_spam + n_adv]] = True
    else:  # each voter a spammer / an adversary with that probability
        role = rng.random(voters)
        is_spam = role < spam
        is_adv = (role >= spam) & (role < spam + adversary)
    noise = rng.uniform(0.3, 0.9, voters)
    v = np.repeat(np.arange(voters), per_voter)[:n_votes]
    a = rng.integers(0, k, len(v))
    b = (a + rng.integers(1, k, len(v))) % k
    p = 1.0 / (1.0 + np.exp(-(strength[a] - strength[b]) / noise[v]))
    score = (rng.random(len(v)) < p).astype(float)
    score = np.where(is_spam[v], (rng.random(len(v)) < 0.5).astype(float), score)
    weakest = k - 1
    rig = is_adv[v] & ((a == weakest) | (b == weakest))
    score = np.where(rig, (a == weakest).astype(float), score)
    return a, b, score, v, voters


def correct(theta: np.ndarray) -> bool:
    return bool(np.all(np.diff(theta) < 0))  # bot 0 strongest, then 1, ...


def run(spam: float, adversary: float, args) -> dict:
    rng = np.random.default_rng(args.seed)
    rows = []
    for n in args.budgets:
        plain_ok = weighted_ok = 0
        for _ in range(args.reps):
            a, b, s, v, voters = crowd(rng, n, args.bots, args.step, args.per_voter, spam, adversary, args.exact_shares)
            w = np.zeros((args.bots, args.bots))
            np.add.at(w, (a, b), s)
            np.add.at(w, (b, a), 1 - s)
            plain_ok += correct(fit_bt(w))
            weighted_ok += correct(crowd_bt(a, b, s, v, args.bots, voters).theta)
        rows.append({"votes": n, "plain": plain_ok / args.reps, "weighted": weighted_ok / args.reps})
    return {
        "spammers": spam,
        "adversaries": adversary,
        "curve": rows,
        "votes_for_95_plain": reach(rows, "plain"),
        "votes_for_95_weighted": reach(rows, "weighted"),
    }


def reach(rows: list[dict], key: str, target: float = 0.95) -> float | None:
    for lo, hi in zip(rows, rows[1:]):
        if lo[key] >= target:
            return float(lo["votes"])
        if hi[key] >= target:
            t = (target - lo[key]) / (hi[key] - lo[key])
            return round(lo["votes"] + t * (hi["votes"] - lo["votes"]), 1)
    return float(rows[0]["votes"]) if rows and rows[0][key] >= target else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bots", type=int, default=5)
    parser.add_argument("--step", type=float, default=0.2)
    parser.add_argument("--per-voter", type=int, default=20)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument(
        "--scenario", action="append", default=None, help="SPAMMERS:ADVERSARIES shares (default 0:0, 0.2:0, 0:0.1)"
    )
    parser.add_argument("--exact-shares", action="store_true", help="exactly the shares of voters, not by chance")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    scenarios = [tuple(map(float, x.split(":"))) for x in args.scenario or ["0:0", "0.2:0", "0:0.1"]]
    results = [run(s, adv, args) for s, adv in scenarios]
    for r in results:
        p, w = r["votes_for_95_plain"], r["votes_for_95_weighted"]
        r["weighted_vs_plain"] = None if not p or not w else round(w / p, 3)
    out = {
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "scenario")},
        "results": results,
        "seconds": round(time.perf_counter() - started, 1),
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
