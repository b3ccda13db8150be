"""`dialeval judge` and the report's judge audit, through the CLI, with a real HTTP judge on loopback.

The demo studies (every collectable method, completed by a simulated crowd) and a small imported
arena study with battle texts are judged by tests/bots/fake_openai_server.py answering by a rule:
`prefer_longer` (a verbosity bias, the same in both side orders) or `always_first` (pure position
bias). The numbers the report prints are checked against what the stored data says they must be.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dialeval import registry
from dialeval.cli import app
from dialeval.demo import demo_methods
from dialeval.study import open_study
from tests.bots.fake_openai_server import closed_port_url, start_fake_openai
from tests.judges.rules import always_first, prefer_longer

runner = CliRunner()
# every method with a demo study and a judge adapter, from the registry (a new method is judged here too)
WITH_JUDGE = tuple(m for m in demo_methods() if registry.get(m).judge is not None)
# The arena's demo votes are on live chats and carry no battle text for a judge (`dialeval judge`
# refuses it, checked below); an arena study imported with its battles' texts is judged instead.
NO_JUDGE_MATERIAL = ("arena",)
JUDGED = tuple(m for m in WITH_JUDGE if m not in NO_JUDGE_MATERIAL)
IMPORTED_ARENA = "arena-imported"  # the arena study imported with texts (its numbers are known here)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def judge_cli(study: Path, url: str, name: str, *extra):
    return invoke(
        "judge", study, "--bot-type", "openai", "--bot", name, "--option", f"base_url={url}", "--option", "model=fake",
        "--concurrency", "3", *extra,
    )  # fmt: skip


def dataset_of(study: Path):
    opened = open_study(study)
    try:
        return opened.store.load_dataset(opened.id)
    finally:
        opened.close()


def report_of(study: Path, *extra) -> dict:
    result = invoke("report", study, *extra)
    assert result.exit_code == 0, result.output
    return json.loads((study / "report" / "report.json").read_text())


def arena_battles(path: Path) -> Path:
    """Six battles of three models with their texts; the crowd prefers the shorter answer in four."""
    short, long_ = "Paris.", "The capital of France is Paris, on the Seine, with about two million people."
    rows = []
    votes = [  # (model_a, model_b, a is long, winner)
        ("m1", "m2", True, "model_b"),
        ("m2", "m3", False, "model_a"),
        ("m3", "m1", True, "model_b"),
        ("m1", "m3", False, "model_a"),
        ("m2", "m1", True, "model_a"),
        ("m3", "m2", False, "model_b"),
    ]
    for k, (a, b, a_long, winner) in enumerate(votes):
        text_a, text_b = (long_, short) if a_long else (short, long_)
        question = {"role": "user", "content": "Capital of France?"}
        rows.append(
            {
                "num": k,
                "model_a": a,
                "model_b": b,
                "winner": winner,
                "judge": f"person-{k % 2}",
                "conversation_a": [question, {"role": "assistant", "content": text_a}],
                "conversation_b": [question, {"role": "assistant", "content": text_b}],
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def demo(completed_demo) -> Path:
    """The suite's completed demo (tests/conftest.py); the tests judge copies of it."""
    return completed_demo


@pytest.fixture
def studies(demo, tmp_path) -> dict[str, Path]:
    """Fresh copies of the judged demo studies (by method id) and an imported arena study with texts."""
    out = {m: Path(shutil.copytree(demo / m, tmp_path / m)) for m in JUDGED}
    arena = tmp_path / IMPORTED_ARENA
    result = invoke("import", "arena", arena_battles(tmp_path / "battles.jsonl"), arena)
    assert result.exit_code == 0, result.output
    out[IMPORTED_ARENA] = arena
    return out


def _judge_rows(dataset, role: str | None = None):
    return [
        j
        for j in dataset.judgments
        if j.annotator_id == "judge-longer" and (role is None or (j.meta.get("judge") or {}).get("role") == role)
    ]


def _acute_expected_agreement(dataset) -> tuple[float, int]:
    """Share of people's ACUTE answers that chose the conversation with the longer judged speaker,
    on the units where the two differ (there the length-preferring judge gives a verdict)."""
    convs = dataset.conversation_map()
    units = {u.id: u for u in dataset.units if u.kind == "acute"}
    hits = []
    for j in dataset.judgments:
        unit = units.get(j.unit_id)
        if unit is None or j.annotator_id.startswith("judge-"):
            continue
        lengths = [
            sum(len(t.text) for t in convs[c].turns if t.speaker == s)
            for c, s in zip(unit.conversation_ids, unit.payload["eval_speakers"])
        ]
        if lengths[0] != lengths[1]:
            longer = unit.conversation_ids[0 if lengths[0] > lengths[1] else 1]
            hits.append(j.value["winner"] == longer)
    return sum(hits) / len(hits), len(hits)


