"""What CI relies on: a missing browser fails the browser tests in CI (CI=true) instead of skipping
them, and skips them elsewhere with the reason. Runs one browser test in a pytest subprocess with
DIALEVAL_CHROMIUM pointing at nothing, so no browser is started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ONE_BROWSER_TEST = "tests/e2e/test_e2e_acute.py"


def run_without_chromium(ci: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DIALEVAL_CHROMIUM": str(REPO / "no-such-chromium"), "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-x", ONE_BROWSER_TEST],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("ci, exit_code, word", [("true", 1, "error"), ("", 0, "skipped")])
def test_missing_chromium_fails_in_ci_and_skips_elsewhere(ci, exit_code, word):
    result = run_without_chromium(ci)
    out = result.stdout + result.stderr
    assert result.returncode == exit_code, out
    assert word in out.splitlines()[-1] and "no Chromium at" in out and "no-such-chromium" in out


def test_the_test_command_runs_the_doctests_of_src():
    # `make test` runs plain `pytest`: its configuration must collect the examples in src/ docstrings
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    collected = set(result.stdout.split())
    for doctest in (
        "src/dialeval/stats/sequential.py::dialeval.stats.sequential.SequentialPairTest.interval",
        "src/dialeval/adaptive.py::dialeval.adaptive",
        "src/dialeval/planning.py::dialeval.planning.parse_expectation",
        "src/dialeval/bench/adaptive.py::dialeval.bench.adaptive",
    ):
        assert doctest in collected


def _mypy_gate():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mypy_gate", REPO / "scripts" / "mypy_gate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MYPY_OUTPUT = """\
src/dialeval/a.py:3: error: Incompatible types in assignment  [assignment]
src/dialeval/a.py:9:5: error: Item "None" of "X | None" has no attribute "y"  [union-attr]
src/dialeval/a.py:9: note: a note is not an error
src/dialeval/b.py:1: error: Name "z" is not defined  [name-defined]
Found 3 errors in 2 files (checked 9 source files)
"""


def test_make_test_runs_the_lint_and_type_gates_before_the_tests():
    dry = subprocess.run(["make", "-n", "test"], cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    assert dry.index("scripts/lint.sh") < dry.index("-m pytest")
    lint = (REPO / "scripts" / "lint.sh").read_text()
    for gate in ("ruff check .", "ruff format --check", "scripts/mypy_gate.py"):
        assert gate in lint


def test_mypy_gate_counts_errors_per_file_and_refuses_more(tmp_path, monkeypatch, capsys):
    gate = _mypy_gate()
    counts = gate.count_errors(MYPY_OUTPUT)
    assert counts == {"src/dialeval/a.py": 2, "src/dialeval/b.py": 1}
    assert gate.read_baseline(gate.write_baseline(counts)) == counts
    monkeypatch.setattr(gate, "BASELINE", tmp_path / "baseline.txt")
    monkeypatch.setattr(gate, "run_mypy", lambda: (1, MYPY_OUTPUT))

    gate.BASELINE.write_text("2 src/dialeval/a.py\n1 src/dialeval/b.py\n")
    assert gate.main([]) == 0  # as many as allowed
    gate.BASELINE.write_text("# comment\n3 src/dialeval/a.py\n4 src/dialeval/b.py\n")
    assert gate.main([]) == 0 and "lower it" in capsys.readouterr().out  # fewer: passes, says so
    gate.BASELINE.write_text("1 src/dialeval/a.py\n5 src/dialeval/b.py\n")
    assert gate.main([]) == 1  # one more error in a.py fails, even though the total is lower
    err = capsys.readouterr().err
    assert "src/dialeval/a.py: 2 errors, baseline allows 1" in err and "[union-attr]" in err
    gate.BASELINE.write_text("2 src/dialeval/a.py\n")
    assert gate.main([]) == 1  # a file that had no errors gets one

    assert gate.main(["--update"]) == 1  # the baseline never goes up by itself
    assert gate.BASELINE.read_text() == "2 src/dialeval/a.py\n"
    gate.BASELINE.write_text("9 src/dialeval/a.py\n9 src/dialeval/b.py\n9 src/dialeval/c.py\n")
    assert gate.main(["--update"]) == 0  # it goes down, files at zero drop out
    assert gate.read_baseline(gate.BASELINE.read_text()) == counts

    monkeypatch.setattr(gate, "run_mypy", lambda: (2, "pyproject.toml: [mypy]: bad option"))
    assert gate.main([]) == 2  # mypy that does not run is a failure, not zero errors


def test_mypy_baseline_in_the_repository_is_well_formed():
    gate = _mypy_gate()
    counts = gate.read_baseline(gate.BASELINE.read_text())
    assert counts and all(n > 0 and (REPO / path).is_file() for path, n in counts.items())
