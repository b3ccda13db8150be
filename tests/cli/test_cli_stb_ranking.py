"""Spot The Bot through the CLI as the README shows it: the released ranking procedure, its clusters
and their seed stability in the report a user opens."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dialeval.cli import app
from tests.stats.test_cox_robust import R_PUBLISHED

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_empathetic_report_shows_published_clusters_with_seed_stability(tmp_path, shared_data):
    folder = tmp_path / "stb-ed"
    # as the README prints it: the paper's short names are the default, no --rename needed
    imported = invoke("import", "spot-the-bot", shared_data("spot-the-bot"), "--domain", "empathetic", folder)
    assert imported.exit_code == 0, imported.output
    reported = invoke("report", folder)
    assert reported.exit_code == 0, reported.output

    report = json.loads((folder / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["settings"]["matches"] == "annotation" and report["settings"]["n_samples"] == 5000
    assert report["settings"]["statistic"] == "win_share" and report["settings"]["rank_range"] == "released"
    # Deriu et al. 2020, Table 1, Empathetic Dialogues: BL > {BR, GPT} > S2 > DR
    assert report["clusters"] == [["BL"], ["BR", "GPT"], ["S2"], ["DR"]]
    seeds = report["seed_stability"]
    assert seeds["seeds"] == 20 and 0.4 <= seeds["share"] <= 0.8  # 12 of 20 seeds with this code
    shares = {s["name"]: s["cluster_seed_share"] for s in report["systems"]}
    assert shares["BL"] == shares["S2"] == shares["DR"] == 1.0
    assert shares["BR"] == shares["GPT"] == seeds["share"]
    # Cox models in the report: R coxph(..., ties = "efron", robust = TRUE) p-values within 1e-3
    cox = {(c["system"], c["feature"]): c for c in report["cox"]}
    assert set(cox) == set(R_PUBLISHED["empathetic"])
    for key, (_coef, robust_se, p) in R_PUBLISHED["empathetic"].items():
        assert abs(cox[key]["p"] - p) < 1e-3 and abs(cox[key]["robust_se"] - robust_se) < 1e-5, key
    # the reader sees the share beside each system's cluster in the page
    html = (folder / "report" / "index.html").read_text(encoding="utf-8")
    # the report renders key names for people ("cluster seed share"); the table names its report key
    assert "cluster seed share" in html and "Seed stability" in html
