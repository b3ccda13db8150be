"""Benchmark-style fuzz run of every import format (issue 22): many mutated inputs per format and
mutation class, counting per class the tracebacks, hangs, silently wrong imports, bugs reported as
one line, and same-record copies refused. The bounded CI version is tests/formats/test_import_fuzz.py;
both use the mutation engine in tests/formats/import_fuzz.py.

Each case is read in-process as `dialeval import` reads it (reader, renames, text limits, record
checks) under a time limit of 10 s; with --store every case also runs the whole command in-process
(SQLite study, the import lock, the idempotency check).

Run: PYTHONPATH=src:. .venv/bin/python benchmarks/fuzz_imports.py [--cases 20] [--seed 0] [--store]
(--cases: cases per format and class; the target is 0 in every column but ok).
"""

from __future__ import annotations

import argparse
import collections
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.formats import import_fuzz as fuzz  # noqa: E402

VERDICTS = ("ok", "traceback", "hang", "silently-wrong", "bug", "refused")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20, help="cases per format and mutation class")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", action="store_true", help="also run the whole import command (SQLite)")
    parser.add_argument("--show", type=int, default=3, help="failures to print per class")
    args = parser.parse_args()
    rnd = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="dialeval-fuzz-"))
    counts: dict[str, collections.Counter] = {k: collections.Counter() for k in fuzz.CLASSES}
    failures: dict[str, list[str]] = collections.defaultdict(list)
    seeds = fuzz.seeds()
    started = time.perf_counter()
    n = 0
    try:
        originals = [fuzz.original_view(s, root / f"seed-{i}") for i, s in enumerate(seeds)]
        for klass in fuzz.CLASSES:
            for i, seed in enumerate(seeds):
                for _ in range(args.cases):
                    n += 1
                    case = fuzz.mutate(seed, klass, rnd)
                    folder = root / f"case-{n}"
                    outcome = fuzz.judge_case(case, folder, originals[i], store=args.store)
                    counts[klass][outcome.verdict] += 1
                    if outcome.verdict != "ok":
                        failures[klass].append(f"{seed.fmt}: {outcome.verdict}: {outcome.detail}")
                    shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    elapsed = time.perf_counter() - started
    formats = ", ".join(sorted({s.fmt for s in seeds}))
    print(f"{n} cases in {elapsed:.0f} s ({len(seeds)} seeds: {formats}; store={args.store})")
    print(f"{'class':16}" + "".join(f"{v:>16}" for v in ("cases", *VERDICTS)))
    total: collections.Counter = collections.Counter()
    for klass in fuzz.CLASSES:
        c = counts[klass]
        total.update(c)
        print(f"{klass:16}{sum(c.values()):>16}" + "".join(f"{c[v]:>16}" for v in VERDICTS))
    print(f"{'all':16}{sum(total.values()):>16}" + "".join(f"{total[v]:>16}" for v in VERDICTS))
    for klass, items in failures.items():
        for item in items[: args.show]:
            print(f"  {klass}: {item}")
    return 0 if sum(total.values()) == total["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