def test_a_demo_without_judge_material_is_refused_with_its_reason(demo, tmp_path):
    assert set(NO_JUDGE_MATERIAL) <= set(WITH_JUDGE)  # the exception names real judged demo methods
    for method in NO_JUDGE_MATERIAL:
        study = Path(shutil.copytree(demo / method, tmp_path / method))
        with start_fake_openai(reply=prefer_longer) as url:
            result = judge_cli(study, url, "longer")
        assert result.exit_code == 2
        assert "has nothing a judge can answer yet" in " ".join(result.output.split())
        assert not _judge_rows(dataset_of(study))  # nothing stored


def test_a_judge_answers_every_method_and_the_report_audits_it(studies):
    with start_fake_openai(reply=prefer_longer) as url:
        assert {"acute", "direct-assessment", "single-model", "spot-the-bot"} <= studies.keys()  # checked below
        for name, study in studies.items():
            result = judge_cli(study, url, "longer")
            assert result.exit_code == 0, f"{name}: {result.output}"
            assert "judge-longer" in result.output and "answers failed" not in result.output
            dataset = dataset_of(study)
            method = dataset.method
            answers, verdicts = _judge_rows(dataset, "order"), _judge_rows(dataset, "verdict")
            assert verdicts, name
            assert {a.platform for a in dataset.annotators if a.id == "judge-longer"} == {"judge"}
            report = report_of(study)
            audit = report["judge_audit"]
            assert audit["judges"] == ["judge-longer"], name
            assert audit["bias"]["judge-longer"]["failed_answers"]["n"] == 0
            assert "judge-longer" in audit["verdict"]
            assert 'id="judge_audit"' in (study / "report" / "index.html").read_text()
            # the people's statistics never count the judge
            assert report["study"]["collected"]["judgments"] == sum(
                1 for j in dataset.judgments if not j.annotator_id.startswith("judge-")
            )
            if registry.get(method).paired:
                assert len(answers) == 2 * len({(j.meta["judge"]["key"]) for j in answers})  # both side orders
                position = audit["bias"]["judge-longer"]["position_bias"]
                assert position["basis"] == "swapped pairs"
                length = audit["bias"]["judge-longer"]["length_preference"]
                assert length["judge_longer_share"]["share"] == 1.0  # it always took the longer option
            else:
                assert not answers  # asked once: each answer is the verdict
            if method == "acute":
                expected, n = _acute_expected_agreement(dataset)
                got = audit["questions"]["preference"]["judges"]["judge-longer"]["all"]
                assert got["pairs"] == n and got["agreement"] == pytest.approx(expected, abs=1e-4)
                lo, hi = got["agreement_ci"]
                assert lo <= got["agreement"] <= hi
                # judge-corrected intervals: people's units plus the judge's labels on every other unit
                units = {u.id for u in dataset.units if u.kind == "acute"}
                judged = {
                    j.unit_id for j in dataset.judgments if j.unit_id in units and j.annotator_id != "judge-longer"
                }
                corrected = audit["questions"]["preference"]["judges"]["judge-longer"]["judge_corrected"]
                assert (corrected["labelled"], corrected["judge_only"]) == (len(judged), len(units) - len(judged))
                assert {s["name"] for s in corrected["systems"]} == {s["name"] for s in report["systems"]}
                assert "Judge-corrected intervals: judge-longer" in (study / "report" / "index.html").read_text()
            if name == IMPORTED_ARENA:
                # six battles; the crowd chose the shorter answer in four of them
                got = audit["questions"]["battle"]["judges"]["judge-longer"]["all"]
                assert got["pairs"] == 6 and got["agreement"] == pytest.approx(2 / 6, abs=1e-4)
                assert audit["bias"]["judge-longer"]["length_preference"]["people_longer_share"]["share"] == (
                    pytest.approx(2 / 6, abs=1e-4)
                )
            if method == "single-model":
                turn = [j for j in verdicts if j.question == "turn"]
                assert turn and all(j.value["engaging"] is True and j.value["humanlike"] is False for j in turn)
            if method == "spot-the-bot":
                assert all(v.value["entity0"] == "bot" and v.value["fluency"] == 0 for v in verdicts)

            # a second run asks nothing and stores nothing
            before = len(dataset.judgments)
            requests = url.state.requests
            again = judge_cli(study, url, "longer")
            assert again.exit_code == 0, again.output
            assert "this run stored 0 answers and 0 verdicts" in " ".join(again.output.split())
            assert url.state.requests == requests and len(dataset_of(study).judgments) == before


