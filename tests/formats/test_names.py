"""System names the store cannot take are made valid on import, the original kept."""

from __future__ import annotations

import yaml
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.formats.names import is_valid_name, make_names_safe, safe_name
from dialeval.records import Conversation, Dataset, Judgment, Turn
from dialeval.store import Store
from tests.formats.test_spot_the_bot_import import _tiny, _write

runner = CliRunner()


def test_safe_name():
    assert safe_name("zoo:blender/blender_90M/model") == "zoo-blender-blender_90M-model"
    assert safe_name("Speaker 2") == "Speaker-2"
    assert safe_name("gpt-4 (0613)") == "gpt-4-0613"
    assert safe_name("已经") == "system"
    assert safe_name("ok_name-1.5+x") == "ok_name-1.5+x"
    assert is_valid_name(safe_name("x" * 300)) and len(safe_name("x/" * 100)) <= 100


def test_make_names_safe_renames_everywhere_and_keeps_names_unique():
    ds = Dataset(
        method="spot-the-bot",
        conversations=[
            Conversation("c1", ["a/b", "a b"], [Turn("entity0", "hi", bot="a/b"), Turn("entity1", "yo", bot="a b")]),
            Conversation("c2", ["a-b", "human"], []),
        ],
        judgments=[Judgment("w", None, "spot-the-bot", {}, conversation_id="c1", shown_order=["a/b", "a b"])],
    )
    originals = make_names_safe(ds)
    assert originals == {"a-b-2": "a/b", "a-b-3": "a b"}  # "a-b" was taken by another system
    assert ds.conversations[0].bots == ["a-b-2", "a-b-3"] and ds.conversations[1].bots == ["a-b", "human"]
    assert [t.bot for t in ds.conversations[0].turns] == ["a-b-2", "a-b-3"]
    assert ds.judgments[0].shown_order == ["a-b-2", "a-b-3"]


def _blender_export(folder):
    conv, pack, ann = _tiny()
    conv.update(
        {
            "system_type0": "model",
            "system_name0": "zoo:blender/blender_90M/model",
            "system_type1": "suckybot",
            "system_name1": "tmp/suckybot/model",
        }
    )
    folder.mkdir()
    _write(folder, "empathetic", [conv], [pack], [ann])
    return folder


def test_import_with_export_names_keeps_the_original_name(tmp_path):
    export = _blender_export(tmp_path / "export")
    study = tmp_path / "stb"
    result = runner.invoke(
        app, ["import", "spot-the-bot", str(export), "--domain", "empathetic", "--export-names", str(study)]
    )
    assert result.exit_code == 0, result.output
    assert "zoo-blender-blender_90M-model" in " ".join(result.output.split())
    bots = {b["name"]: b for b in yaml.safe_load((study / "study.yaml").read_text())["bots"]}
    assert set(bots) == {"zoo-blender-blender_90M-model", "suckybot"}
    assert bots["zoo-blender-blender_90M-model"]["options"]["original_name"] == "zoo:blender/blender_90M/model"
    store = Store(f"sqlite:///{study / 'dialeval.db'}")
    try:
        dataset = store.load_dataset(store.get_study("stb").id)
    finally:
        store.close()
    assert dataset.conversations[0].bots == ["zoo-blender-blender_90M-model", "suckybot"]
    assert dataset.judgments[0].shown_order == ["zoo-blender-blender_90M-model", "suckybot"]


def test_import_uses_paper_names_by_default_and_rename_wins(tmp_path):
    export = _blender_export(tmp_path / "export")
    result = runner.invoke(app, ["import", "spot-the-bot", str(export), "--domain", "empathetic", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert {b["name"] for b in yaml.safe_load((tmp_path / "a" / "study.yaml").read_text())["bots"]} == {"BL", "DR"}
    result = runner.invoke(
        app,
        [
            "import",
            "spot-the-bot",
            str(export),
            "--domain",
            "empathetic",
            "--rename",
            "DR=weak-s2s",
            str(tmp_path / "b"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert {b["name"] for b in yaml.safe_load((tmp_path / "b" / "study.yaml").read_text())["bots"]} == {
        "BL",
        "weak-s2s",
    }
