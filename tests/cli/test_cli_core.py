"""The command line as a user runs it: init, generate, import, export, and clear errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from dialeval import METHODS
from dialeval.cli import app
from dialeval.config import load_study
from dialeval.store import Store

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("method", METHODS)
def test_init_writes_a_valid_commented_study(tmp_path, method):
    folder = tmp_path / f"study-{method}"
    result = invoke("init", method, folder)
    assert result.exit_code == 0, result.output
    config = load_study(folder)
    assert config.method == method and config.name == folder.name
    again = invoke("init", method, folder)
    assert again.exit_code == 2 and "--force" in again.output


def test_init_unknown_method(tmp_path):
    result = invoke("init", "likert", tmp_path / "x")
    assert result.exit_code == 2 and "acute" in result.output and "Traceback" not in result.output


def test_generate_study_is_resumable(tmp_path):
    folder = tmp_path / "s"
    invoke("init", "acute", folder)
    text = (folder / "study.yaml").read_text().replace("conversations: 10", "conversations: 2")
    (folder / "study.yaml").write_text(text.replace("turns: 6", "turns: 2"))
    result = invoke("generate", folder)
    assert result.exit_code == 0, result.output
    assert "made 6" in result.output  # 3 bots x 2 self-chats
    store = Store(f"sqlite:///{folder / 'dialeval.db'}")
    study = store.get_study(folder.name)
    data = store.load_dataset(study.id)
    assert len(data.conversations) == 6 and all(len(c.turns) == 2 + 4 for c in data.conversations)
    store.close()
    rerun = invoke("generate", folder)
    assert rerun.exit_code == 0 and "made 0, kept 6" in rerun.output


def test_generate_to_file_and_resume(tmp_path):
    out = tmp_path / "chats.jsonl"
    result = invoke("generate", "--bots", "repeat,eliza", "--mode", "self-chat", "-n", "2", "--turns", "3", "-o", out)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4 and {tuple(c["bots"]) for c in lines} == {("repeat", "repeat"), ("eliza", "eliza")}
    again = invoke("generate", "--bots", "repeat,eliza", "--mode", "self-chat", "-n", "3", "--turns", "3", "-o", out)
    assert "made 2, kept 4" in again.output
    assert len(out.read_text().splitlines()) == 6


def test_generate_with_unreachable_bot_reports_failures(tmp_path):
    from tests.bots.fake_openai_server import closed_port_url

    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "study.yaml").write_text(f"""
name: s
method: acute
bots:
  - {{name: good, type: repeat}}
  - {{name: down, type: openai, options: {{base_url: "{closed_port_url()}", model: m, retries: 0, timeout: 2}}}}
generation: {{mode: self-chat, conversations: 2, turns: 2}}
""")
    result = invoke("generate", folder, "--yes")  # past the endpoint check: the run itself meets the error
    assert result.exit_code == 2  # an unreachable bot is something the user fixes (README: exit codes)
    assert "made 2" in result.output and "failed 2" in result.output
    assert "selfchat-down-0000" in result.output and "refused" in result.output


def test_bad_study_file_is_reported_without_traceback(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "study.yaml").write_text("name: s\nmethod: acute\nbots:\n  - {name: a, type: repeat}\nseed: many\n")
    result = invoke("generate", folder)
    assert result.exit_code == 2
    assert "study.yaml" in result.output and "seed" in result.output and "Traceback" not in result.output


def test_import_dialogue_eval_and_export(tmp_path, shared_data):
    csv = shared_data("dialogue-eval/FreeTopicRound1/Combined_Batches_305hits.csv")
    folder = tmp_path / "de-run1"
    result = invoke("import", "dialogue-eval", csv, folder)
    assert result.exit_code == 0, result.output
    config = load_study(folder)
    assert config.method == "direct-assessment"
    assert {"biencoder", "biencoder+persona", "lan_model+persona", "qc"} <= {b.name for b in config.bots}
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"judgments.{fmt}"
        exported = invoke("export", folder, "--format", fmt, "-o", out)
        assert exported.exit_code == 0, exported.output
        frame = {"csv": pd.read_csv, "parquet": pd.read_parquet, "jsonl": lambda p: pd.read_json(p, lines=True)}[fmt](
            out
        )
        # One row per rated conversation: 304 non-empty assignments x 6 conversations.
        assert len(frame) == 304 * 6
    assert frame["annotator_id"].nunique() == 248  # the empty submission's worker made no judgment


def test_import_spot_the_bot_counts(tmp_path, shared_data):
    folder = tmp_path / "stb-dd"
    result = invoke("import", "spot-the-bot", shared_data("spot-the-bot"), "--domain", "dailydialog", folder)
    assert result.exit_code == 0, result.output
    store = Store(f"sqlite:///{folder / 'dialeval.db'}")
    counts = store.counts(store.get_study("stb-dd").id)
    store.close()
    assert (counts["conversations"], counts["units"], counts["judgments"]) == (570, 54, 2136)
    assert "2136 judgments" in " ".join(result.output.split())


def test_malformed_import_keeps_what_was_stored(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"id": "a", "bots": ["x"], "turns": [{"speaker": "bot", "text": "hi", "bot": "x"}]}) + "\n"
    )
    folder = tmp_path / "s"
    assert invoke("import", "dialeval", good, folder).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "b", "turns": []}) + "\n{not json\n")
    result = invoke("import", "dialeval", bad, folder)
    assert result.exit_code == 2 and "bad.jsonl, line 2" in result.output
    store = Store(f"sqlite:///{folder / 'dialeval.db'}")
    assert store.counts(store.get_study("s").id)["conversations"] == 1
    store.close()


@pytest.mark.parametrize("fmt", ["parlai", "openai"])
def test_generate_other_formats(tmp_path, fmt):
    from dialeval.formats.openai_messages import read_openai_messages
    from dialeval.formats.parlai import read_parlai_conversations

    out = tmp_path / "chats.jsonl"
    args = (
        "generate",
        "--bots",
        "repeat,eliza",
        "--mode",
        "bot-bot",
        "-n",
        "2",
        "--turns",
        "2",
        "-o",
        out,
        "--format",
        fmt,
    )
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    read = read_parlai_conversations if fmt == "parlai" else read_openai_messages
    conversations = read(out)
    assert len(conversations) == 2
    assert all(len(c.turns) == 6 for c in conversations)  # seed exchange + 2 turns per side
    again = invoke(*args)
    assert "made 0, kept 2" in again.output


def test_generate_unknown_format(tmp_path):
    result = invoke(
        "generate", "--bots", "repeat", "--mode", "self-chat", "-o", tmp_path / "x.jsonl", "--format", "yaml"
    )
    assert result.exit_code == 2 and "parlai" in result.output
