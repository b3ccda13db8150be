"""The documented commands for the published data, run as a user types them, on ../shared/data.

The commands are read from the how-to page docs/how-to/published-data.md (the bash block after
`<!-- published-data-commands -->`), so the page and this test cannot drift apart. Each line goes
through the real `dialeval` command parser (typer's runner), from a scratch folder in which
`../shared/data` is the published data.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from dialeval.cli import app
from tests.conftest import REPO, require_shared

MARKER = "<!-- published-data-commands -->"


PAGE = REPO / "docs" / "how-to" / "published-data.md"


def readme_commands() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    assert MARKER in text, f"{PAGE.relative_to(REPO)} lost its published-data command block"
    block = text.split(MARKER, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Run every README line once; {command: output} plus the folder they ran in."""
    for relative in ("dialogue-eval", "spot-the-bot", "arena-judges"):
        require_shared(relative)
    from tests.conftest import SHARED_DATA

    work = tmp_path_factory.mktemp("user") / "repo"
    work.mkdir()
    (work.parent / "shared").mkdir()
    os.symlink(SHARED_DATA, work.parent / "shared" / "data")  # ../shared/data as in the README
    runner = CliRunner()
    outputs = {}
    here = Path.cwd()
    os.chdir(work)
    try:
        for line in readme_commands():
            argv = shlex.split(line)
            assert argv[0] == "dialeval", line
            result = runner.invoke(app, argv[1:], catch_exceptions=False)
            assert result.exit_code == 0, f"{line}\n{result.output}"
            outputs[line] = " ".join(result.output.split())
    finally:
        os.chdir(here)
    return work, outputs


def _report(work: Path, study: str) -> dict:
    return json.loads((work / study / "report" / "report.json").read_text(encoding="utf-8"))


def test_the_block_covers_import_report_compare_export_of_each_data_set():
    lines = readme_commands()
    for verb in ("import", "report", "compare", "export"):
        assert any(line.startswith(f"dialeval {verb} ") for line in lines), verb
    for fmt in ("dialogue-eval", "spot-the-bot", "arena"):
        assert any(line.startswith(f"dialeval import {fmt} ") for line in lines), fmt
    assert not any("--rename" in line for line in lines)


def test_dialogue_eval_reproduces_table_3(ran):
    work, _ = ran
    report = _report(work, "de-run1")
    assert (report["annotators"]["total"], report["annotators"]["passed"]) == (249, 173)
    assert report["conversations"]["passed"] == 1075
    scores = {s["name"]: (round(s["score"], 3), s["n"]) for s in report["systems"]}
    assert scores["biencoder"] == (0.534, 798) and scores["lan_model"] == (-0.243, 742)
    assert (work / "de-run1" / "report" / "index.html").exists()
    assert len(pd.read_csv(work / "de-run1.csv")) == 304 * 6  # one row per rated conversation


def test_spot_the_bot_uses_paper_names_and_orders_as_the_paper(ran):
    work, _ = ran
    bots = {b["name"] for b in yaml.safe_load((work / "stb-ed" / "study.yaml").read_text())["bots"]}
    assert bots == {"GPT", "BR", "S2", "DR", "BL"}
    empathetic = [s["name"] for s in _report(work, "stb-ed")["systems"]]
    dailydialog = [s["name"] for s in _report(work, "stb-dd")["systems"]]
    assert empathetic[0] == "BL" and empathetic[-1] == "DR" and dailydialog[-1] == "DR"
    compared = json.loads((work / "stb-dd-vs-ed.json").read_text())
    assert compared["n"] == 4 and {s["name"] for s in compared["systems"]} == {"GPT", "BR", "S2", "DR"}
    assert len(pd.read_parquet(work / "stb-ed.parquet")) == 2958


def test_arena_leaderboard_and_judge_comparison(ran):
    work, outputs = ran
    report = _report(work, "arena-human")
    assert report["method"] == "arena" and len(report["systems"]) == 20
    assert report["systems"][0]["name"] == "gpt-4" and report["systems"][-1]["name"] == "llama-13b"
    assert report["outcomes"]["tie (bothbad)"] == 5132
    assert "half a win" in report["study"]["methods"]
    # the robustness audit: 177 of the 26,919 votes (0.66%) put claude-v1 first when written; the
    # count is verified by a refit in stats/robustness.py (tests/stats/test_ties_robustness.py)
    top = report["robustness"]["top"]
    assert top["first"] == "gpt-4" and 50 < top["dropped"] < 400 and top["share"] > 0.001
    assert report["systems"][0]["tier"] == 1 and report["tie_model"]["observed_tie_rate"] > 0.29
    assert "gpt-4" in outputs["dialeval report arena-human"]
    compared = json.loads((work / "arena-human-vs-gpt4.json").read_text())
    assert compared["n"] == 20 and compared["spearman"] > 0.8  # GPT-4 agrees with the crowd on 83% of votes
    assert len(pd.read_json(work / "arena-human.jsonl", lines=True)) == 26919
