"""The house rules on imports (docs/architecture.md, "Rules of the house"), checked on the source.

Every module under src/dialeval is parsed with `ast`; nothing is imported. Each `import` and
`from ... import` of a dialeval module counts, at module level, inside a function or under
`if TYPE_CHECKING:` alike: a lazy or type-only import is still a dependency.

The graph's nodes ("units") are dialeval's top-level modules and subpackages (`config`, `store`,
`web`, ...), with one refinement for the plug-ins: each method package `dialeval/methods/<pkg>/` is
a unit of its own, `methods.<pkg>` (the folder holds plug-ins only). The registry
(`dialeval/registry.py`) finds the packages through entry points (no import statement), so
`config -> registry` and `methods.<pkg> -> plugin -> protocols -> config` form no cycle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "dialeval"


@dataclass(frozen=True)
class Edge:
    source: str  # importing module, e.g. dialeval.web.deps
    target: str  # imported dialeval module, e.g. dialeval.store.work
    where: str  # src-relative path:line

    def __str__(self) -> str:
        return f"{self.where}: {self.source} imports {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES: dict[str, ast.Module] = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def resolve(name: str, node: ast.ImportFrom) -> list[str]:
    """The absolute module names `from ... import` in module `name` refers to (a submodule when an
    imported name is one, else the module itself)."""
    if node.level:
        package = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def imports(name: str) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import statement of module `name`, dialeval or not."""
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            for target in resolve(name, node):
                yield target, node.lineno


def where(name: str, line: int) -> str:
    return f"{MODULES[name].relative_to(SRC)}:{line}"


EDGES: list[Edge] = [
    Edge(name, target, where(name, line))
    for name in MODULES
    for target, line in imports(name)
    if target == "dialeval" or target.startswith("dialeval.")
]


