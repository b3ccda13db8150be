"""Every variant of the public releases imports through the CLI (data outside the repository).

The files are not in ../shared/data and are never committed here. Put them in a folder and point
DIALEVAL_OUTSIDE_DATA at it (default: ../outside-data beside the repository), laid out as:

    dialogue-eval/data/raw_mturk_csv/{FreeTopicRound1,FreeTopicRound2,IceBreaker}/*.csv
        github TianboJi/Dialogue-Eval @ 33af024, data/raw_mturk_csv/ as is
    spot-the-bot/{sampled,packed,annotated}-dialogues-full-{dailydialog,empathetic,convai2}.json
        github jderiu/spot-the-bot-code @ 6b6ffa1, data_dump/MongoDump.zip unpacked
    parlai/acute-v0-speaker/pairings.jsonl       ParlAI 1e905fec8 parlai/mturk/tasks/acute_eval/example/
    parlai/acute-v1-dialogue-ids/pairings.jsonl  ParlAI d6e34d113 (same path)
    parlai/current/pairings.jsonl                ParlAI a29567f parlai/crowdsourcing/tasks/acute_eval/task_config/
    parlai/self_chats/model{1,2}.blended_skill_talk.{jsonl,metadata}   (same folder, self_chats/)
    parlai/mturk-example/chat_log.jsonl          ParlAI 4f7143a6f~1 parlai/mturk/tasks/acute_eval/example/
    parlai/model_chat/{basic,with_personas_and_buckets}/2020_12_29/20201229_173200_1_live.json
    parlai/model_chat/final_chat_data.json       ParlAI a29567f tests/crowdsourcing/tasks/model_chat/...
    parlai/wizard_of_wikipedia/chat_example{1,2}.jsonl                ParlAI a29567f projects/wizard_of_wikipedia/
    parlai/turn_annotations_static/sample_conversations.jsonl         ParlAI a29567f tests/crowdsourcing/tasks/
                                                                      turn_annotations_static/task_config/

Without them every test here is skipped with that reason (in CI too: the release files are not
part of the project's data). When DIALEVAL_OUTSIDE_DATA is set explicitly, a missing file fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from dialeval.cli import app
from dialeval.store import Store
from tests.conftest import REPO

runner = CliRunner()
EXPLICIT = os.environ.get("DIALEVAL_OUTSIDE_DATA")
OUTSIDE = Path(EXPLICIT) if EXPLICIT else REPO.parent / "outside-data"


def outside(relative: str) -> Path:
    path = OUTSIDE / relative
    if not path.exists():
        message = (
            f"outside data missing: {path} (the public releases' other files; see this module's "
            "docstring for where each comes from; set DIALEVAL_OUTSIDE_DATA)"
        )
        if EXPLICIT:
            pytest.fail(message)
        pytest.skip(message)
    return path


def imported(*args) -> dict[str, int]:
    """Run `dialeval import ...`; the study's stored counts."""
    result = runner.invoke(app, ["import", *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    study = Path(str(args[-1]))
    store = Store(f"sqlite:///{study / 'dialeval.db'}")
    try:
        return store.counts(store.get_study(yaml.safe_load((study / "study.yaml").read_text())["name"]).id)
    finally:
        store.close()


def bot_names(study: Path) -> set[str]:
    return {b["name"] for b in yaml.safe_load((study / "study.yaml").read_text())["bots"]}


# run: (csv, rows, judgments, empty submissions)
DIALOGUE_EVAL_RUNS = [
    ("FreeTopicRound1/Combined_Batches_305hits.csv", 305, 1824),
    ("FreeTopicRound2/Combined_Batches_296hits.csv", 296, 1764),  # empty: [{"feedback": ...}] at line 4
    ("IceBreaker/Combined_Batches_290hits.csv", 290, 1728),  # the run that failed at line 94
]


@pytest.mark.parametrize(("run", "rows", "judgments"), DIALOGUE_EVAL_RUNS)
def test_every_dialogue_eval_run(tmp_path, run, rows, judgments):
    csv = outside(f"dialogue-eval/data/raw_mturk_csv/{run}")
    counts = imported("dialogue-eval", csv, tmp_path / "de")
    assert (counts["units"], counts["conversations"], counts["judgments"]) == (rows, 6 * rows, judgments)
    assert {"biencoder", "polyencoder+persona", "qc"} <= bot_names(tmp_path / "de")


def test_self_replication_of_the_two_free_runs(tmp_path):
    # Ji et al. 2022, Table 3: r = 0.969 between the two free-topic runs
    for n, (run, _, _) in enumerate(DIALOGUE_EVAL_RUNS[:2]):
        imported("dialogue-eval", outside(f"dialogue-eval/data/raw_mturk_csv/{run}"), tmp_path / f"run{n + 1}")
    out = tmp_path / "cmp.json"
    result = runner.invoke(app, ["compare", str(tmp_path / "run1"), str(tmp_path / "run2"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    compared = json.loads(out.read_text())
    assert compared["n"] == 10 and compared["pearson"] == pytest.approx(0.969, abs=0.005)


# domain: (conversations, packages, judgments, paper names)
SPOT_THE_BOT = {
    "dailydialog": (570, 54, 2136, {"GPT", "BR", "S2", "DR"}),
    "empathetic": (750, 72, 2958, {"GPT", "BR", "S2", "DR", "BL"}),
    "convai2": (975, 108, 5123, {"BL", "LC", "KV", "HF", "BR", "DR"}),
}


@pytest.mark.parametrize("domain", SPOT_THE_BOT)
def test_every_spot_the_bot_domain(tmp_path, domain):
    folder = outside(f"spot-the-bot/sampled-dialogues-full-{domain}.json").parent
    conversations, packages, judgments, names = SPOT_THE_BOT[domain]
    counts = imported("spot-the-bot", folder, "--domain", domain, tmp_path / "stb")
    assert (counts["conversations"], counts["units"], counts["judgments"]) == (conversations, packages, judgments)
    assert bot_names(tmp_path / "stb") == names


def test_convai2_export_names_are_made_valid(tmp_path):
    folder = outside("spot-the-bot/sampled-dialogues-full-convai2.json").parent
    imported("spot-the-bot", folder, "--domain", "convai2", "--export-names", tmp_path / "stb")
    bots = {b["name"]: b for b in yaml.safe_load((tmp_path / "stb" / "study.yaml").read_text())["bots"]}
    assert bots["zoo-blender-blender_90M-model"]["options"]["original_name"] == "zoo:blender/blender_90M/model"
    assert {"lost_in_conversation", "kvmemnn", "huggingface", "bert_rank", "suckybot"} <= set(bots)


@pytest.mark.parametrize("variant", ["acute-v0-speaker", "acute-v1-dialogue-ids", "current"])
def test_every_acute_pairings_shape(tmp_path, variant):
    counts = imported("acute-pairings", outside(f"parlai/{variant}/pairings.jsonl"), tmp_path / "acute")
    assert (counts["conversations"], counts["units"]) == (4, 2)
    assert bot_names(tmp_path / "acute") == {"modela", "modelb", "modelc"}


def test_fast_acute_self_chats_of_two_models(tmp_path):
    for model in ("model1", "model2"):
        append = ["--append"] if model == "model2" else []  # a second source is added explicitly
        counts = imported(
            "parlai", *append, outside(f"parlai/self_chats/{model}.blended_skill_talk.jsonl"), tmp_path / "sc"
        )
    assert counts["conversations"] == 10
    assert bot_names(tmp_path / "sc") == {"model1", "model2"}  # the second import adds its model
    store = Store(f"sqlite:///{tmp_path / 'sc' / 'dialeval.db'}")
    try:
        dataset = store.load_dataset(store.get_study("sc").id)
    finally:
        store.close()
    assert {b for c in dataset.conversations for b in c.bots} == {"model1", "model2"}
    assert {c.source for c in dataset.conversations} == {"self-chat"}


def test_acute_example_chat_log(tmp_path):
    counts = imported("parlai", outside("parlai/mturk-example/chat_log.jsonl"), tmp_path / "log")
    assert counts["conversations"] == 100


def test_model_chat_results_folder(tmp_path):
    folder = outside("parlai/model_chat")
    counts = imported("parlai", folder, tmp_path / "mc")
    assert counts["conversations"] == 3
    assert bot_names(tmp_path / "mc") == {"TransformerGenerator", "Speaker-2"}  # "Speaker 2" made valid


@pytest.mark.parametrize(
    ("relative", "conversations", "bots"),
    [
        ("parlai/wizard_of_wikipedia/chat_example1.jsonl", 1, {"model"}),  # acts name `speaker`, not `id`
        ("parlai/wizard_of_wikipedia/chat_example2.jsonl", 1, {"model"}),
        ("parlai/turn_annotations_static/sample_conversations.jsonl", 6, {"sample_model"}),
    ],
)
def test_other_parlai_chat_logs(tmp_path, relative, conversations, bots):
    counts = imported("parlai", outside(relative), tmp_path / "log")
    assert counts["conversations"] == conversations
    assert bot_names(tmp_path / "log") == bots
