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
