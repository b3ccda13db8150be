"""The documentation site (mkdocs.yml, docs/): its generated reference pages match the code, and it
builds in strict mode, where a broken link or anchor fails the build (as `make test` runs it)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
# not --quiet: it hides the warnings that --strict counts (the build would pass with a broken link)
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]
ENV_QUIET = {"NO_MKDOCS_2_WARNING": "1"}


def _gen_reference():
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "scripts" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [*MKDOCS, "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **ENV_QUIET},
    )


def test_generated_reference_pages_match_the_code():
    """`scripts/gen_reference.py --check`, as make test runs it: a committed page that differs from
    what the code gives fails (a new option, a changed default or help text)."""
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_reference.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_study_file_reference_lists_every_field_with_type_and_default():
    from dialeval import registry
    from dialeval.bots.registry import BOT_TYPES
    from dialeval.config import StudyConfig, protocol_options

    page = (REPO / "docs" / "reference" / "study-file.md").read_text(encoding="utf-8")
    models = [StudyConfig, *(protocol_options(m) for m in registry.ids()), *(t.options for t in BOT_TYPES.values())]
    seen = set()
    while models:
        model = models.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            assert f"| `{name}` |" in page, f"{model.__name__}.{name} is missing from the study file reference"
            nested = getattr(info.annotation, "model_fields", None)
            if nested is not None:
                models.append(info.annotation)
    # every field says what it is (its description=, else the comment beside or above it in the code)
    undescribed = [row for row in page.splitlines() if row.startswith("| `") and row.endswith("|  |")]
    assert undescribed == [], "fields with no description= or comment in the code: " + "; ".join(undescribed)
    # defaults and descriptions come from the code, e.g. the arena's vote-change window
    change = "| `change_seconds` | float (≥ 0, ≤ 120) | `10.0` | a vote can be changed this long, then it is final |"
    assert change in page


def test_the_cli_reference_lists_every_command_and_option():
    import typer.main

    from dialeval.cli import app

    page = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    for name, command in root.commands.items():
        assert f"## `dialeval {name}`" in page
        for sub_name, sub in getattr(command, "commands", {}).items():
            assert f"## `dialeval {name} {sub_name}`" in page
            command = sub
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("-"):
                    assert f"`{opt}`" in page


def test_the_site_builds_in_strict_mode_with_every_page(tmp_path):
    result = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    pages = []

    def walk(items):
        for item in items:
            for value in item.values() if isinstance(item, dict) else [item]:
                walk(value) if isinstance(value, list) else pages.append(value)

    walk(nav)
    assert {"index.md", "reference/study-file.md", "reference/cli.md", "methods.md", "references.md"} <= set(pages)
    for page in pages:
        built = tmp_path / "site" / (page[:-3] + "/index.html" if page != "index.md" else "index.html")
        assert built.is_file(), page
    # every Markdown file under docs/ is a page of the site (strict mode reports one left out)
    on_disk = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert on_disk == set(pages)


def test_a_broken_link_fails_the_strict_build(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copy(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    page = copy / "docs" / "how-to" / "deploy.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    result = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stderr and "how-to/deploy.md" in result.stderr