def unit(module: str) -> str:
    """The graph node of a module: `config`, `store`, `registry`, `methods.<pkg>`;
    `dialeval` for the package's own __init__ (the version)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "dialeval"
    if parts[1] == "methods" and len(parts) > 2 and (PACKAGE / "methods" / parts[2]).is_dir():
        return f"methods.{parts[2]}"
    return parts[1]


def edges_from(prefix: str) -> list[Edge]:
    return [e for e in EDGES if e.source == prefix or e.source.startswith(prefix + ".")]


def in_unit(module: str, name: str) -> bool:
    return module == f"dialeval.{name}" or module.startswith(f"dialeval.{name}.")


def method_packages() -> list[str]:
    return sorted(unit(m) for m in MODULES if unit(m).startswith("methods.") and MODULES[m].name == "__init__.py")


# -- the checker sees what it should (so no rule below passes vacuously) ------------------------------


def test_the_graph_is_read_from_the_source():
    assert len(MODULES) > 100
    pairs = {(unit(e.source), unit(e.target)) for e in EDGES}
    # a top-level import, a relative one from a subpackage, a lazy one inside a function
    assert ("web", "protocols") in pairs and ("protocols", "store") in pairs and ("cli", "web") in pairs
    assert (
        unit("dialeval.registry") == "registry"
        and unit("dialeval.methods.acute.options") == "methods.acute"
        and unit("dialeval.protocols.live") == "protocols"
    )


# -- the rules -----------------------------------------------------------------------------------------


def test_stats_imports_nothing_of_dialeval():
    """stats/ is plain numerics (numpy, scipy): usable and testable without the rest of the project.
    Its modules may use each other (stats.spot_the_bot uses stats.reliability's alpha; the tie
    models reuse the Bradley–Terry fit)."""
    assert [str(e) for e in edges_from("dialeval.stats") if not in_unit(e.target, "stats")] == []


def test_nothing_imports_the_cli():
    """cli.py is the outermost layer: it calls everything, nothing calls it."""
    assert [str(e) for e in EDGES if e.target == "dialeval.cli" and e.source != "dialeval.cli"] == []


def test_records_imports_only_leaf_modules():
    """records.py is the pivot every layer exchanges data through: it may use only modules that
    themselves import nothing of dialeval (today it uses none)."""
    leaves = {m for m in MODULES if not edges_from(m)}
    wrong = [str(e) for e in edges_from("dialeval.records") if e.target not in leaves]
    assert wrong == []


# Above the store nobody writes SQL: web/, protocols/ and the method packages call store/work.py
# (every query the app needs) and the Store API. Checked: no sqlalchemy import at all, no call of
# `select(...)`/`text(...)`/`.execute(...)`, no string that starts like an SQL statement.
NO_SQL_UNITS = ("web", "protocols", "methods")
SQL_STATEMENT = re.compile(r"^\s*(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE\s+TABLE|ALTER\s+TABLE)\s", re.I)


def sql_uses(name: str) -> Iterator[str]:
    for target, line in imports(name):
        if target == "sqlalchemy" or target.startswith("sqlalchemy."):
            yield f"{where(name, line)}: imports {target}"
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id in ("select", "text")) or (
                isinstance(func, ast.Attribute) and func.attr == "execute"
            ):
                yield f"{where(name, node.lineno)}: calls {ast.unparse(func)}(...)"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_STATEMENT.match(node.value):
            yield f"{where(name, node.lineno)}: SQL text {node.value[:40]!r}"


@pytest.mark.parametrize("layer", NO_SQL_UNITS)
def test_no_sql_above_the_store(layer):
    modules = [m for m in MODULES if in_unit(m, layer)]
    assert modules or layer == "methods"
    assert [use for m in modules for use in sql_uses(m)] == []


def test_the_sql_check_finds_sql():
    """The check above recognises what it forbids (here, in the store, where SQL belongs)."""
    assert any(True for use in sql_uses("dialeval.store.work") if "imports sqlalchemy" in use)


# protocols/ and analysis/ are the frameworks method packages plug into; they never import a method
# package. Each may read the registry (`dialeval.registry`, to find a method's Protocol or analysis by
# id) in exactly one place, its dispatch module:
REGISTRY_LOOKUPS = {
    "protocols": "dialeval.protocols",  # protocols/__init__.py: get_protocol(method id)
    "analysis": "dialeval.analysis",  # analysis/__init__.py: analyze(dataset) by the data set's method
}


@pytest.mark.parametrize("layer", ["protocols", "analysis", "stats"])
def test_frameworks_do_not_import_methods(layer):
    wrong = []
    for e in edges_from(f"dialeval.{layer}"):
        if unit(e.target).startswith("methods."):
            wrong.append(f"{e} (a method package)")
        elif unit(e.target) == "registry" and e.source != REGISTRY_LOOKUPS.get(layer):
            wrong.append(f"{e} (the registry, outside {REGISTRY_LOOKUPS.get(layer, 'any lookup place')})")
    assert wrong == []


def test_method_packages_stay_below_the_pages():
    """A method package plugs into protocols/ and analysis/ (and stats/, records, the store through
    the protocol framework): it never imports the web app or the CLI, which drive it."""
    wrong = [
        str(e)
        for pkg in method_packages()
        for e in edges_from(f"dialeval.{pkg}")
        if unit(e.target) in ("web", "cli") or e.target == "dialeval.cli"
    ]
    assert wrong == []


def test_no_import_cycle_between_units():
    """The units form a layered graph: no unit reaches itself through imports."""
    graph: dict[str, dict[str, Edge]] = {}
    for e in EDGES:
        a, b = unit(e.source), unit(e.target)
        if a != b:
            graph.setdefault(a, {}).setdefault(b, e)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle:\n  " + "\n  ".join(
        str(graph[a][b]) for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)
    )


def find_cycle(graph: dict[str, dict[str, Edge]]) -> list[str] | None:
    """One cycle of units (depth-first search), or None when the graph is acyclic."""
    state: dict[str, str] = {}  # "open" while on the search path, "done" after

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in graph.get(node, {}):
            if state.get(nxt) == "open":
                return path[path.index(nxt) :]
            if nxt not in state and (found := visit(nxt, path)):
                return found
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [])):
            return found
    return None


def test_the_cycle_finder_finds_cycles():
    e = Edge("a", "b", "x:1")
    assert find_cycle({"a": {"b": e}, "b": {"c": e}, "c": {"a": e}}) == ["a", "b", "c"]
    assert find_cycle({"a": {"b": e}, "b": {"c": e}, "a2": {"c": e}}) is None


# -- no private name crosses a module ------------------------------------------------------------------
# A leading underscore means "this module's own business". A name another module needs is part of an
# API and gets a public name (the plug-in API, dialeval.plugin, re-exports what methods, formats and
# bot types use), so a reader can trust that changing an underscore name touches one file only.


def private_imports(name: str) -> Iterator[str]:
    """`from <dialeval module> import _x` in module `name` (dunder names such as __version__ are public)."""
    for node in ast.walk(TREES[name]):
        if not isinstance(node, ast.ImportFrom):
            continue
        targets = resolve(name, node)
        for alias, target in zip(node.names, targets, strict=True):
            if not (target == "dialeval" or target.startswith("dialeval.")) or target == name:
                continue
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                yield f"{where(name, node.lineno)}: {name} imports {alias.name} from {target}"


def test_no_private_name_is_imported_across_modules():
    assert [use for name in MODULES for use in private_imports(name)] == []


def test_the_private_import_check_finds_private_imports(monkeypatch):
    tree = ast.parse("from ...config import _Strict, StudyConfig\nfrom . import __version__\n")
    monkeypatch.setitem(TREES, "dialeval.methods.acute.options", tree)
    found = list(private_imports("dialeval.methods.acute.options"))
    assert len(found) == 1 and "imports _Strict from dialeval.config" in found[0]


def test_the_methods_folder_holds_plug_ins_only():
    """dialeval/methods/ is where the built-in methods live, each a package that plugs in exactly as
    an outside one would; the registry that finds them is dialeval/registry.py, not in the folder."""
    loose = sorted(p.name for p in (PACKAGE / "methods").glob("*.py") if p.name != "__init__.py")
    assert loose == []
    assert list(imports("dialeval.methods")) == []


# -- modules, not only units (issue 28) -----------------------------------------------------------------


def module_graph() -> dict[str, dict[str, Edge]]:
    """Module -> imported dialeval module -> one edge, every import counted (lazy ones too)."""
    graph: dict[str, dict[str, Edge]] = {}
    for e in EDGES:
        if e.target in MODULES and e.source != e.target:
            graph.setdefault(e.source, {}).setdefault(e.target, e)
    return graph


def test_no_import_cycle_between_modules():
    """No module reaches itself through imports, a function-level import counted like any other. So a
    cycle cannot be dodged by moving one of its imports into a function (as protocols/scheduling.py
    <-> protocols/guided.py once was): split the modules or move the shared piece down instead."""
    graph = module_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle:\n  " + "\n  ".join(
        str(graph[a][b]) for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)
    )


def function_level_imports(name: str) -> Iterator[tuple[str, int]]:
    """(imported dialeval module, line) of the imports inside a function or method of module `name`."""
    for fn in ast.walk(TREES[name]):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = resolve(name, node)
            else:
                continue
            for target in targets:
                if target == "dialeval" or target.startswith("dialeval."):
                    yield target, node.lineno


def test_the_scheduling_package_imports_at_the_top():
    """scheduling/ states every dependency at module level: no import inside a function, so none can
    hide a cycle (the rule above) and the package docstring's path can be read from the imports."""
    modules = [m for m in MODULES if in_unit(m, "scheduling")]
    assert len(modules) >= 5
    lazy = [f"{where(m, line)}: imports {target}" for m in modules for target, line in function_level_imports(m)]
    assert lazy == []


