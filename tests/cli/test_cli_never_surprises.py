"""Issue 10, parts 1 and 5: idempotent imports and a command line that never surprises.

Every failure mode is reached as a user reaches it (the command, its arguments, real files); the
exit codes are the README's: 0 done, 2 something the user can fix (one line, no traceback).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dialeval import __version__
from dialeval.cli import app
from dialeval.store import Store

runner = CliRunner()
DIALEVAL = [sys.executable, "-m", "dialeval.cli"]


def invoke(*args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, **kwargs)


def one_line_error(result) -> str:
    """The error a failing command printed: exactly one non-empty line, no traceback."""
    text = result.output.strip()
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, text
    return errors[0]


def conversations_file(path, bots=("repeat", "eliza"), n=2):
    result = invoke("generate", "--bots", ",".join(bots), "--mode", "self-chat", "-n", n, "--turns", 2, "-o", path)
    assert result.exit_code == 0, result.output
    return path


def small_acute(folder, names=("repeat", "eliza", "retrieval"), annotators=6):
    """A generated acute study of two bundled bots, judged by a few simulated annotators."""
    folder.mkdir(parents=True)
    types = ("repeat", "eliza", "retrieval")
    (folder / "study.yaml").write_text(
        f"name: {folder.name}\nmethod: acute\nbots:\n"
        + "".join(f"  - {{name: {n}, type: {t}}}\n" for n, t in zip(names, types))
        + "generation: {mode: self-chat, conversations: 2, turns: 2}\n"
        + "onboarding: {enabled: false}\n"
    )
    assert invoke("generate", folder).exit_code == 0
    result = invoke("simulate", folder, "--annotators", annotators, "--no-report")
    assert result.exit_code == 0, result.output
    return folder


def judgments_in(folder) -> int:
    store = Store(f"sqlite:///{folder / 'dialeval.db'}")
    try:
        return store.counts(store.get_study().id)["judgments"]
    finally:
        store.close()


def counts_in(folder) -> dict:
    store = Store(f"sqlite:///{folder / 'dialeval.db'}")
    try:
        return store.counts(store.get_study().id)
    finally:
        store.close()


# -- part 1: idempotent imports --------------------------------------------------------------------------
def test_importing_the_same_file_twice_changes_nothing_and_says_so(tmp_path):
    source = conversations_file(tmp_path / "chats.jsonl")
    folder = tmp_path / "st"
    first = invoke("import", "dialeval", source, folder)
    assert first.exit_code == 0, first.output
    before = counts_in(folder)
    again = invoke("import", "dialeval", source, folder)
    assert again.exit_code == 0, again.output
    assert "already imported" in again.output and "nothing changed" in " ".join(again.output.split())
    assert counts_in(folder) == before


def test_spot_the_bot_imported_twice_keeps_2136_judgments(tmp_path, shared_data):
    """The measured case of the issue: 2,136 judgments became 4,272 on a second import."""
    source = shared_data("spot-the-bot")
    folder = tmp_path / "stb-dd"
    assert invoke("import", "spot-the-bot", source, "--domain", "dailydialog", folder).exit_code == 0
    again = invoke("import", "spot-the-bot", source, "--domain", "dailydialog", folder)
    assert again.exit_code == 0 and "already imported" in again.output
    assert judgments_in(folder) == 2136
    other_domain = invoke("import", "spot-the-bot", source, "--domain", "empathetic", folder)
    assert other_domain.exit_code == 2 and "--append" in other_domain.output
    assert judgments_in(folder) == 2136


def test_a_different_source_is_refused_unless_append(tmp_path):
    folder = tmp_path / "st"
    assert invoke("import", "dialeval", conversations_file(tmp_path / "one.jsonl"), folder).exit_code == 0
    before = counts_in(folder)
    other = conversations_file(tmp_path / "two.jsonl", bots=("repeat",), n=3)
    refused = invoke("import", "dialeval", other, folder)
    assert refused.exit_code == 2
    assert "--append" in one_line_error(refused)
    assert counts_in(folder) == before
    appended = invoke("import", "dialeval", other, folder, "--append")
    assert appended.exit_code == 0, appended.output
    assert counts_in(folder)["conversations"] > before["conversations"]
    # ...and once appended, that file too is known: a third run changes nothing.
    after = counts_in(folder)
    assert "already imported" in invoke("import", "dialeval", other, folder, "--append").output
    assert counts_in(folder) == after


def test_demo_out_into_a_non_empty_folder_refuses_unless_force(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    refused = invoke("demo", "--no-serve", "--out", out)
    assert refused.exit_code == 2 and "--force" in one_line_error(refused)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_demo_force_starts_the_studies_afresh_and_its_progress_has_a_known_total(completed_demo, tmp_path):
    out = Path(shutil.copytree(completed_demo, tmp_path / "demo"))  # a demo a simulated crowd completed
    judged = judgments_in(out / "acute")
    assert judged > 0
    assert invoke("demo", "--no-serve", "--out", out).exit_code == 2
    again = subprocess.run(
        [*DIALEVAL, "demo", "--no-serve", "--out", str(out), "--force"], capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr
    assert judgments_in(out / "acute") == 0  # the old run's judgments are gone, not added to
    # the progress bars of making the studies show a known total, never "?"
    shown = re.findall(r"(\d+)/(\d+|\?) +\d+:\d\d:\d\d", again.stdout)
    assert shown and all(t != "?" and int(d) <= int(t) for d, t in shown), again.stdout


# -- part 5: the command line -------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["pairwise-turn", "single-model", "direct-assessment"])
def test_init_and_generate_of_a_live_method_point_to_serve(tmp_path, method):
    folder = tmp_path / "live"
    result = invoke("init", method, folder)
    assert result.exit_code == 0
    assert f"dialeval serve {folder}" in " ".join(result.output.split())
    assert "dialeval generate" not in result.output
    generated = invoke("generate", folder)
    assert generated.exit_code == 0, generated.output
    assert "serve" in generated.output and "no conversations to generate" in " ".join(generated.output.split())


def test_init_of_a_generated_method_points_to_generate(tmp_path):
    result = invoke("init", "acute", tmp_path / "a")
    assert "dialeval generate" in " ".join(result.output.split())


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.output.strip() == f"dialeval {__version__}"


@pytest.mark.parametrize(
    "command", ["init", "generate", "import", "export", "report", "compare", "serve", "demo", "simulate", "plan"]
)
def test_help_has_no_bool_tags(command):
    result = invoke(command, "--help", env={"COLUMNS": "120"})
    assert result.exit_code == 0
    assert "<bool>" not in result.output
    assert "Example" in result.output


def test_export_to_an_unwritable_path_is_one_line(tmp_path):
    folder = tmp_path / "st"
    invoke("import", "dialeval", conversations_file(tmp_path / "c.jsonl"), folder)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    # A read-only folder stops anyone but root; /sys refuses new files to root too.
    target = locked / "out.csv" if not os.access(locked, os.W_OK) else Path("/sys/out.csv")
    try:
        result = invoke("export", folder, "-o", target)
    finally:
        locked.chmod(0o700)
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "out.csv" in line and "ermission" in line


def test_export_to_a_full_disk_is_one_line(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    folder = tmp_path / "st"
    invoke("import", "dialeval", conversations_file(tmp_path / "c.jsonl"), folder)
    result = invoke("export", folder, "--format", "jsonl", "-o", "/dev/full")
    assert result.exit_code == 2
    assert "No space left" in one_line_error(result)


@pytest.mark.parametrize(
    "args",
    [
        ("report", "{missing}"),
        ("export", "{missing}", "-o", "{tmp}/x.csv"),
        ("generate", "{missing}"),
        ("serve", "{missing}"),
        ("simulate", "{missing}"),
        ("compare", "{missing}", "{missing}"),
        ("plan", "{missing}"),
        ("import", "dialogue-eval", "{tmp}/nothing.csv", "{tmp}/new"),
        ("import", "no-such-format", "{tmp}", "{tmp}/new"),
        ("init", "no-such-method", "{tmp}/x"),
        ("export", "{study}", "--format", "xlsx", "-o", "{tmp}/x.xlsx"),
        ("report", "{study}"),  # a study without judgments
        ("plan", "--method", "acute", "--expect", "a>b:2"),
    ],
)
def test_every_failure_mode_is_one_line_and_exit_2(tmp_path, args):
    study = tmp_path / "empty"
    invoke("init", "single-model", study)
    values = {"missing": str(tmp_path / "missing"), "tmp": str(tmp_path), "study": str(study)}
    result = invoke(*[a.format(**values) for a in args])
    assert result.exit_code == 2, result.output
    one_line_error(result)


def test_unreachable_bot_exits_2(tmp_path):
    from tests.bots.fake_openai_server import closed_port_url

    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "study.yaml").write_text(f"""
