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
