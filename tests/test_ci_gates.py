"""What CI relies on: a missing browser fails the browser tests in CI (CI=true) instead of skipping
them, and skips them elsewhere with the reason. Runs one browser test in a pytest subprocess with
DIALEVAL_CHROMIUM pointing at nothing, so no browser is started."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ONE_BROWSER_TEST = "tests/e2e/test_e2e_acute.py"


def run_without_chromium(ci: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DIALEVAL_CHROMIUM": str(REPO / "no-such-chromium"), "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-x", ONE_BROWSER_TEST],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("ci, exit_code, word", [("true", 1, "error"), ("", 0, "skipped")])
def test_missing_chromium_fails_in_ci_and_skips_elsewhere(ci, exit_code, word):
    result = run_without_chromium(ci)
    out = result.stdout + result.stderr
    assert result.returncode == exit_code, out
    assert word in out.splitlines()[-1] and "no Chromium at" in out and "no-such-chromium" in out


def test_the_test_command_runs_the_doctests_of_src():
    # `make test` runs the part "src" of the suite (scripts/run_tests.py) with the project's pytest
    # configuration: it must collect the examples in src/ docstrings (collecting src/ alone: the
    # whole suite's collection imports every test module, three times the cost)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "src"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    collected = set(result.stdout.split())
    for doctest in (
        "src/dialeval/stats/sequential.py::dialeval.stats.sequential.SequentialPairTest.interval",
        "src/dialeval/scheduling/state.py::dialeval.scheduling.state",
        "src/dialeval/planning.py::dialeval.planning.parse_expectation",
        "src/dialeval/bench/adaptive.py::dialeval.bench.adaptive",
    ):
        assert doctest in collected


def _mypy_gate():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mypy_gate", REPO / "scripts" / "mypy_gate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MYPY_OUTPUT = """\
src/dialeval/a.py:3: error: Incompatible types in assignment  [assignment]
src/dialeval/a.py:9:5: error: Item "None" of "X | None" has no attribute "y"  [union-attr]
src/dialeval/a.py:9: note: a note is not an error
src/dialeval/b.py:1: error: Name "z" is not defined  [name-defined]
Found 3 errors in 2 files (checked 9 source files)
"""


def test_make_test_runs_the_lint_type_and_wheel_gates_beside_the_tests():
    dry = subprocess.run(["make", "-n", "test"], cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    assert "scripts/run_tests.py" in dry
    # run_tests.py queues the slow gates with the parts of the suite (a failing gate fails the run)
    runner = _run_tests_module()
    gates = {part.name: part.command for part in runner.gates()}
    assert gates["scripts/lint.sh"] == ["bash", "scripts/lint.sh"]
    assert gates["scripts/check_wheel.py"][-1] == "scripts/check_wheel.py"
    lint = (REPO / "scripts" / "lint.sh").read_text()
    for gate in ("ruff check .", "ruff format --check", "scripts/mypy_gate.py"):
        assert gate in lint


def test_the_wheel_check_makes_the_completed_demo_the_suite_reads(tmp_path, monkeypatch):
    """scripts/check_wheel.py (queued first) runs the installed `dialeval demo --simulate N --no-serve`
    into the folder and under the lock of tests/conftest.py's completed_demo, so the suite does not run
    the same command twice; once a part made it first, the check runs its own elsewhere."""
    import tests.conftest as conftest

    spec = importlib.util.spec_from_file_location("check_wheel", REPO / "scripts" / "check_wheel.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    assert check.COMPLETED_DEMO_ANNOTATORS == conftest.COMPLETED_DEMO_ANNOTATORS
    ran: list[list[str]] = []
    monkeypatch.setattr(check, "run", lambda cmd, cwd, env=None, timeout=600: ran.append(cmd) or "made\n")
    monkeypatch.setenv("DIALEVAL_TEST_SHARED", str(tmp_path / "shared"))
    work = tmp_path / "work"
    out = check.simulated_demo("dialeval", work, {})
    assert out == tmp_path / "shared" / "completed-demo"
    assert ran[-1] == ["dialeval", "demo", "--simulate", str(conftest.COMPLETED_DEMO_ANNOTATORS), "--no-serve"] + [
        "--out",
        str(out),
    ]
    assert (tmp_path / "shared" / "completed-demo.done").read_text() == "made\n"
    assert check.simulated_demo("dialeval", work, {}) == work / "demo"  # made already: its own
    assert ran[-1][-1] == "demo"


def test_mypy_gate_counts_errors_per_file_and_refuses_more(tmp_path, monkeypatch, capsys):
    gate = _mypy_gate()
    counts = gate.count_errors(MYPY_OUTPUT)
    assert counts == {"src/dialeval/a.py": 2, "src/dialeval/b.py": 1}
    assert gate.read_baseline(gate.write_baseline(counts)) == counts
    monkeypatch.setattr(gate, "BASELINE", tmp_path / "baseline.txt")
    monkeypatch.setattr(gate, "run_mypy", lambda: (1, MYPY_OUTPUT))

    gate.BASELINE.write_text("2 src/dialeval/a.py\n1 src/dialeval/b.py\n")
    assert gate.main([]) == 0  # as many as allowed
    gate.BASELINE.write_text("# comment\n3 src/dialeval/a.py\n4 src/dialeval/b.py\n")
    assert gate.main([]) == 0 and "lower it" in capsys.readouterr().out  # fewer: passes, says so
    gate.BASELINE.write_text("1 src/dialeval/a.py\n5 src/dialeval/b.py\n")
    assert gate.main([]) == 1  # one more error in a.py fails, even though the total is lower
    err = capsys.readouterr().err
    assert "src/dialeval/a.py: 2 errors, baseline allows 1" in err and "[union-attr]" in err
    gate.BASELINE.write_text("2 src/dialeval/a.py\n")
    assert gate.main([]) == 1  # a file that had no errors gets one

    assert gate.main(["--update"]) == 1  # the baseline never goes up by itself
    assert gate.BASELINE.read_text() == "2 src/dialeval/a.py\n"
    gate.BASELINE.write_text("9 src/dialeval/a.py\n9 src/dialeval/b.py\n9 src/dialeval/c.py\n")
    assert gate.main(["--update"]) == 0  # it goes down, files at zero drop out
    assert gate.read_baseline(gate.BASELINE.read_text()) == counts

    monkeypatch.setattr(gate, "run_mypy", lambda: (2, "pyproject.toml: [mypy]: bad option"))
    assert gate.main([]) == 2  # mypy that does not run is a failure, not zero errors


def test_mypy_baseline_in_the_repository_is_well_formed():
    gate = _mypy_gate()
    counts = gate.read_baseline(gate.BASELINE.read_text())
    assert counts and all(n > 0 and (REPO / path).is_file() for path, n in counts.items())


def test_mypy_baseline_allows_no_error_in_the_method_packages():
    """The methods are fixed to zero mypy errors (issue 28): the baseline may not list a file of
    src/dialeval/methods/ nor of the plug-in API, so a new error there fails the gate instead of
    being written into it."""
    gate = _mypy_gate()
    counts = gate.read_baseline(gate.BASELINE.read_text())
    strict = gate.strict_modules()
    assert not [path for path in counts if path.startswith("src/dialeval/methods/") or gate.is_strict(path, strict)]


def _strict_flags() -> list[str]:
    """The flags `mypy --strict` turns on, as mypy itself lists them (--help), in config-file spelling."""
    out = subprocess.run([sys.executable, "-m", "mypy", "--help"], capture_output=True, text=True, timeout=120).stdout
    paragraph = out[out.index("--strict ") : out.index("--disable-error-code")]
    words = re.sub(r"-\n\s*", "-", paragraph.split("enables the following flags:", 1)[1]).split()
    return sorted({w.strip(",").removeprefix("--").replace("-", "_") for w in words if w.startswith("--")})


def test_the_plugin_api_and_the_methods_are_held_to_all_of_mypy_strict():
    """The override pyproject.toml gives the plug-in API and the method packages is mypy --strict:
    every flag --strict enables (read from this mypy's --help) is on, per module where mypy allows it,
    else for the whole run; and its modules are plugin.py and every module plugin.py imports from."""
    import ast
    import tomllib

    from mypy.options import PER_MODULE_OPTIONS

    gate = _mypy_gate()
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = gate.strict_modules()
    override = next(o for o in config["overrides"] if o["module"] == strict)
    flags = _strict_flags()
    assert {"disallow_untyped_defs", "warn_return_any", "no_implicit_reexport"} <= set(flags)
    for flag in flags:
        if flag == "no_implicit_reexport":  # its per-module spelling
            assert override.get("implicit_reexport") is False
        elif flag in PER_MODULE_OPTIONS:
            assert override.get(flag) is True, flag
        else:
            assert config.get(flag) is True, f"{flag}: a global flag of --strict, off in [tool.mypy]"

    tree = ast.parse((REPO / "src" / "dialeval" / "plugin.py").read_text())
    sources = {f"dialeval.{n.module}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}
    assert sources, "plugin.py imports its names from dialeval's modules"
    assert sources | {"dialeval.plugin", "dialeval.methods.*"} <= set(strict)


def test_the_gate_allows_no_error_in_a_strict_module_whatever_the_baseline(tmp_path, monkeypatch, capsys):
    gate = _mypy_gate()
    strict = ["dialeval.plugin", "dialeval.store.work", "dialeval.methods.*"]
    assert gate.is_strict("src/dialeval/methods/acute/protocol.py", strict)
    assert gate.is_strict("src/dialeval/methods/__init__.py", strict)
    assert gate.is_strict("src/dialeval/store/work.py", strict)
    assert not gate.is_strict("src/dialeval/store/store.py", strict)
    assert not gate.is_strict("src/dialeval/methodsx.py", strict)

    output = (
        "src/dialeval/methods/acute/protocol.py:3: error: Function is missing a type annotation  [no-untyped-def]\n"
    )
    monkeypatch.setattr(gate, "run_mypy", lambda: (1, output))
    monkeypatch.setattr(gate, "strict_modules", lambda: strict)
    monkeypatch.setattr(gate, "BASELINE", tmp_path / "baseline.txt")
    gate.BASELINE.write_text("5 src/dialeval/methods/acute/protocol.py\n")
    assert gate.main([]) == 1  # listed in the baseline, and still an error
    assert "[no-untyped-def]" in capsys.readouterr().err
    assert gate.main(["--update"]) == 1  # nor can --update write it in
    assert gate.main(["--update", "--allow-increase"]) == 0
    assert gate.read_baseline(gate.BASELINE.read_text()) == {"src/dialeval/methods/acute/protocol.py": 1}
    assert gate.main([]) == 1  # --allow-increase wrote it, and the gate still refuses it


def _run_tests_module():
    spec = importlib.util.spec_from_file_location("run_tests", REPO / "scripts" / "run_tests.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_tests"] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_parts_of_the_suite_hold_every_test_once():
    """make test runs the suite as parts taken from one queue by two pytest workers
    (scripts/run_tests.py): every folder of tests/, the top-level files and the doctests of src/ are
    a part, a slow file listed in EXPECTED_SECONDS is a part of its own and its folder's run ignores
    it (else it would run twice), and no listed name is stale (pytest would fail on a missing file)."""
    module = _run_tests_module()
    parts = module.parts()
    names = [p.name for p in parts]
    assert len(names) == len(set(names))
    every_file = {str(p.relative_to(REPO)) for p in module.test_files(REPO / "tests")}
    assert len(every_file) > 100
    named: set[str] = set()
    for part in parts:  # the files each part's pytest run collects: a folder less its --ignore'd files
        if part.name == module.TOP_LEVEL or part.name.endswith(".py"):
            named |= set(part.args) if part.name == module.TOP_LEVEL else {part.name}
        elif part.name != "src":
            ignored = {a.removeprefix("--ignore=") for a in part.args if a.startswith("--ignore=")}
            named |= {str(p.relative_to(REPO)) for p in module.test_files(REPO / part.name)} - ignored
    assert named == every_file
    for name in module.EXPECTED_SECONDS:
        assert name in names and (name == module.TOP_LEVEL or (REPO / name).exists()), name
    assert set(module.FIRST) <= set(names) | set(module.GATES)  # the parts put first are real parts or gates
    for part in parts:
        if part.name.endswith(".py") and part.name != module.TOP_LEVEL:
            folder = next(p for p in parts if p.name == str(Path(part.name).parent))
            assert f"--ignore={part.name}" in folder.args
    assert [p.expected for p in parts] == sorted((p.expected for p in parts), reverse=True)
