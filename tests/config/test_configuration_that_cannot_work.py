"""A study file whose configuration cannot work is refused when the study is validated, with the fix
named (issue 21, item 4): ACUTE's onboarding weak bot must be among `bots:` (replacing the example
bots removes `repeat`), and Direct Assessment's QC bot too.
Through the command line in a subprocess: `init`, the obvious edit, then `generate`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([*DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=120)


def edited(tmp_path: Path, method: str, old: str, new: str) -> Path:
    folder = tmp_path / method
    assert run("init", method, folder).returncode == 0
    path = folder / "study.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    return folder


def refused(folder: Path) -> str:
    result = run("generate", folder)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


def test_acute_onboarding_bot_must_be_a_bot(tmp_path):
    folder = edited(
        tmp_path,
        "acute",
        "  - name: repeat             # a weak baseline, also used for the onboarding check\n    type: repeat\n",
        "",
    )
    error = refused(folder)
    assert "protocol.onboarding_weak_bot names 'repeat', which is not in bots (retrieval, eliza)" in error
    assert "add it under bots:" in error and "onboarding.enabled: false" in error
    # the fix it names works
    text = (folder / "study.yaml").read_text(encoding="utf-8")
    (folder / "study.yaml").write_text(text.replace("enabled: true ", "enabled: false"), encoding="utf-8")
    assert run("plan", folder, "--expect", "retrieval>eliza:0.6").returncode == 0


def test_acute_onboarding_without_a_weak_bot(tmp_path):
    folder = edited(tmp_path, "acute", "  onboarding_weak_bot: repeat\n", "")
    assert "protocol.onboarding_weak_bot names no bot" in refused(folder)


def test_direct_assessment_qc_bot_must_be_a_bot(tmp_path):
    folder = edited(tmp_path, "direct-assessment", "  qc_bot: qc\n", "  qc_bot: quality\n")
    error = refused(folder)
    assert "protocol.qc_bot names 'quality', which is not in bots (retrieval, eliza, repeat, qc)" in error
