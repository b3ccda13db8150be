"""Direct Assessment through the CLI on the public Dialogue-Eval release (Ji et al. 2022): the
topic-opinion table (Table 2) in the report of free run 1 (../shared/data). The self-replication
between free runs 1 and 2 (Table 3's r row, `dialeval compare`) needs free run 2, which is outside
data (never on the CI machine): scripts/try_outside_releases.py runs it.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dialeval.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_report_has_the_topic_opinion_table(tmp_path, shared_data):
    run1 = shared_data("dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv")
    folder = tmp_path / "r1"
    assert invoke("import", "dialogue-eval", run1, folder).exit_code == 0
    assert invoke("report", folder).exit_code == 0
    report = json.loads((folder / "report" / "report.json").read_text(encoding="utf-8"))
    table = {row["opinion"]: row for row in report["topic_opinions"]["table"]}
    # Ji et al. 2022, Table 2, Free run 1: Pass 83.9 / 7.4 / 8.7, Fail 88.6 / 3.8 / 7.7 (here 20 of 534 = 3.7)
    assert [round(table[o]["passed"], 1) for o in ("like", "ambivalent", "dislike")] == [83.9, 7.4, 8.7]
    assert [round(table[o]["failed"], 1) for o in ("like", "ambivalent", "dislike")] == [88.6, 3.7, 7.7]
    assert report["topic_opinions"]["n"] == {"passed": 1290, "failed": 534}
    html = (folder / "report" / "index.html").read_text(encoding="utf-8")
    assert "Topic opinions" in html and "ambivalent" in html
