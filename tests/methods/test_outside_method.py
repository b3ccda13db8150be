"""A method from an outside package, registered through the `dialeval.methods` entry-point group
exactly as dialeval's own are, is seen by the study-file check, `dialeval init`, `dialeval import`
and `dialeval report` (run as a user runs them: the real command in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from tests.conftest import REPO

TOY = '''
"""A toy method: annotators say how many turns a conversation felt like (no pages of its own)."""
import json

from dialeval.formats import ImportFormat
from dialeval.plugin import Method, Outcome, Protocol, StrictModel
from dialeval.records import Annotator, Conversation, Dataset, Judgment, Turn


class ToyOptions(StrictModel):
    rounds: int = 3


class ToyPages(Protocol[ToyOptions]):
    """Named so `init` offers the method; this test serves no pages (the Method has no demo study)."""

    method = "toy"
    template = "toy.html"

    def prepare(self):
        return 0

    def act(self, annotator, assignment, action, data):
        return Outcome(done=True)


def read_votes(path):
    """One JSON line per vote: {"bot": ..., "turns": n}."""
    dataset = Dataset(method="toy")
    with open(path, encoding="utf-8") as lines:
        for i, line in enumerate(lines):
            vote = json.loads(line)
            turns = [Turn(speaker="human", text="hi"), Turn(speaker="bot", text="hello", bot=vote["bot"])]
            dataset.conversations.append(Conversation(id=f"c{i}", bots=[vote["bot"]], turns=turns))
            dataset.annotators.append(Annotator(id=f"w{i}"))
            judgment = Judgment(f"w{i}", None, "turns", vote["turns"], conversation_id=f"c{i}")
            dataset.judgments.append(judgment)
    return dataset


VOTES = ImportFormat("toymethod:read_votes")


def analyze(dataset, **options):
    felt = {}
    for j in dataset.judgments:
        bot = next(c.bots[0] for c in dataset.conversations if c.id == j.conversation_id)
        felt.setdefault(bot, []).append(j.value)
    systems = [{"name": b, "mean_turns": sum(v) / len(v)} for b, v in felt.items()]
    return {"systems": sorted(systems, key=lambda s: -s["mean_turns"]), "toy_rounds": "counted"}


METHOD = Method(
    id="toy",
    title="Toy turn counting",
    paper="Nobody et al. 2026",
    options="toymethod:ToyOptions",
    analysis="toymethod:analyze",
    protocol="toymethod:ToyPages",
    templates="toymethod",
    methods_text="Annotators counted turns.",
    study_template="toymethod:study.yaml",
    importers=("toy-votes",),
)
'''

STUDY = """\
# a toy study
name: my-toy-study
method: toy
bots:
  - name: a
    type: repeat
protocol:
  rounds: 5
"""


def _outside_package(root: Path) -> Path:
    """toymethod/ plus its installed metadata (a dist-info with the entry point), as pip would leave it."""
    (root / "toymethod").mkdir(parents=True)
    (root / "toymethod" / "__init__.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
    (root / "toymethod" / "study.yaml").write_text(STUDY, encoding="utf-8")
    (root / "toymethod" / "templates").mkdir()
    (root / "toymethod" / "templates" / "toy.html").write_text('{% extends "base.html" %}', encoding="utf-8")
    info = root / "toymethod-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toymethod\nVersion: 0.1\n", encoding="utf-8")
    entry_points = "[dialeval.methods]\ntoy = toymethod:METHOD\n\n[dialeval.formats]\ntoy-votes = toymethod:VOTES\n"
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return root


def _run(root: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPO / "src")]), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "dialeval.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_an_outside_method_registered_by_entry_point_works_through_the_cli(tmp_path):
    root = _outside_package(tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()

    help_text = _run(root, "init", "--help", cwd=work)
    assert help_text.returncode == 0, help_text.stderr
    assert "toy" in help_text.stdout and "acute" in help_text.stdout

    made = _run(root, "init", "toy", "toy-study", cwd=work)
    assert made.returncode == 0, made.stdout + made.stderr
    written = (work / "toy-study" / "study.yaml").read_text(encoding="utf-8")
    assert "name: toy-study" in written and "method: toy" in written

    # the study-file check validates the outside method's own options
    (work / "bad").mkdir()
    (work / "bad" / "study.yaml").write_text(STUDY.replace("rounds: 5", "rounds: many"), encoding="utf-8")
    refused = _run(root, "generate", "bad", cwd=work)
    assert refused.returncode != 0
    assert "protocol.rounds" in refused.stdout + refused.stderr

    # votes imported through the outside package's own import format, then its analysis writes the report
    votes = work / "votes.jsonl"
    votes.write_text("".join(json.dumps({"bot": b, "turns": n}) + "\n" for b, n in [("x", 4), ("x", 6), ("y", 2)]))
    imported = _run(root, "import", "toy-votes", str(votes), "toy-data", cwd=work)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    reported = _run(root, "report", "toy-data", cwd=work)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    report = json.loads((work / "toy-data" / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["method"] == "toy" and report["toy_rounds"] == "counted"
    assert [(s["name"], s["mean_turns"]) for s in report["systems"]] == [("x", 5.0), ("y", 2.0)]
    assert yaml.safe_load((work / "toy-data" / "study.yaml").read_text(encoding="utf-8"))["method"] == "toy"
    assert report["study"]["methods"].startswith("Method: Toy turn counting (Nobody et al. 2026). Annotators counted")


def test_without_the_outside_package_the_method_is_unknown(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "s").mkdir()
    (work / "s" / "study.yaml").write_text(STUDY, encoding="utf-8")
    result = _run(tmp_path / "empty", "generate", "s", cwd=work)
    assert result.returncode != 0
    assert "unknown method 'toy'" in result.stdout + result.stderr and "'acute'" in result.stdout + result.stderr


def test_the_outside_method_passes_the_conformance_suite(tmp_path):
    """An outside author checks a method with dialeval.conformance.check_method (docs/methods.md)."""
    root = _outside_package(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPO / "src")])}
    code = "import toymethod; from dialeval.conformance import check_method; print(check_method(toymethod.METHOD))"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "'parts', 'signatures', 'options', 'study template', 'report'" in result.stdout

    # a part that does not load is reported by name
    broken = "import dataclasses, toymethod; from dialeval.conformance import check_method; " + (
        "check_method(dataclasses.replace(toymethod.METHOD, figures='toymethod:no_figures'))"
    )
    result = subprocess.run([sys.executable, "-c", broken], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "figures = 'toymethod:no_figures' does not load" in result.stderr
