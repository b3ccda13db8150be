"""The judge-guided stopping benchmark, shipped as `dialeval bench judge-guided` (was a script in
benchmarks/), run through the installed command on the real Arena judge files."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, require_shared

DIALEVAL = str(Path(sys.executable).with_name("dialeval"))


def test_bench_judge_guided_quick_through_the_command(tmp_path):
    folder = require_shared("arena-judges")
    out = tmp_path / "jg.json"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [DIALEVAL, "bench", "judge-guided", "--quick", "--skip-sim", "--data", str(folder), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "40 Arena pools, 6 null pools" in result.stdout
    bench = json.loads(out.read_text())
    assert bench["quick"] is True and "simulated" not in bench
    pairs = bench["arena"]["pairs"]
    # the 10 most frequent pairs, each judged by the three judges (+ the tie-flag rule for the first)
    assert len({p["pair"] for p in pairs}) == 10 and len(pairs) == 40
    assert all(0.0 <= p["theta"] <= 1.0 and p["n_battles"] >= 100 for p in pairs)
    assert all(row["theta"] == 0.5 for row in bench["arena"]["null"])  # a null pool is balanced exactly


def test_bench_judge_guided_says_where_the_data_is_missing(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [DIALEVAL, "bench", "judge-guided", "--quick", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode != 0
    assert "Arena judge data not found" in result.stdout + result.stderr
