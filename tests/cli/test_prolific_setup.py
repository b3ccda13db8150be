"""Prolific completion codes that can be checked (issue 21, item 6): `init` writes the recruitment
block with a code placeholder and the redirect it gives, and `serve` warns when no study-wide code
is set (every worker would get a code of their own that Prolific cannot check). Command line in a
subprocess, as the README prints it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dialeval import METHODS
from tests.cli.test_cli_commands import start_serve, stop, wait_healthy

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]
PLACEHOLDER = "  # completion_code: REPLACE-WITH-YOUR-PROLIFIC-CODE\n"


def init(method: str, folder: Path) -> str:
    result = subprocess.run([*DIALEVAL, "init", method, str(folder)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return (folder / "study.yaml").read_text(encoding="utf-8")


def served_output(folder: Path) -> str:
    port, proc = start_serve(folder)
    try:
        wait_healthy(port, proc)
    finally:
        out = stop(proc)
    return out


def test_init_writes_the_recruitment_block(tmp_path):
    for method in METHODS:
        text = init(method, tmp_path / method)
        assert "\nrecruitment:\n  platform: link " in text, method
        assert PLACEHOLDER in text and "submissions/complete?cc=CODE" in text, method


def test_serve_warns_without_a_study_wide_code(tmp_path):
    folder = tmp_path / "arena"
    text = init("arena", folder)
    out = served_output(folder)
    assert "prolific   http://" in out
    assert "warning: no recruitment.completion_code in study.yaml" in " ".join(out.split())
    # the placeholder filled in as the comment says: no warning, and Prolific gets its redirect
    text = text.replace("  platform: link ", "  platform: prolific ").replace(
        PLACEHOLDER, "  completion_code: C1A2B3C4\n"
    )
    (folder / "study.yaml").write_text(text, encoding="utf-8")
    out = served_output(folder)
    assert "prolific   http://" in out and "warning" not in out


def test_placeholder_left_in_is_named():
    from dialeval.config import RecruitmentConfig
    from dialeval.web.serve import completion_warning

    warning = completion_warning(
        RecruitmentConfig(platform="prolific", completion_code="REPLACE-WITH-YOUR-PROLIFIC-CODE")
    )
    assert warning and "still the placeholder" in warning
    assert completion_warning(RecruitmentConfig(platform="mturk")) is None
