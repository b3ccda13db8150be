"""Benchmark at the user's door: `dialeval report` on a small study of every method, and `dialeval --help`.

Targets (issue 25, part 3): `dialeval report` of a small study < 1.5 s wall on a quiet machine,
`dialeval --help` < 0.3 s. Each command is the installed `dialeval` run in a subprocess; each
figure is the median of --runs runs: wall time, CPU time (user + sys of the child and of the
processes it waited for, the report's figure worker: os.wait4) and peak RSS (the largest of them),
with the load average before and after (the machine is shared).

Beside them, the limits measured in the same run: the interpreter's bare start (`python -c pass`),
the CLI's import (`python -c "import dialeval.cli"`), which every command pays before it does
anything, and the libraries every report's own process cannot do without, imported and nothing
else (pandas, scipy.special and scipy.optimize for the tie models, SQLAlchemy for the store, Jinja2
for the page; matplotlib is imported by the figure worker it forks, report/figure_worker.py, on the
other core): the floor of a report's wall time as long as it uses them; scipy.stats imported alone,
which the reports of the methods whose statistics come from it (t-tests, Mann-Whitney U,
chi-squared, scikit-learn's TF-IDF of the ACUTE justifications) add to that floor; and the arena
report with its figures left out (no worker, matplotlib never imported, nothing drawn or
rendered): what the figures still add to the wall time.

The studies: one per method, `dialeval init METHOD`, `dialeval generate` (the conversations or
answers of the methods that show pre-made ones; a live method's generate says there is nothing to
make) and 6 simulated annotators (seed 1), made once in a temporary folder (not timed).

Run: .venv/bin/python benchmarks/cli_start.py [--runs 7] [--json benchmarks/cli_start.json]
A worktree's code: PYTHONPATH=$PWD/src .venv/bin/python benchmarks/cli_start.py (children inherit it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIALEVAL = str(Path(sys.executable).with_name("dialeval"))
TARGETS = {"report": 1.5, "help": 0.3}  # seconds of wall time, on a quiet machine ("report": each method's)
LIBRARIES = "import numpy, pandas, scipy.special, scipy.optimize, sqlalchemy.orm, jinja2"
SIMULATED_ANNOTATORS = 6


# The report command with `figures` (report/build.py) replaced by one that draws nothing, and no figure
# worker forked (report/figure_worker.py): matplotlib is never imported.
WITHOUT_FIGURES = (
    "import sys, dialeval.report.build as build, dialeval.report.figure_worker as worker; "
    "build.figures = lambda report: {}; worker.start = lambda: None; "
    "from dialeval.cli import app; app(['report', sys.argv[1]])"
)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# The children run as an installed package runs: with its bytecode. pip compiles a wheel's modules
# when it installs them; an editable install in a shell with PYTHONDONTWRITEBYTECODE=1 (this
# machine's) compiled every dialeval module from source on every run (0.05 s of `--help` alone).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_package() -> None:
    """Write the bytecode of the dialeval package that runs (a worktree's, with PYTHONPATH)."""
    found = subprocess.run(
        [sys.executable, "-c", "import dialeval, os; print(os.path.dirname(dialeval.__file__))"],
        check=True,
        capture_output=True,
        text=True,
        env=CHILD_ENV,
    )
    subprocess.run([sys.executable, "-m", "compileall", "-q", found.stdout.strip()], check=True, env=CHILD_ENV)


def once(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one run of `cmd`, its output discarded."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=CHILD_ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def timed(cmd: list[str], runs: int) -> dict:
    """Medians over `runs` runs (after one unmeasured run that warms the file cache)."""
    once(cmd)
    before = load()
    walls, cpus, rss = zip(*(once(cmd) for _ in range(runs)), strict=True)
    return {
        "command": " ".join(Path(c).name if c == cmd[0] else c for c in cmd),
        "runs": runs,
        "wall_s": round(statistics.median(walls), 3),
        "wall_s_min_max": [round(min(walls), 3), round(max(walls), 3)],
        "cpu_s": round(statistics.median(cpus), 3),
        "peak_rss_mb": round(max(rss), 1),
        "load_before": before,
        "load_after": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, default=HERE / "cli_start.json")
    args = parser.parse_args()
    compile_package()
    from dialeval import METHODS

    with tempfile.TemporaryDirectory(prefix="dialeval-start-") as tmp:
        studies = {method: str(Path(tmp) / method) for method in METHODS}
        for method, study in studies.items():
            for step in (
                ["init", method, study],
                ["generate", study],
                ["simulate", study, "--annotators", str(SIMULATED_ANNOTATORS), "--seed", "1", "--no-report"],
            ):
                subprocess.run([DIALEVAL, *step], check=True, capture_output=True)
        results = {
            "python -c pass": timed([sys.executable, "-c", "pass"], args.runs),
            "import dialeval.cli": timed([sys.executable, "-c", "import dialeval.cli"], args.runs),
            "report's libraries": timed([sys.executable, "-c", LIBRARIES], args.runs),
            "scipy.stats": timed([sys.executable, "-c", "import scipy.stats"], args.runs),
            "help": timed([DIALEVAL, "--help"], args.runs),
            **{f"report {method}": timed([DIALEVAL, "report", study], args.runs) for method, study in studies.items()},
            "report arena without figures": timed([sys.executable, "-c", WITHOUT_FIGURES, studies["arena"]], args.runs),
        }
    out = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "python": sys.version.split()[0],
        "targets_wall_s": TARGETS,
        "results": results,
    }
    args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(out["uptime"])
    for name, r in results.items():
        goal = TARGETS.get(name) or (
            TARGETS["report"] if name.startswith("report ") and "without" not in name else None
        )
        target = f"  (target < {goal} s)" if goal else "  (limit)"
        print(
            f"{name:30s} wall {r['wall_s']:.3f} s (min {r['wall_s_min_max'][0]:.3f}), CPU {r['cpu_s']:.3f} s, "
            f"{r['peak_rss_mb']:.0f} MB, load {r['load_before']}{target}"
        )
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
