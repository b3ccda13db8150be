"""The method conformance suite (dialeval.conformance.check_method) on every registered method, and
on broken methods, to show that it catches what it claims to."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from dialeval import registry
from dialeval.conformance import MethodConformanceError, check_method


@pytest.mark.parametrize("method_id", registry.ids())
def test_every_registered_method_conforms(method_id, tmp_path):
    passed = check_method(method_id, workdir=tmp_path)
    assert passed[:4] == ["parts", "signatures", "options", "study template"]
    method = registry.get(method_id)
    if method.collectable and method.demo is not None:
        assert "pages" in passed and "report" in passed
        assert ("simulation" in passed) == (method.simulation is not None)


class LaxOptions(BaseModel):  # plain pydantic: a misspelt option would be ignored
    rounds: int = 3


def needs_two(dataset, other):  # an analysis must take the data set alone
    return {}


def test_the_suite_reports_every_broken_part():
    acute = registry.get("acute")
    broken = dataclasses.replace(
        acute,
        id="broken",
        protocol=None,
        demo=None,
        study_template=None,
        figures="dialeval.no_such_module:figures",
    )
    with pytest.raises(MethodConformanceError) as caught:
        check_method(broken)
    assert caught.value.failures[0].startswith("parts: ") and "no_such_module" in caught.value.failures[0]

    lax = dataclasses.replace(
        broken,
        figures=None,
        options=f"{__name__}:LaxOptions",
        analysis=f"{__name__}:needs_two",
    )
    with pytest.raises(MethodConformanceError) as caught:
        check_method(lax)
    text = "\n".join(caught.value.failures)
    assert "signatures: " in text and "needs_two" in text
    assert "options: " in text and "accepts an unknown key" in text
