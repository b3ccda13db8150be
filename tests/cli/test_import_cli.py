"""`dialeval import` into a study that exists already."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from dialeval.cli import app

runner = CliRunner()


def _self_chat(folder, model):
    """A fast-ACUTE self-chat log `<model>.bst.jsonl`: both sides are TransformerGenerator_1/_2."""
    acts = [
        [
            {"id": "TransformerGenerator_1", "text": f"{model} says hi"},
            {"id": "TransformerGenerator_2", "text": "hello"},
        ]
    ]
    (folder / f"{model}.bst.jsonl").write_text(json.dumps({"dialog": acts}) + "\n")
    (folder / f"{model}.bst.metadata").write_text(json.dumps({"opt": {"task": "bst"}, "self_chat": True}))
    return folder / f"{model}.bst.jsonl"


def _bots(study):
    return [b["name"] for b in yaml.safe_load((study / "study.yaml").read_text())["bots"]]


def test_a_second_import_adds_its_systems_to_the_study(tmp_path):
    study = tmp_path / "acute"
    for model in ("model1", "model2"):
        # a second source into the same study is an explicit choice (--append); the first needs none
        append = ["--append"] if model == "model2" else []
        result = runner.invoke(app, ["import", "parlai", *append, str(_self_chat(tmp_path, model)), str(study)])
        assert result.exit_code == 0, result.output
    assert _bots(study) == ["model1", "model2"]  # ACUTE makes pairs of the study's bots
    assert "added model2" in " ".join(result.output.split())


def test_a_hand_written_study_file_is_not_rewritten(tmp_path):
    study = tmp_path / "acute"
    study.mkdir()
    text = (
        "# mine\nname: acute\nmethod: acute\nbots:\n"
        "  - {name: model1, type: imported}\n  - {name: model3, type: imported}\n"
    )
    (study / "study.yaml").write_text(text)
    result = runner.invoke(app, ["import", "parlai", str(_self_chat(tmp_path, "model2")), str(study)])
    assert result.exit_code == 0, result.output
    assert (study / "study.yaml").read_text() == text
    assert "model2 not among the bots" in " ".join(result.output.split())
