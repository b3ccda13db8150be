"""Tests import no benchmark script: what they share with a benchmark (the load client, the database
checks) lives in the package (dialeval.simulate.load) or in tests/ helpers, so a benchmark can change
or go without breaking the suite."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def test_no_test_imports_a_benchmark():
    offenders = []
    for path in TESTS.rglob("*.py"):
        if "node_modules" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(TESTS)}:{node.lineno}" for n in names if n.split(".")[0] == "benchmarks"]
    assert not offenders, f"tests importing benchmark scripts: {offenders}"
