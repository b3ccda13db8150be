"""`dialeval simulate` never mixes simulated annotators with real ones (issue 21, item 1).

The real participants are people's sessions through the real app (the simulator's HTTP client with
its `simulated` mark switched off); every check goes through the command line in a subprocess or
the admin's approval download over HTTP.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def run(*args, ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([*DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def report_of(folder: Path) -> dict:
    return json.loads((folder / "report" / "report.json").read_text(encoding="utf-8"))


def people(folder: Path, monkeypatch, n: int, seed: int) -> None:
    """n real participants (their door: Prolific, the study link or the volunteer link) through the app."""
    from dialeval.simulate import simulate_study
    from dialeval.store import work

    with monkeypatch.context() as m:
        m.setattr(work, "mark_simulated", lambda store, annotator_id: None, raising=False)
        result = simulate_study(
            folder, annotators=n, seed=seed, careless_share=0, abandon_p=0, refresh_p=0, double_submit_p=0
        )
    # what follows needs people who judged, not a flawless session each (a slow machine may time one out)
    assert result.judgments_stored > 0, result.errors


def platforms(folder: Path) -> list[str]:
    from dialeval.store import work
    from dialeval.study import open_study

    opened = open_study(folder)
    try:
        return sorted(r["platform"] for r in work.list_annotators(opened.store, opened.id))
    finally:
        opened.close()


def test_real_annotators_are_never_mixed_silently(tmp_path, monkeypatch):
    study = tmp_path / "study"
    run("init", "single-model", study)
    people(study, monkeypatch, 3, seed=11)
    real = platforms(study)
    assert "simulated" not in real and "prolific" in real, real

    refused = run("simulate", study, "--annotators", "2", ok=False)
    assert refused.returncode == 2
    lines = [ln for ln in refused.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, refused.stderr
    assert "3 real annotators" in lines[0] and "--copy DIR" in lines[0] and "--into-study" in lines[0]
    assert platforms(study) == real  # nothing was written

    run("simulate", study, "--into-study", "--annotators", "3", "--careless", "0", "--seed", "4")
    assert platforms(study).count("simulated") == 3
    report = report_of(study)
    assert report["study"]["collected"]["annotators"] == 3  # the real ones only
    assert report["simulated"]["included"] is False and report["simulated"]["annotators"] == 3
    assert "left out of this report" in report["answer"]["summary"][-1]

    with_sims = run("report", study, "--include-simulated")
    assert "includes 3 simulated annotators" in with_sims.stdout
    report = report_of(study)
    assert report["study"]["collected"]["annotators"] == 6 and report["simulated"]["included"] is True

    # the admin's Prolific bulk approval lists people only
    from fastapi.testclient import TestClient

    from dialeval.store import work
    from dialeval.study import open_study
    from dialeval.web.app import create_app

    opened = open_study(study)
    rows = work.list_annotators(opened.store, opened.id)
    opened.close()
    sims = {r["external_id"] for r in rows if r["platform"] == "simulated"}
    real_done = {r["external_id"] for r in rows if r["platform"] == "prolific" and r["meta"].get("completed_at")}
    app = create_app([study])
    served = next(iter(app.state.studies.values()))
    with TestClient(app) as client:
        client.get(f"/s/{served.slug}/admin", params={"token": served.admin_token})
        ids = set(client.get(f"/s/{served.slug}/admin/approvals/prolific.txt").text.split())
        csv_text = client.get(f"/s/{served.slug}/admin/approvals.csv").text
    assert ids == real_done and not ids & sims
    for sim in sims:
        line = next(ln for ln in csv_text.splitlines() if f",{sim}," in ln)
        assert line.startswith("simulated,") and ",none,simulated annotator" in line

    # a copy: the study as prepared, none of its annotators (its report: tests/cli/test_first_study.py)
    copy = tmp_path / "copy"
    run("simulate", study, "--copy", copy, "--annotators", "2", "--careless", "0", "--seed", "5", "--no-report")
    assert platforms(copy) == ["simulated", "simulated"]
    assert platforms(study).count("simulated") == 3  # the study itself is untouched


def test_no_judgments_to_report_is_said_in_sentences_of_their_own(tmp_path):
    """`dialeval report` refuses a study without judgments (of real annotators) in one `error:` line
    whose sentences stand apart: never a simulated note glued after a semicolon."""
    # simulated annotators who came and stored nothing (`simulate` itself now stops before its crowd
    # when nothing was generated: tests/cli/test_study_without_tasks.py); registered here as a
    # crowd that found every unit taken would leave them
    run("init", "acute", tmp_path / "early")
    from dialeval.store import work
    from dialeval.study import open_study

    opened = open_study(tmp_path / "early")
    try:
        arrived = [opened.store.get_or_create_annotator(opened.id, f"sim-{i}", "link").id for i in range(2)]
        work.mark_simulated(opened.store, *arrived)
    finally:
        opened.close()
    refused = subprocess.run([*DIALEVAL, "report", "early"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "error: early holds no judgments yet, so there is nothing to report: its 2 simulated annotators of "
        "`dialeval simulate` stored none. Collect some (dialeval serve early, or dialeval simulate early) or "
        "import a data set\n"
    )

    # a real participant who has not judged yet, and simulated annotators who have: they are left out
    study = tmp_path / "mixed"
    run("init", "prompts", study)
    run("generate", study)
    opened = open_study(study)
    try:
        opened.store.get_or_create_annotator(opened.id, "participant-1", "prolific")
    finally:
        opened.close()
    run("simulate", study, "--into-study", "--annotators", "3", "--careless", "0", "--seed", "4", "--no-report")
    refused = subprocess.run([*DIALEVAL, "report", "mixed"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    included = run("report", study, "--include-simulated")  # what the refusal points to
    assert "includes 3 simulated annotators" in included.stdout
    judged = report_of(study)["simulated"]["judgments"]
    assert judged > 0
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "error: mixed holds no judgments of real annotators yet, so there is nothing to report. Its 3 simulated "
        f"annotators ({judged} judgments) of `dialeval simulate` are left out: `dialeval report mixed "
        "--include-simulated` reports them\n"
    )
