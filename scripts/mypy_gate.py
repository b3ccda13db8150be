"""The type gate of `make test`: mypy on src/ (configuration in pyproject.toml, pydantic plugin)
must not report more errors in any file than scripts/mypy-baseline.txt allows.

    python scripts/mypy_gate.py            # check (exit 1 when a file has more errors than its baseline)
    python scripts/mypy_gate.py --update   # write the current counts (refuses to raise any of them)

The baseline counts errors per file rather than listing them by line, so that edits elsewhere in a
file (and merges) do not break it; a file fixed to zero drops out. The counts may only go down:
fix the errors, then run --update and commit the smaller baseline. (--allow-increase exists for
the rare deliberate exception, e.g. a newer mypy that finds more.)

The modules pyproject.toml holds to mypy's strict rules (the plug-in API and the method packages:
the override that names dialeval.plugin) may have no error at all: the baseline cannot allow one.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "scripts" / "mypy-baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:\s][^:]*\.py):\d+(?::\d+)?: error: ")
HEADER = (
    "# mypy errors allowed per file (scripts/mypy_gate.py); the counts may only go down.\n"
    "# Regenerate after fixing errors: python scripts/mypy_gate.py --update\n"
)


def strict_modules(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The module patterns of the mypy override that holds the plug-in API to the strict rules."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for override in config["tool"]["mypy"].get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        if "dialeval.plugin" in modules:
            return list(modules)
    return []


def is_strict(path: str, modules: list[str]) -> bool:
    """Whether a file mypy names (src/dialeval/x/y.py) is one of `modules` ("a.b", or "a.*": a and below)."""
    name = path.removeprefix("src/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    for pattern in modules:
        if pattern.endswith(".*"):
            base = pattern[:-2]
            if name == base or name.startswith(base + "."):
                return True
        elif name == pattern:
            return True
    return False


def count_errors(output: str) -> Counter[str]:
    """Errors per file in mypy's normal output (notes are not errors)."""
    return Counter(m["path"] for line in output.splitlines() if (m := ERROR.match(line)))


def read_baseline(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        count, _, path = line.partition(" ")
        if not count.isdigit() or not path.strip():
            raise ValueError(f"{BASELINE.name}:{n}: expected '<count> <path>', got {line!r}")
        counts[path.strip()] = int(count)
    return counts


def write_baseline(counts: Counter[str]) -> str:
    rows = [f"{n} {path}" for path, n in sorted(counts.items()) if n]
    return HEADER + f"# total {sum(counts.values())}\n" + "\n".join(rows) + ("\n" if rows else "")


def over_baseline(current: Counter[str], allowed: Counter[str]) -> dict[str, tuple[int, int]]:
    """Files with more errors than allowed: {path: (errors now, allowed)}."""
    return {p: (n, allowed.get(p, 0)) for p, n in sorted(current.items()) if n > allowed.get(p, 0)}


def run_mypy() -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="write the current counts to the baseline")
    parser.add_argument("--allow-increase", action="store_true", help="with --update: let counts go up")
    args = parser.parse_args(argv)

    code, output = run_mypy()
    if code not in (0, 1):  # 2: mypy itself failed (bad configuration, crash)
        print(output, end="")
        print(f"mypy-gate: mypy did not run (exit {code})", file=sys.stderr)
        return 2
    current = count_errors(output)
    allowed = read_baseline(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else Counter()
    strict = strict_modules()
    allowed = Counter({path: n for path, n in allowed.items() if not is_strict(path, strict)})
    worse = over_baseline(current, allowed)

    if args.update:
        if worse and not args.allow_increase:
            print(_explain(output, worse), file=sys.stderr)
            print("mypy-gate: refusing to raise the baseline (fix the errors, or --allow-increase)", file=sys.stderr)
            return 1
        BASELINE.write_text(write_baseline(current), encoding="utf-8")
        print(f"mypy-gate: baseline written: {sum(current.values())} errors in {len(current)} files")
        return 0

    total, limit = sum(current.values()), sum(allowed.values())
    if worse:
        print(_explain(output, worse), file=sys.stderr)
        print(f"mypy-gate: FAILED: more mypy errors than the baseline ({total} now, {limit} allowed)", file=sys.stderr)
        return 1
    print(f"mypy-gate: ok: {total} mypy errors, baseline {limit}")
    if total < limit:
        print("mypy-gate: fewer errors than the baseline: lower it with python scripts/mypy_gate.py --update")
    return 0


def _explain(output: str, worse: dict[str, tuple[int, int]]) -> str:
    lines = [f"{path}: {now} errors, baseline allows {allowed}" for path, (now, allowed) in worse.items()]
    lines += [line for line in output.splitlines() if (m := ERROR.match(line)) and m["path"] in worse]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
