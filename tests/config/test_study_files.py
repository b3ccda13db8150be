"""Study files: every template validates; errors name the file, the field and what is allowed."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from dialeval import METHODS, registry
from dialeval.config import load_study, parse_study
from dialeval.errors import StudyFileError


@pytest.mark.parametrize("method", METHODS)
def test_every_template_validates(method):
    package, _, name = registry.get(method).study_template.partition(":")
    text = resources.files(package).joinpath(name).read_text()
    config = parse_study(yaml.safe_load(text), f"{method}.yaml")
    assert config.method == method
    assert config.options is not None
    assert "#" in text  # the templates are commented for the user


def base(**extra):
    data = {"name": "s", "method": "acute", "bots": [{"name": "a", "type": "repeat"}, {"name": "b", "type": "eliza"}]}
    data.update(extra)
    return data


def error_of(data) -> str:
    with pytest.raises(StudyFileError) as info:
        parse_study(data, "study.yaml")
    return str(info.value)


def test_unknown_method_lists_the_allowed_ones():
    msg = error_of(base(method="acutee"))
    assert "study.yaml" in msg and "method" in msg and "'acute'" in msg and "'spot-the-bot'" in msg


def test_misspelt_field_is_named():
    msg = error_of(base(annotaton={"units_per_annotator": 3}))
    assert "annotaton" in msg and "unknown field" in msg


def test_bad_nested_value_names_the_path():
    msg = error_of(base(annotation={"units_per_annotator": 0}))
    assert "annotation.units_per_annotator" in msg and "greater than or equal to 1" in msg


def test_protocol_block_is_checked_for_the_method():
    msg = error_of(base(protocol={"comparisons_per_unit": "many"}))
    assert "protocol.comparisons_per_unit" in msg
    msg = error_of(base(protocol={"segment_exchanges": [2, 3]}))  # a spot-the-bot option in an acute study
    assert "protocol.segment_exchanges" in msg


def test_unknown_bot_type_and_duplicate_names():
    assert "nonsense" in error_of(base(bots=[{"name": "x", "type": "nonsense"}]))
    msg = error_of(base(bots=[{"name": "x", "type": "repeat"}, {"name": "x", "type": "eliza"}]))
    assert "unique" in msg and "x" in msg


def test_pairs_must_name_known_bots():
    msg = error_of(base(protocol={"pairs": [["a", "zz"]]}))
    assert "zz" in msg


def test_question_without_text_must_be_a_preset():
    assert "preference" in error_of(base(questions=[{"id": "politeness"}]))
    ok = parse_study(base(questions=[{"id": "politeness", "text": "Who is more polite?"}]))
    assert ok.questions[0].text == "Who is more polite?"


def test_yaml_syntax_error_has_line(tmp_path):
    (tmp_path / "study.yaml").write_text("name: s\nmethod: acute\nbots: [\n  {name: a\n")
    with pytest.raises(StudyFileError) as info:
        load_study(tmp_path)
    assert "study.yaml, line" in str(info.value)


def test_missing_study_file_says_how_to_make_one(tmp_path):
    with pytest.raises(StudyFileError, match="dialeval init"):
        load_study(tmp_path / "nowhere")


def test_not_a_mapping():
    assert "YAML mapping" in error_of(["a", "b"])


def test_docs_study_file_example_validates():
    """The annotated study file of the docs (docs/reference/study-file-example.md) must stay valid."""
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "study-file-example.md"
    block = page.read_text().split("## The study file", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    config = parse_study(yaml.safe_load(block), "docs/reference/study-file-example.md")
    assert config.method == "acute" and config.database.startswith("postgresql://")
    assert config.options.annotations_per_pair == 50
