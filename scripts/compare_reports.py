"""Compare two report.json files value by value (a refactoring or speed change must not move a number).

    python scripts/compare_reports.py before/report.json after/report.json [--tolerance 1e-9]

Prints every path whose value differs (numbers within the relative tolerance count as equal) and
exits 1 when any does. Fields that name the run rather than the data are skipped: when the report
was made and the study folder's name. Used before and after a change on the published data sets
(docs/how-to/published-data.md lists the import commands).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

# what differs between two runs of the same data by construction
SKIPPED = {"generated_at", "study/name", "study/folder"}


def differences(a: Any, b: Any, path: str = "", tolerance: float = 1e-9) -> list[str]:
    if path in SKIPPED or path.rsplit("/", 1)[-1] == "generated_at":
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in the first" for k in a.keys() - b.keys()]
        out += [f"{path}/{k}: only in the second" for k in b.keys() - a.keys()]
        for k in sorted(a.keys() & b.keys(), key=str):
            out += differences(a[k], b[k], f"{path}/{k}" if path else str(k), tolerance)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items, then {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]", tolerance)]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if a == b or math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance):
            return []
        return [f"{path}: {a!r} -> {b!r}"]
    return [] if a == b else [f"{path}: {str(a)[:80]!r} -> {str(b)[:80]!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--tolerance", type=float, default=1e-9, help="relative and absolute, for numbers")
    args = parser.parse_args()
    load = lambda p: json.loads(p.read_text(encoding="utf-8"))  # noqa: E731
    found = differences(load(args.before), load(args.after), tolerance=args.tolerance)
    for line in found[:200]:
        print(line)
    print(f"{len(found)} differences between {args.before} and {args.after}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
