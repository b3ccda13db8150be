"""Study-file fields that nothing reads are not accepted: a setting that silently does nothing is
worse than an error. `annotation.annotations_per_unit` (each method has its own target:
protocol.annotations_per_pair, annotations_per_segment, conversations_per_pair, ...) and
`recruitment.mturk_sandbox` (the MTurk page names the submit host itself, turkSubmitTo) were
validated but never read, so they were removed."""

from __future__ import annotations

import pytest

from dialeval.config import parse_study
from dialeval.errors import StudyFileError


def study(**extra):
    data = {"name": "s", "method": "acute", "bots": [{"name": "a", "type": "repeat"}, {"name": "b", "type": "eliza"}]}
    data.update(extra)
    return data


@pytest.mark.parametrize(
    "section, field",
    [("annotation", {"annotations_per_unit": 3}), ("recruitment", {"platform": "mturk", "mturk_sandbox": False})],
)
def test_fields_nothing_reads_are_rejected(section, field):
    with pytest.raises(StudyFileError) as info:
        parse_study(study(**{section: field}), "study.yaml")
    name = next(k for k in field if k != "platform")
    assert f"{section}.{name}: unknown field" in str(info.value)


def test_the_fields_that_remain_are_accepted():
    config = parse_study(study(annotation={"units_per_annotator": 3}, recruitment={"platform": "mturk"}), "study.yaml")
    assert config.annotation.units_per_annotator == 3 and config.recruitment.platform == "mturk"


def test_a_corpus_other_than_the_bundled_one_is_refused_through_the_cli(tmp_path):
    """`generation.corpus` names the corpus of seeds and human conversations; only the bundled
    chitchat corpus exists, so another name is an error, not a setting silently ignored."""
    import subprocess
    import sys

    folder = tmp_path / "s"
    cli = [sys.executable, "-m", "dialeval.cli"]
    assert subprocess.run([*cli, "init", "acute", str(folder)], capture_output=True, timeout=120).returncode == 0
    text = (folder / "study.yaml").read_text(encoding="utf-8")
    (folder / "study.yaml").write_text(text.replace("generation:\n", "generation:\n  corpus: reddit\n", 1), "utf-8")
    done = subprocess.run([*cli, "generate", str(folder)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "generation.corpus" in done.stderr + done.stdout and "chitchat" in done.stderr + done.stdout
    config = parse_study(study(generation={"corpus": "chitchat"}), "study.yaml")
    assert config.generation.corpus == "chitchat"