def test_the_function_level_import_check_sees_them():
    assert any(True for m in MODULES for _ in function_level_imports(m))  # the CLI imports on use


# A module name used twice makes "which guided.py?" a question (there were two). Allowed only for the
# same subject in two layers, each pair named here with its reason; method packages share one shape by
# convention (protocol.py, analysis.py, ...) and are not counted.
SAME_NAME_IN_TWO_LAYERS = {
    "__init__": "every package",
    "annotators": "stats/ (the screening statistics) and analysis/ (the report's annotator section)",
    "metrics": "stats/ (the numerics) and analysis/ (the report's metric sections)",
    "ranking": "stats/ (the ranking models) and analysis/ (the report's leaderboard)",
    "spot_the_bot": "stats/ (the survival statistics) and formats/ (the published data's reader)",
    "base": "bots/ and protocols/: each framework's base class",
    "judges": "judges/ (the LLM judges) and bench/judges.py (their shipped benchmark)",
    "store": "store/ and its Store class's module store/store.py",
    "registry": "registry.py (the evaluation methods, by entry point) and bots/registry.py (the bot types)",
}


def module_names() -> dict[str, list[str]]:
    """Last name part -> the modules and packages so named, outside method packages."""
    names: dict[str, list[str]] = {}
    for m, path in MODULES.items():
        if unit(m).startswith("methods."):
            continue
        last = "__init__" if path.name == "__init__.py" else m.rsplit(".", 1)[-1]
        names.setdefault(last, []).append(m)
        if path.name == "__init__.py" and m != "dialeval":  # a package's name counts as a module name
            names.setdefault(m.rsplit(".", 1)[-1], []).append(m)
    return names


