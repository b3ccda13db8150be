"""The method registry is the only list of methods: no list, set, tuple, dict or switch of method ids
anywhere in src/dialeval outside src/dialeval/methods/ (Python and page templates)."""

from __future__ import annotations

import ast
import re

from dialeval import registry
from tests.conftest import REPO

SRC = REPO / "src" / "dialeval"
METHODS_DIR = SRC / "methods"
# (file, literal) pairs that equal a method id but are no list of methods. Only these two: the import
# formats of the Spot The Bot and Chatbot Arena releases carry their projects' names, which the
# methods share; they are format names (keys of formats.IMPORTERS), the method comes from
# Method.importers.
ALLOWED = {("formats/__init__.py", "spot-the-bot"), ("formats/__init__.py", "arena")}


def _ids() -> set[str]:
    registered = set(registry.ids())
    # the package names too (pairwise_turn ...): a switch over module names is a list of methods as well
    return registered | {m.package.rpartition(".")[2] for m in registry.all_methods().values()}


def _literals(nodes) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def violations_in(source: str, ids: set[str]) -> list[tuple[int, str, str]]:
    """(line, what, literal) for every collection display, dict key, comparison or match case whose
    string literal is a method id."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            hits, what = _literals(node.elts), "collection"
        elif isinstance(node, ast.Dict):
            hits, what = _literals([k for k in node.keys if k is not None]), "dict key"
        elif isinstance(node, ast.Compare):
            hits, what = _literals([node.left, *node.comparators]), "comparison"
        elif isinstance(node, ast.MatchValue):
            hits, what = _literals([node.value]), "match case"
        else:
            continue
        found += [(node.lineno, what, h) for h in hits if h in ids]
    return found


def test_the_detector_sees_lists_and_switches():
    ids = {"acute", "spot-the-bot"}
    source = (
        'A = ("acute", "x")\nB = {"spot-the-bot": 1}\nif m == "acute":\n    pass\n'
        'match m:\n    case "acute":\n        pass\nC = m in {"spot-the-bot"}\n'
    )
    assert sorted(violations_in(source, ids)) == [
        (1, "collection", "acute"),
        (2, "dict key", "spot-the-bot"),
        (3, "comparison", "acute"),
        (6, "match case", "acute"),
        (8, "collection", "spot-the-bot"),  # `m in {...}`: the set display itself
    ]
    assert violations_in('METHOD = "acute"\nd = Dataset(method="acute")\n', ids) == []


def test_no_list_or_switch_of_method_ids_outside_the_registry():
    ids = _ids()
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        if METHODS_DIR in path.parents:
            continue
        rel = path.relative_to(SRC).as_posix()
        for line, what, literal in violations_in(path.read_text(encoding="utf-8"), ids):
            if (rel, literal) not in ALLOWED:
                bad.append(f"{rel}:{line}: {what} names method '{literal}'")
    assert not bad, "method ids listed outside dialeval/methods (read the registry instead):\n" + "\n".join(bad)


def test_no_switch_of_method_ids_in_the_shared_page_templates():
    ids = "|".join(re.escape(i) for i in sorted(_ids()))
    switch = re.compile(rf"""(==|!=|\bin\b)\s*[(\[]?\s*["'](?:{ids})["']""")
    bad = []
    for path in sorted(SRC.rglob("*.html")):
        if METHODS_DIR in path.parents:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if switch.search(line):
                bad.append(f"{path.relative_to(SRC).as_posix()}:{number}: {line.strip()}")
    assert not bad, "\n".join(bad)
