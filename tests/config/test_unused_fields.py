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