def test_no_module_name_defined_twice():
    twice = {name: found for name, found in module_names().items() if len(found) > 1}
    assert {n: f for n, f in twice.items() if n not in SAME_NAME_IN_TWO_LAYERS} == {}
    assert sorted(set(SAME_NAME_IN_TWO_LAYERS) - set(twice)) == []  # an allowance no longer needed goes


def test_the_product_does_not_import_the_benchmarks():
    """bench/ holds the benchmarks `dialeval bench` ships; only the CLI runs them. What a product
    command needs (the study-size simulations of `dialeval plan`) lives in the product
    (stats/study_design.py), and bench/ imports it from there, not the other way round."""
    wrong = [str(e) for e in EDGES if in_unit(e.target, "bench") and unit(e.source) not in ("bench", "cli")]
    assert wrong == []


# One clock (dialeval/clock.py): what the app decides by the time (expiries, a held vote's window, the
# daily cap, stored time stamps) reads it, so a test advances it instead of sleeping.
CLOCK_UNITS = ("store", "protocols", "web", "scheduling", "methods")


def wall_clock_reads(name: str) -> Iterator[str]:
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            call = ast.unparse(node.func)
            if call in ("time.time", "datetime.now", "datetime.utcnow", "date.today") or call.endswith(
                (".datetime.now", ".datetime.utcnow", ".date.today")
            ):
                yield f"{where(name, node.lineno)}: {call}()"


def test_one_clock():
    modules = [m for m in MODULES if any(in_unit(m, u) or unit(m).startswith(f"{u}.") for u in CLOCK_UNITS)]
    assert [read for m in modules for read in wall_clock_reads(m)] == []
    assert list(wall_clock_reads("dialeval.clock"))  # the check sees a read where there is one


# One rule, one place: which annotators a report counts is annotator_rules.py's. A set of annotator
# statuses spelled out elsewhere (three differed once: the scheduler's, the report's, the export's)
# fails here.
STATUS_WORDS = {"filtered", "excluded", "blocked", "rejected", "failed", "fail", "flagged"}


def status_sets(name: str) -> Iterator[str]:
    for node in ast.walk(TREES[name]):
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            words = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(words & STATUS_WORDS) >= 3:
                yield f"{where(name, node.lineno)}: {sorted(words)}"


def test_one_rule_for_which_annotators_count():
    assert list(status_sets("dialeval.annotator_rules"))  # the check sees the sets where they belong
    wrong = [s for m in MODULES if m != "dialeval.annotator_rules" for s in status_sets(m)]
    assert wrong == []


def test_every_public_name_of_the_plugin_api_resolves_from_where_it_is_listed():
    """dialeval.plugin imports its names on first use (_WHERE); the table and __all__ name the same
    names, and each resolves to the object of the module the table names."""
    import importlib

    import dialeval.plugin as api

    assert set(api._WHERE) == set(api.__all__)
    for name, module in api._WHERE.items():
        assert getattr(api, name) is getattr(importlib.import_module(module, "dialeval"), name), name
