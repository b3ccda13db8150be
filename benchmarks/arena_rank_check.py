"""Cross-check: dialeval's Arena leaderboard against the `arena-rank` package (LMArena's own code).

Fits both on ../shared/data/arena-judges/human.jsonl (26,919 battles, ties as half wins) and prints
the largest difference in rating and in the 95% sandwich bounds, after centring both at the same
mean (arena-rank leaves the mean where its optimiser started). Target: within 0.5 Elo points.

arena-rank pins numpy==2.3.3 and pulls jax and datasets, so it is not in the `test` extra; install
it with the `crosscheck` extra (`pip install -e ".[crosscheck]"`). tests/analysis/test_arena_analysis.py
holds its numbers frozen.
Run: .venv/bin/python benchmarks/arena_rank_check.py [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dialeval.formats.arena import read_arena_battles
from dialeval.methods.arena.analysis import analyze_arena


def arena_rank(path: Path) -> pd.DataFrame:
    import jax

    jax.config.update("jax_enable_x64", True)  # float64, as dialeval
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.utils.data_utils import PairDataset

    data = PairDataset.from_pandas(pd.read_json(path, lines=True))
    r = BradleyTerry(n_competitors=len(data.competitors)).compute_ratings_and_cis(data, ci_method="sandwich")
    return pd.DataFrame(
        {
            "rating": np.asarray(r["ratings"]),
            "low": np.asarray(r["rating_lower"]),
            "high": np.asarray(r["rating_upper"]),
        },
        index=r["competitors"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    path = args.shared / "arena-judges" / "human.jsonl"
    start = time.perf_counter()
    theirs = arena_rank(path)
    t_theirs = time.perf_counter() - start
    start = time.perf_counter()
    report = analyze_arena(read_arena_battles(path), n_boot=1000)
    t_ours = time.perf_counter() - start
    ours = pd.DataFrame(report["systems"]).set_index("name")
    offset = theirs["rating"].mean() - ours["score"].mean()
    diff = {
        "rating": (ours["score"] + offset - theirs["rating"]).abs().max(),
        "sandwich_low": (ours["sandwich_low"] + offset - theirs["low"]).abs().max(),
        "sandwich_high": (ours["sandwich_high"] + offset - theirs["high"]).abs().max(),
    }
    for key, value in diff.items():
        print(f"max |dialeval - arena-rank| {key}: {value:.4f} Elo")
    print(
        f"seconds: arena-rank {t_theirs:.1f} (fit + sandwich), dialeval {t_ours:.1f} (fit + sandwich + 1000 bootstrap)"
    )
    with open("/proc/loadavg") as handle:
        print("load average:", handle.read().split()[:3])
    if max(diff.values()) >= 0.5:
        raise SystemExit("FAIL: a difference of 0.5 Elo or more")
    print("OK: within 0.5 Elo")


if __name__ == "__main__":
    main()
