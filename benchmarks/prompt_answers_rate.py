"""Benchmark: `dialeval generate` on a prompt-set study against a 100 ms OpenAI-compatible stub.

The question of issue 23: answers per second against concurrency / latency, as generation_rate.py
measures self-chats. Here the whole path of `generate` runs: the study's prompt file is read, every
`openai` bot answers every prompt through the method's generate hook (methods/prompts/answers.py),
and each answer is stored in the study's SQLite database as it comes. The stub is
generation_rate.py's raw keep-alive server in its own process (answers every POST after `latency`).

Run: PYTHONPATH=src:. .venv/bin/python benchmarks/prompt_answers_rate.py [--latency 0.1] [--concurrency 4,16,64]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.generation_rate import stub_process
from dialeval.methods.prompts.answers import generate_answers
from dialeval.study import open_study


def run(concurrency: int, bots: int, prompts: int, latency: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp, stub_process(latency, True, "raw") as url:
        folder = Path(tmp) / "bench"
        folder.mkdir()
        (folder / "prompts.jsonl").write_text(
            "".join(json.dumps({"id": f"p{i}", "prompt": f"Question {i}?"}) + "\n" for i in range(prompts))
        )
        per_bot = 2 * concurrency // bots
        study = {
            "name": "bench",
            "method": "prompts",
            "bots": [
                {
                    "name": f"b{k}",
                    "type": "openai",
                    "options": {"base_url": str(url), "model": "stub", "max_concurrency": per_bot},
                }
                for k in range(bots)
            ],
            "protocol": {"prompts": "prompts.jsonl"},
        }
        (folder / "study.yaml").write_text(yaml.safe_dump(study))
        opened = open_study(folder)
        try:
            c0, t0 = time.process_time(), time.perf_counter()
            result = generate_answers(opened, concurrency=concurrency)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        finally:
            opened.close()
    answers = len(result.made)
    ideal = concurrency / latency
    return {
        "concurrency": concurrency,
        "bots": bots,
        "bot_max_concurrency": per_bot,
        "answers": answers,
        "failed": len(result.failed),
        "seconds": round(wall, 2),
        "answers_per_s": round(answers / wall, 1),
        "ideal_per_s": ideal,
        "share_of_ideal": round(answers / wall / ideal, 3),
        "max_in_flight": url.state.max_in_flight,
        "client_cpu_ms_per_answer": round(1000 * cpu / max(answers, 1), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", default="4,16,64")
    parser.add_argument("--seconds", type=float, default=12.0, help="ideal duration of each run")
    args = parser.parse_args()
    for concurrency in (int(c) for c in args.concurrency.split(",")):
        bots = {4: 2, 16: 4}.get(concurrency, 8)
        prompts = max(4, int(args.seconds * concurrency / args.latency / bots))
        r = run(concurrency, bots, prompts, args.latency)
        with open("/proc/loadavg") as f:
            r["loadavg"] = f.read().split()[:3]
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