def test_a_judge_that_always_says_first_shows_position_bias(studies):
    with start_fake_openai(reply=always_first) as url:
        for name in ("acute", IMPORTED_ARENA):
            study = studies[name]
            result = judge_cli(study, url, "first")
            assert result.exit_code == 0, result.output
            assert "got different answers in the two side orders" in result.output
            plain = report_of(study)
            position = plain["judge_audit"]["bias"]["judge-first"]["position_bias"]
            assert position["first_share"]["share"] == 1.0 and position["first_share"]["p_value"] < 0.001
            assert position["consistent_pairs"]["share"] == 0.0
            # no verdict: its answers never enter the statistics, even when asked to include judges
            included = report_of(study, "--include-judges")
            assert included["judges_included"] is True
            assert [s["n"] for s in included["systems"]] == [s["n"] for s in plain["systems"]]


def test_include_judges_counts_the_verdicts_like_an_annotator(studies):
    study = studies[IMPORTED_ARENA]
    with start_fake_openai(reply=prefer_longer) as url:
        assert judge_cli(study, url, "longer").exit_code == 0
    assert report_of(study)["battles"] == 6
    assert report_of(study, "--include-judges")["battles"] == 12


def test_answers_that_cannot_be_read_are_counted_and_asked_again(studies):
    study = studies["direct-assessment"]
    items = len([c for c in dataset_of(study).conversations if any(t.speaker == "bot" for t in c.turns)])
    with start_fake_openai(reply="I would rate it quite highly overall.") as url:
        result = judge_cli(study, url, "longer")
        assert result.exit_code == 0, result.output  # never crashes the run
        assert url.state.requests == 2 * items  # one second try per item
    assert f"{items} answers failed" in " ".join(result.output.split())
    assert "no JSON object in the answer" in result.output
    audit = report_of(study)["judge_audit"]
    assert audit["bias"]["judge-longer"]["failed_answers"]["n"] == items
    with start_fake_openai(reply=prefer_longer) as url:
        assert judge_cli(study, url, "longer").exit_code == 0
        assert url.state.requests == items  # only the failed ones are asked again
    audit = report_of(study)["judge_audit"]
    assert audit["bias"]["judge-longer"]["failed_answers"]["n"] == 0


def test_an_unreachable_judge_stops_with_one_message_and_loses_nothing(studies):
    study = studies["spot-the-bot"]
    before = len(dataset_of(study).judgments)
    result = invoke(
        "judge", study, "--bot-type", "openai", "--bot", "gone", "--option", f"base_url={closed_port_url()}",
        "--option", "model=x", "--option", "retries=0", "--yes",  # past the check: the run meets the error
    )  # fmt: skip
    assert result.exit_code == 2
    assert "nothing is listening" in result.output and "rerun the same command" in result.output
    assert len(dataset_of(study).judgments) == before
    bad = invoke("judge", study, "--bot", "no-such-bot")
    assert bad.exit_code == 2 and "no judge or bot 'no-such-bot' in the study file" in bad.output


def test_a_judge_named_in_the_study_file(studies):
    import yaml

    study = studies[IMPORTED_ARENA]
    with start_fake_openai(reply=prefer_longer) as url:
        data = yaml.safe_load((study / "study.yaml").read_text())
        data["judges"] = [{"name": "gpt-judge", "type": "openai", "options": {"base_url": str(url), "model": "fake"}}]
        (study / "study.yaml").write_text(yaml.safe_dump(data))
        result = invoke("judge", study, "--bot", "gpt-judge")
        assert result.exit_code == 0, result.output
    dataset = dataset_of(study)
    assert len([j for j in dataset.judgments if j.annotator_id == "judge-gpt-judge"]) == 6 * 2 + 6  # orders, verdicts
    assert "gpt-judge" not in {b for c in dataset.conversations for b in c.bots}  # a judge is never evaluated
    data["judges"].append({"name": "m1", "type": "repeat"})
    (study / "study.yaml").write_text(yaml.safe_dump(data))
    clash = invoke("judge", study, "--bot", "gpt-judge")
    assert clash.exit_code == 2 and "differ from the bots'" in clash.output
