"""The base install has no pyarrow (it comes with the extra 'parquet'): the arena report, which reads
its judgments as columns, gives the same report.json without it (store.py builds the frame with
pandas then)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np


def _report(study, *, pyarrow: bool) -> dict:
    block = "" if pyarrow else "sys.modules['pyarrow'] = None; "  # as if it were not installed
    code = f"import sys; {block}from dialeval.cli import app; app(['report', {str(study)!r}])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((study / "report" / "report.json").read_text())
    report["study"].pop("generated_at")
    return report


def test_arena_report_is_the_same_without_pyarrow(tmp_path):
    rng = np.random.default_rng(5)
    names = ["alpha", "beta", "gamma"]
    path = tmp_path / "battles.jsonl"
    with path.open("w") as out:
        for k in range(600):
            a, b = rng.choice(3, 2, replace=False)
            winner = ["model_a", "model_b", "tie", "tie (bothbad)"][int(rng.integers(0, 4)) if k % 3 else 0]
            record = {"num": k, "model_a": names[a], "model_b": names[b], "winner": winner, "turn": 1 + k % 2}
            out.write(json.dumps(record) + "\n")
    study = tmp_path / "study"
    done = subprocess.run(
        [sys.executable, "-m", "dialeval.cli", "import", "arena", str(path), str(study)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert _report(study, pyarrow=False) == _report(study, pyarrow=True)
