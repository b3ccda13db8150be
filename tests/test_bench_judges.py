"""The judge-corrected-intervals benchmark: `dialeval bench judges` on the real Arena judge files."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dialeval.bench.judges import load_arena_judges, savings_at_equal_width
from dialeval.cli import app
from tests.conftest import require_shared


def test_savings_at_equal_width_follows_the_human_curve():
    grid = [500, 1000, 2000]
    human = [4.0, 4.0 / np.sqrt(2), 2.0]  # the 1/sqrt(n) law
    assert savings_at_equal_width(grid, human, 1000, 4.0 / np.sqrt(2)) == pytest.approx(0.0)
    # PPI with n = 1000 as narrow as people with 2000: half the votes saved
    assert savings_at_equal_width(grid, human, 1000, 2.0) == pytest.approx(0.5)
    # beyond the grid: extrapolated with the same law (width 1.0 needs 8000 human votes)
    assert savings_at_equal_width(grid, human, 2000, 1.0) == pytest.approx(0.75)
    # wider than people alone: a loss (negative savings)
    assert savings_at_equal_width(grid, human, 1000, 4.0) < 0


def test_arena_judge_files_read_with_the_importer():
    folder = require_shared("arena-judges")
    data = load_arena_judges(folder)
    assert len(data.a) == 26919 and len(data.names) == 20
    assert set(data.judges) == {"GPT-4", "Claude-3-Opus", "GPT-3.5"}
    # the crowd's ties (tie + tie (bothbad)) are 2,880 + 5,132 of the votes
    assert int(np.sum(data.human == 0.5)) == 2880 + 5132
    assert np.corrcoef(data.human, data.judges["GPT-4"])[0, 1] == pytest.approx(0.50, abs=0.01)
    assert np.mean(data.judges["GPT-3.5"] == 1.0) == pytest.approx(0.86, abs=0.01)  # its position bias


def test_bench_judges_quick_cli(tmp_path):
    folder = require_shared("arena-judges")
    out = tmp_path / "judges.json"
    plot = tmp_path / "judges.png"
    result = CliRunner().invoke(
        app, ["bench", "judges", "--quick", "--json", str(out), "--plot", str(plot), "--data", str(folder)]
    )
    assert result.exit_code == 0, result.output
    assert "human votes saved at equal width, GPT-4" in result.output
    bench = json.loads(out.read_text())
    assert plot.stat().st_size > 10_000
    assert set(bench["judges"]) == {"human only", "GPT-4", "Claude-3-Opus", "GPT-3.5"}
    for rows in bench["judges"].values():
        for row in rows.values():
            # 12 studies: a smoke test of the coverage, not the measurement (that is benchmarks/README.md)
            assert 0.85 <= row["bt"]["coverage"] <= 1.0
            assert row["bt"]["studies"] == 12
    s = bench["headline"]["savings"]
    assert s["GPT-4"]["bt_savings_mean"] > s["GPT-3.5"]["bt_savings_mean"] - 0.02
    assert s["GPT-4"]["field_savings_mean"] > 0.05
    assert s["GPT-3.5"]["bt_savings_mean"] > -0.05  # a position-biased judge costs (almost) nothing
    assert s["synthetic judge (rho = 0.75)"]["bt_savings_mean"] > 0.4
    # λ: the strong judge is trusted more than the biased one
    lam = {k: v["500"]["lambda_bt_median"] for k, v in bench["judges"].items() if k != "human only"}
    assert lam["GPT-4"] > lam["GPT-3.5"]


def test_bench_judges_missing_data_says_where(tmp_path):
    result = CliRunner().invoke(app, ["bench", "judges", "--quick", "--data", str(tmp_path / "nowhere")])
    assert result.exit_code != 0
    assert "not found" in result.output
