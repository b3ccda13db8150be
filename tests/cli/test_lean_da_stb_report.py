"""`dialeval report` on an imported Direct Assessment and Spot The Bot study reads only what the
analysis and the report's sections use (Method.report_reads_turns=False: no turn but those the
sections read); its report.json must equal the report built from every conversation with all its
turns and every judgment as an object, so the two paths cannot drift apart.

Small cuts of the published data (../shared/data); one Direct Assessment bot reply is shortened
at limits.bot_reply_chars, so that a turn the lean load selects in the database is counted."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from dialeval.report.build import build_report
from dialeval.textclean import CUT_MARKER
from tests.conftest import REPO, require_shared

DIALEVAL = str(Path(sys.executable).with_name("dialeval"))


def _run(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "250"}
    return subprocess.run([DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=600, env=env)


def _differences():
    spec = importlib.util.spec_from_file_location("compare_reports", REPO / "scripts" / "compare_reports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.differences


def _object_path_report(study: Path) -> dict:
    """study_report's steps, with every turn and every judgment as an object."""
    from dialeval.study import open_study

    opened = open_study(study)
    try:
        dataset = opened.store.load_dataset(opened.id)  # every turn, judgments as objects
        config = opened.config.model_dump(mode="json")
    finally:
        opened.close()
    return json.loads(json.dumps(build_report(dataset, config)))


def _same_report(study: Path) -> dict:
    done = _run("report", study)
    assert done.returncode == 0, done.stderr
    lean = json.loads((study / "report" / "report.json").read_text(encoding="utf-8"))
    found = _differences()(_object_path_report(study), lean)
    assert found == [], found[:20]
    return lean


def test_direct_assessment_report_equals_the_object_path(tmp_path):
    source = require_shared("dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv")
    csv.field_size_limit(1 << 30)
    with source.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    fields = list(rows[0])
    rows = rows[:60]
    answers = json.loads(rows[0]["Answer.taskAnswers"])
    turns = answers[0]["dialogue0"].split("###")
    bot = next(k for k, t in enumerate(turns) if t.startswith("b:"))
    turns[bot] += CUT_MARKER  # a bot reply the worker saw shortened
    answers[0]["dialogue0"] = "###".join(turns)
    rows[0]["Answer.taskAnswers"] = json.dumps(answers)
    data = tmp_path / "da.csv"
    with data.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    study = tmp_path / "da"
    done = _run("import", "dialogue-eval", data, study)
    assert done.returncode == 0, done.stderr
    lean = _same_report(study)
    assert lean["method"] == "direct-assessment" and lean["systems"]
    assert sum(lean["shortened_replies"].values()) == 1


def test_spot_the_bot_report_equals_the_object_path(tmp_path):
    source = require_shared("spot-the-bot")
    folder = tmp_path / "stb"
    folder.mkdir()
    for kind in ("sampled", "packed", "annotated"):
        lines = (source / f"{kind}-dialogues-full-dailydialog.json").read_text(encoding="utf-8").splitlines()
        if kind == "annotated":
            lines = lines[:400]
        (folder / f"{kind}-dialogues-full-dailydialog.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    study = tmp_path / "stb-study"
    done = _run("import", "spot-the-bot", folder, study, "--domain", "dailydialog")
    assert done.returncode == 0, done.stderr
    lean = _same_report(study)
    assert lean["method"] == "spot-the-bot" and lean["systems"]
    assert lean["study"]["collected"]["judgments"] == 400
