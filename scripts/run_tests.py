"""The test suite as `make test` runs it: pytest processes side by side, one per core, taking parts of
the suite from one queue.

    python scripts/run_tests.py              # the whole suite, two workers
    python scripts/run_tests.py tests/stats  # any pytest arguments: one plain pytest run
    DIALEVAL_TEST_WORKERS=3 python scripts/run_tests.py
    DIALEVAL_TEST_DURATIONS=t.json python scripts/run_tests.py  # and every test's seconds in t.json

Most tests wait on something outside the pytest process (a `dialeval` subprocess, a server, the
browser), so one process leaves a core idle. pytest-xdist's workers mix test files across processes
in an order the suite does not support (a browser test's event loop stays open for the session, so
asyncio tests must not come after it in the same process). Here each part (a folder of tests/, or one
of its slow files) is a plain pytest run of its own, so no part shares a process with another; the
parts go longest first (by the seconds measured in CI, EXPECTED_SECONDS) to whichever worker is free,
so the workers end together even when an estimate is off. Each part's output is printed whole when it
ends; the last lines are a table of every part's time, the place to look when the suite gets slower.
"""

from __future__ import annotations

import compileall
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=5"]

# The doctests of src/ and the top-level files of tests/ are parts too.
TOP_LEVEL = "tests/test_*.py"

# Seconds each part took in a CI run (fresh clone, 2 cores, the other worker busy): the queue's order.
# A file listed here is a part of its own (its folder runs without it); a folder or file not listed
# counts as DEFAULT_SECONDS. Refresh from the table run_tests.py prints at the end of a run.
EXPECTED_SECONDS: dict[str, float] = {
    # the fresh-clone CI run of 2026-11-28 14:29-14:45 (`CI=true bash .ci/run`, HEAD e7814f3: the
    # whole suite 845 s, 968 s with set-up)
    "tests/cli": 294,
    "tests/e2e": 235,
    "tests/concurrency": 127,
    "tests/e2e/test_pages.py": 120,
    "tests/judges": 83,
    "tests/web": 80,
    "tests/simulate": 65,
    "tests/cli/test_cli_prompts.py": 63,
    "tests/stats": 59,
    "tests/cli/test_published_data_cli.py": 49,
    "tests/cli/test_cli_ranking.py": 42,
    TOP_LEVEL: 38,
    "tests/cli/test_cli_annotators.py": 38,
    "tests/report": 36,
    "tests/cli/test_backup_restore.py": 35,
    "tests/cli/test_cli_commands.py": 30,
    "tests/analysis": 30,
    "tests/formats": 29,
    "tests/cli/test_cli_never_surprises.py": 28,
    "tests/methods": 25,
    "tests/bots": 25,
    "tests/config": 17,
    "src": 14,
    "tests/packaging": 10,
    "tests/dialogue": 10,
    "tests/store": 8,
    "tests/docs": 5,
    "tests/quality": 2,
}
DEFAULT_SECONDS = 60.0

# The gates of `make test` that take minutes run in the same queue as the tests (each a command, not
# a pytest run), instead of alone before them while a core idles: the lint and type gates (mypy
# ~30 s) and the installed-wheel check (~60 s, the suite's completed demo included). `make test`
# runs the quick ones (licences, the documentation site) before this script.
GATES: dict[str, list[str]] = {
    "scripts/lint.sh": ["bash", "scripts/lint.sh"],
    "scripts/check_wheel.py": [sys.executable, "scripts/check_wheel.py"],
}
# lint.sh: 27 s in that run (mypy no longer reads torch and transformers, pyproject.toml: it took 111 s)
GATE_SECONDS = {"scripts/lint.sh": 27.0, "scripts/check_wheel.py": 60.0}

# Parts that go first whatever their length: the wheel check runs the installed `dialeval demo
# --simulate 8 --no-serve` into DIALEVAL_TEST_SHARED, the completed demo (tests/conftest.py, ~1 min)
# that five parts read, which then do not run the same command again; taken first, it is made before
# they ask instead of them waiting on its lock with a core idle (the parts after it, by length, do not
# read it).
FIRST = ("scripts/check_wheel.py",)


@dataclass
class Part:
    name: str  # what the table shows: a folder, a file, TOP_LEVEL or a gate
    args: list[str]  # what pytest gets
    expected: float
    command: list[str] | None = None  # a gate: this command instead of pytest
    seconds: float = 0.0
    code: int | None = None
    output: str = ""
    tests: dict[str, float] = field(default_factory=dict)  # file -> seconds, from the JUnit XML
    cases: dict[str, float] = field(default_factory=dict)  # test id -> seconds, from the JUnit XML


def test_files(folder: Path) -> list[Path]:
    """The test files pytest collects under a folder (tests/e2e's node_modules is not ours)."""
    return sorted(p for p in folder.rglob("test_*.py") if "node_modules" not in p.parts)


def test_folders() -> list[Path]:
    """Every folder of tests/ that holds a test file (not all have an __init__.py)."""
    return sorted(p for p in (REPO / "tests").iterdir() if p.is_dir() and p.name != "__pycache__" and test_files(p))


