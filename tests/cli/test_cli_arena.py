"""The arena method through the command line, as the README prints it: `init` writes a working study
file, `simulate` completes it over HTTP and its report recovers the true order, `plan` sizes it with
its stated seconds per vote, `report` renders it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.config import load_study
from dialeval.simulate import SimTruth, recovered_order
from tests.conftest import strict_json_loads

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_init_simulate_report(tmp_path):
    folder = tmp_path / "arena"
    result = invoke("init", "arena", folder)
    assert result.exit_code == 0, result.output
    config = load_study(folder)
    assert config.method == "arena" and config.options.vote == "per-turn" and len(config.bots) == 3
    result = invoke("simulate", folder, "--annotators", "30", "--careless", "0", "--seed", "1")
    assert result.exit_code == 0, result.output
    report = strict_json_loads((folder / "report" / "report.json").read_text())
    assert report["method"] == "arena" and report["battles"] > 0
    recovery = recovered_order(report, SimTruth.load(folder))
    assert recovery["exact"], recovery  # the study file's bot order is the simulated truth
    # Collected per-turn battles keep both replies: the people's length preference is reported.
    longer = report["people"]["longer_answer_share"]
    assert longer["n"] > 0 and 0 <= longer["share"] <= 1 and longer["p_value"] is not None
    html = (folder / "report" / "index.html").read_text()
    assert "Bradley" in html and "turn" in html
    again = invoke("report", folder)
    assert again.exit_code == 0, again.output


def test_plan_sizes_an_arena_study(tmp_path):
    out = tmp_path / "plan.json"
    result = invoke("plan", "--method", "arena", "--expect", "a>b:0.65", "--json", out)
    assert result.exit_code == 0, result.output
    plan = json.loads(out.read_text())
    (pair,) = plan["pairs"]
    assert pair["judgments_needed"] > 0
    # 45 s per vote: half of PW-Turn's 89 s per rating (Smith et al. 2022, §4.1), the stated assumption
    assert abs(plan["seconds_per_judgment"] - 5.73 * 3600 / 231 / 2) < 1e-9
    assert "assumption" in plan["seconds_source"] and "Smith et al. 2022, §4.1" in plan["seconds_source"]
    assert abs(pair["hours_needed"] - pair["judgments_needed"] * plan["seconds_per_judgment"] / 3600) < 0.01
