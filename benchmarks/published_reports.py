"""Benchmark: the full report (analysis + HTML + plots) of each published data set.

Target (issue "Analysis and reports"): the three together in under 30 s on this 2-core machine.
Run: .venv/bin/python benchmarks/published_reports.py [--shared ../shared/data] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from dialeval.formats.dialogue_eval import read_dialogue_eval_csv
from dialeval.formats.spot_the_bot import read_spot_the_bot
from dialeval.report import build_report, write_report


def one(name: str, read) -> float:
    start = time.perf_counter()
    dataset = read()
    dataset.meta["study"] = name
    report = build_report(dataset, {})
    with tempfile.TemporaryDirectory() as out:
        write_report(report, out)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    data = Path(args.shared)
    jobs = {
        "dialogue-eval free run 1": lambda: read_dialogue_eval_csv(
            data / "dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv"
        ),
        "spot-the-bot dailydialog": lambda: read_spot_the_bot(data / "spot-the-bot", "dailydialog"),
        "spot-the-bot empathetic": lambda: read_spot_the_bot(data / "spot-the-bot", "empathetic"),
    }
    results = {}
    for name, read in jobs.items():
        times = [one(name, read) for _ in range(args.repeat)]
        results[name] = {"median_s": round(statistics.median(times), 2), "runs": [round(t, 2) for t in times]}
    results["all three (sum of medians)"] = round(sum(r["median_s"] for r in results.values()), 2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