def parts() -> list[Part]:
    """Every test of the suite in exactly one part, longest expected first."""
    found: list[Part] = []
    split_files = {name for name in EXPECTED_SECONDS if name.endswith(".py")}
    for folder in test_folders():
        rel = f"tests/{folder.name}"
        own = sorted(f for f in split_files if f.startswith(rel + "/"))
        for file in own:
            found.append(Part(file, [file], EXPECTED_SECONDS[file]))
        ignores = [f"--ignore={f}" for f in own]
        found.append(Part(rel, [rel, *ignores], EXPECTED_SECONDS.get(rel, DEFAULT_SECONDS)))
    top = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_*.py"))
    found.append(Part(TOP_LEVEL, top, EXPECTED_SECONDS.get(TOP_LEVEL, DEFAULT_SECONDS)))
    found.append(Part("src", ["src"], EXPECTED_SECONDS.get("src", DEFAULT_SECONDS)))
    return sorted(found, key=lambda p: -p.expected)


def gates() -> list[Part]:
    return [Part(name, [], GATE_SECONDS[name], command=command) for name, command in GATES.items()]


def case_seconds(junit: Path) -> dict[str, float]:
    """Seconds per test (setup, call and teardown) from pytest's JUnit XML, by "file::name"."""
    seconds: dict[str, float] = {}
    if not junit.exists():
        return seconds
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        name = f"{source_file(case.get('classname') or '')}::{case.get('name')}"
        seconds[name] = seconds.get(name, 0.0) + float(case.get("time") or 0.0)
    return seconds


def file_seconds(cases: dict[str, float]) -> dict[str, float]:
    """Seconds per test file, the sum of its tests."""
    seconds: dict[str, float] = {}
    for name, spent in cases.items():
        file = name.split("::", 1)[0]
        seconds[file] = seconds.get(file, 0.0) + spent
    return seconds


def source_file(classname: str) -> str:
    """The file of a JUnit class name ("tests.cli.test_x.TestY" -> "tests/cli/test_x.py"); a doctest's
    module name as it is."""
    dotted = classname.split(".")
    for end in range(len(dotted), 0, -1):
        candidate = "/".join(dotted[:end]) + ".py"
        if (REPO / candidate).exists():
            return candidate
    return classname


def run_part(part: Part, tmp: Path, index: int) -> None:
    junit = tmp / f"part{index}.xml"
    started = time.monotonic()
    pytest = [*PYTEST, f"--basetemp={tmp / f'basetemp{index}'}", f"--junitxml={junit}", *part.args]
    done = subprocess.run(
        part.command or pytest,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # one disk cache for every part (the bundled corpus, retrieval indexes: built once, not per
        # part); tests that need an empty one set their own
        # and one folder for what several parts read (tests/conftest.py: completed_demo)
        env={
            **os.environ,
            "DIALEVAL_TEST_PART": part.name,
            "DIALEVAL_CACHE_DIR": str(tmp / "cache"),
            "DIALEVAL_TEST_SHARED": str(tmp / "shared"),
            "PY": sys.executable,  # the interpreter scripts/lint.sh runs ruff and mypy with
        },
    )
    part.seconds = time.monotonic() - started
    part.code = done.returncode
    part.output = done.stdout
    part.cases = case_seconds(junit)
    part.tests = file_seconds(part.cases)


def main(args: list[str]) -> int:
    if args:  # a chosen part of the suite: plain pytest
        return subprocess.call([*PYTEST, *args], cwd=REPO)
    workers = int(os.environ.get("DIALEVAL_TEST_WORKERS", "2"))
    # Bytecode for src/ before any part starts. pip compiles what it installs, but dialeval is
    # installed editable, and where PYTHONDONTWRITEBYTECODE is set (it is on our development machines) no
    # process writes what it compiled: every `dialeval` subprocess of the tests compiled the modules
    # it imports again (~0.35 s of a small `dialeval report`, medians of 5 alternating runs).
    compileall.compile_dir(REPO / "src", quiet=1, workers=workers)
    queue = sorted(parts() + gates(), key=lambda p: (p.name not in FIRST, -p.expected))
    started = time.monotonic()
    lock = threading.Lock()
    print_lock = threading.Lock()

    with tempfile.TemporaryDirectory(prefix="dialeval-tests-") as tmp_name:
        tmp = Path(tmp_name)

        def worker() -> None:
            while True:
                with lock:
                    if not pending:
                        return
                    index, part = pending.pop(0)
                run_part(part, tmp, index)
                with print_lock:
                    print(f"===== {part.name}: exit {part.code}, {part.seconds:.0f} s =====", flush=True)
                    sys.stdout.write(part.output)
                    sys.stdout.flush()

        pending = list(enumerate(queue))
        threads = [threading.Thread(target=worker) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    wall = time.monotonic() - started
    files = sorted(((s, f) for p in queue for f, s in p.tests.items()), reverse=True)
    print("===== the slowest test files (seconds, setup included) =====")
    for seconds, name in files[:20]:
        print(f"{seconds:8.1f}  {name}")
    print(f"===== parts ({workers} workers; seconds, expected, exit code) =====")
    for part in sorted(queue, key=lambda p: -p.seconds):
        print(f"{part.seconds:8.1f}  {part.expected:8.1f}  {part.code}  {part.name}")
    # DIALEVAL_TEST_DURATIONS=path.json keeps every test's seconds (the place to start when the suite
    # must get faster)
    durations = os.environ.get("DIALEVAL_TEST_DURATIONS")
    if durations:
        cases = {name: round(s, 2) for p in queue for name, s in p.cases.items()}
        Path(durations).write_text(json.dumps(dict(sorted(cases.items(), key=lambda c: -c[1])), indent=1))
    codes = [p.code for p in queue]
    print(f"===== the whole suite in {wall:.0f} s; {sum(c != 0 for c in codes)} of {len(codes)} parts failed =====")
    # pytest's 5 (nothing collected) is a failure of the suite too
    return next((c for c in codes if c != 0), 0) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
