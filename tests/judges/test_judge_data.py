"""The judge audit on real data (the Arena battles with three judges' verdicts) and a real local model.

Arena: ../shared/data/arena-judges holds 26,919 Arena battles with the crowd's vote (human.jsonl)
and GPT-4's, GPT-3.5's and Claude 3's verdicts on each. The data's own numbers: GPT-4 agrees with
the crowd on 83.3% of the battles both called decisively; GPT-3.5 says "model_a" on 86% of them.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dialeval.bots import local_llm
from dialeval.cli import app
from dialeval.study import open_study
from tests.conftest import in_ci
from tests.judges.test_judge_cli import arena_battles

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_arena_judges_agreement_and_position_bias_on_real_data(shared_data, tmp_path):
    folder = shared_data("arena-judges")
    study = tmp_path / "arena"
    result = invoke(
        "import", "arena", folder / "human.jsonl", study,
        "--judges", folder / "gpt-4-0125-preview.jsonl", "--judges", folder / "gpt-3.5-turbo.jsonl",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    result = invoke("report", study)
    assert result.exit_code == 0, result.output
    assert "LLM judges: gpt-4-0125-preview agrees with people on battle (0.83)" in " ".join(result.output.split())
    report = json.loads((study / "report" / "report.json").read_text())
    assert report["battles"] == 26919  # the judges are not counted as people
    audit = report["judge_audit"]
    assert audit["headline"] == "decisive"
    gpt4 = audit["questions"]["battle"]["judges"]["gpt-4-0125-preview"]["decisive"]
    assert gpt4["agreement"] == pytest.approx(0.833, abs=0.001)
    assert gpt4["agreement_ci"][0] < 0.833 < gpt4["agreement_ci"][1]
    assert gpt4["kappa"] == pytest.approx(0.665, abs=0.005)
    gpt35 = audit["bias"]["gpt-3.5-turbo"]["position_bias"]
    assert gpt35["basis"] == "one side order (no swapped pairs)"
    assert gpt35["first_share"]["share"] == pytest.approx(0.863, abs=0.002)
    assert gpt35["first_share"]["p_value"] < 1e-6
    people = gpt35["people_first_share"]
    assert people["ci"][0] < 0.5 < people["ci"][1]  # the crowd shows no position bias
    html = (study / "report" / "index.html").read_text()
    assert "judge_audit.bias" in html and "gpt-3.5-turbo" in html


@pytest.mark.llm
def test_the_local_model_judges_offline_and_its_unreadable_answers_are_counted(tmp_path):
    """SmolLM2-135M often ignores the JSON format: every answer is either stored or counted as failed."""
    if local_llm.missing_requirements():
        message = f"extra 'llm' not installed: {local_llm.missing_requirements()}"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    study = tmp_path / "arena"
    assert invoke("import", "arena", arena_battles(tmp_path / "battles.jsonl"), study).exit_code == 0
    result = invoke(
        "judge", study, "--bot-type", "local-llm", "--bot", "smollm2", "--option", "max_new_tokens=16",
        "--option", "temperature=0", "--limit", "1", "--concurrency", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    opened = open_study(study)
    try:
        dataset = opened.store.load_dataset(opened.id)
    finally:
        opened.close()
    mine = [j for j in dataset.judgments if j.annotator_id == "judge-smollm2"]
    roles = [j.meta["judge"]["role"] for j in mine]
    answered, failed = roles.count("order"), roles.count("failure")
    # one battle, both side orders: each order is one question (and a second try when unreadable),
    # two to four generations of the model on CPU; a second battle only repeated the same check
    assert answered + failed == 2
    text = " ".join(result.output.split())
    assert f"stored {answered} answers" in text
    if failed:
        assert f"{failed} answers failed" in text
    report = invoke("report", study)
    assert report.exit_code == 0, report.output
    audit = json.loads((study / "report" / "report.json").read_text())["judge_audit"]
    assert audit["bias"]["judge-smollm2"]["failed_answers"]["n"] == failed