name: s
method: acute
bots:
  - {{name: good, type: repeat}}
  - {{name: down, type: openai, options: {{base_url: "{closed_port_url()}", model: m, retries: 0, timeout: 2}}}}
generation: {{mode: self-chat, conversations: 1, turns: 2}}
""")
    result = invoke("generate", folder, "--yes")  # past the endpoint check: the run itself meets the error
    assert result.exit_code == 2
    assert "refused" in result.output and "rerun" in result.output


def test_empty_study_report_says_so(tmp_path):
    folder = tmp_path / "empty"
    invoke("init", "pairwise-turn", folder)
    result = invoke("report", folder)
    assert result.exit_code == 2
    assert "no judgments" in one_line_error(result)


def test_compare_with_nothing_in_common_says_so(tmp_path):
    a = small_acute(tmp_path / "a", ("repeat", "eliza"))
    b = small_acute(tmp_path / "b", ("echo-one", "echo-two", "echo-three"))
    result = invoke("compare", a, b)
    assert result.exit_code == 2
    assert "no system in common" in one_line_error(result)


def test_one_bot_acute_study_is_refused(tmp_path):
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "study.yaml").write_text("name: one\nmethod: acute\nbots:\n  - {name: only, type: repeat}\n")
    result = invoke("generate", folder)
    assert result.exit_code == 2
    one_line_error(result)
    assert "at least two bots" in result.output and "only" in result.output


def test_generate_progress_has_a_known_total_and_never_exceeds_it(tmp_path):
    folder = tmp_path / "s"
    invoke("init", "acute", folder)
    text = (folder / "study.yaml").read_text().replace("conversations: 10", "conversations: 1")
    (folder / "study.yaml").write_text(text.replace("turns: 6", "turns: 2"))
    for run in range(2):
        result = subprocess.run(
            [*DIALEVAL, "generate", str(folder)],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "100"},
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        shown = re.findall(r"(\d+)/(\d+|\?) +\d+:\d\d:\d\d", result.stdout)
        assert shown, result.stdout
        for done, total in shown:
            assert total != "?" and int(done) <= int(total), result.stdout
        if run == 0:
            # Serving the study adds its onboarding conversation (not one of the plan's): the bar of
            # the next run counted it and showed 4/3.
            assert invoke("simulate", folder, "--annotators", 1, "--no-report").exit_code == 0


def test_tables_fold_instead_of_truncating_off_a_terminal(tmp_path):
    folder = small_acute(tmp_path / ("a-rather-long-folder-name-" * 3) / "study")
    result = subprocess.run(
        [*DIALEVAL, "report", str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert str(folder / "report" / "index.html") in result.stdout


def test_compare_prints_rounded_numbers(tmp_path):
    folder = small_acute(tmp_path / "a")
    result = invoke("compare", folder, folder)
    assert result.exit_code == 0, result.output
    assert "Pearson r = 1.000" in result.output, result.output
    assert not re.search(r"\d\.\d{5,}", result.output), result.output
