"""The licence check `make test` runs (scripts/check_licences.py): no GPL-family licence in the base
install, GPL/AGPL nowhere users install, LGPL allowed in an extra (psycopg). Run as CI runs it, in a
subprocess; the failing cases use made-up installed distributions on PYTHONPATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_licences.py"


def check(*args: str, path: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_dialeval_base_install_has_no_gpl_and_every_part_is_listed():
    result = check()
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    base = out.split("== base:")[1].split("\n== ")[0]
    assert "GPL" not in base and "krippendorff" not in base
    for part in ("postgres", "llm", "metrics", "parquet", "test"):
        assert f"== {part}:" in out
    # psycopg is LGPL: shown, and allowed in the postgres extra
    assert "weak copyleft: psycopg " in out.split("== postgres:")[1].split("\n== ")[0]


def fake_dist(site: Path, name: str, licence: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    metadata = f"Metadata-Version: 2.4\nName: {name}\nVersion: 1.0\nLicense-Expression: {licence}\n"
    (info / "METADATA").write_text(metadata)


def project(tmp_path: Path, base: list[str], extras: dict[str, list[str]]) -> Path:
    lines = ["[project]", 'name = "someproject"', f"dependencies = {base!r}", "[project.optional-dependencies]"]
    lines += [f"{k} = {v!r}" for k, v in extras.items()]
    path = tmp_path / "pyproject.toml"
    path.write_text("\n".join(lines).replace("'", '"') + "\n")
    return path


def test_gpl_in_the_base_install_fails_naming_it(tmp_path):
    site = tmp_path / "site"
    fake_dist(site, "gplthing", "GPL-3.0-or-later")
    fake_dist(site, "dualthing", "MIT OR GPL-2.0-only")
    result = check("--pyproject", str(project(tmp_path, ["dualthing", "gplthing>=1"], {})), path=site)
    assert result.returncode == 1, result.stdout
    assert "base install: gplthing 1.0 is GPL-3.0-or-later" in result.stderr
    assert "dualthing" not in result.stderr  # an OR with a permissive licence passes


def test_lgpl_allowed_in_an_extra_gpl_not_and_a_missing_base_dependency_fails(tmp_path):
    site = tmp_path / "site"
    fake_dist(site, "lgplthing", "LGPL-3.0-only")
    fake_dist(site, "agplthing", "AGPL-3.0-only")
    ok = check("--pyproject", str(project(tmp_path, [], {"db": ["lgplthing"], "test": ["agplthing"]})), path=site)
    assert ok.returncode == 0, ok.stdout + ok.stderr  # `test` is for developers: listed, not judged
    bad = check("--pyproject", str(project(tmp_path, ["nosuchthing"], {"web": ["agplthing"]})), path=site)
    assert bad.returncode == 1
    assert "extra 'web': agplthing 1.0 is AGPL-3.0-only" in bad.stderr
    assert "base install: not installed, licence unknown: nosuchthing" in bad.stderr
