"""What the CLI imports (issue 25): `dialeval --help` none of the numerical libraries, and an arena
report not scipy.stats (1 s of import; stats/binomial.py gives its binomial test's values). The timed
targets are in benchmarks/cli_start.py, not here: these tests check which modules load."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

HEAVY = ("numpy", "scipy", "pandas", "matplotlib", "sqlalchemy", "statsmodels", "sklearn")


def _loaded_after(args: list[str]) -> tuple[dict, str]:
    """The modules of HEAVY (and scipy.stats) loaded once the CLI has run `args`, in a fresh process."""
    code = (
        "import json, sys\nfrom dialeval.cli import app\n"
        f"try:\n    app({args!r})\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps({{m: m in sys.modules for m in {[*HEAVY, 'scipy.stats']!r}}}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stdout


def test_help_imports_no_numerical_library():
    loaded, out = _loaded_after(["--help"])
    assert "report" in out  # the help was printed
    assert [m for m, yes in loaded.items() if yes] == []


def test_an_arena_report_does_not_import_scipy_stats(tmp_path):
    rng = np.random.default_rng(2)
    names = ["alpha", "beta", "gamma"]
    path = tmp_path / "battles.jsonl"
    with path.open("w") as out:
        for k in range(240):
            a, b = (int(x) for x in rng.choice(3, 2, replace=False))
            winner = ["model_a", "model_b", "tie"][int(rng.integers(0, 3))]
            record = {"question_id": f"q{k}", "model_a": names[a], "model_b": names[b], "winner": winner, "turn": 1}
            for side, who in (("a", a), ("b", b)):  # answers of different lengths: the people section's test
                answer = "word " * (5 + 10 * who + int(rng.integers(0, 5)))
                record[f"conversation_{side}"] = [
                    {"role": "user", "content": f"question {k}"},
                    {"role": "assistant", "content": answer},
                ]
            out.write(json.dumps(record) + "\n")
    study = tmp_path / "study"
    done = subprocess.run(
        [sys.executable, "-m", "dialeval.cli", "import", "arena", str(path), str(study)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded, _ = _loaded_after(["report", str(study)])
    report = json.loads((study / "report" / "report.json").read_text())
    assert report["people"]["longer_answer_share"]["p_value"] is not None  # the binomial test ran
    assert report["systems"] and report["tie_model"] and report["annotator_model"]
    # the report was computed and drawn (matplotlib: in this process, or in the figure worker the
    # command forks where it can, report/figure_worker.py; it imports no scipy)
    assert loaded["numpy"] and list((study / "report" / "plots").glob("*.svg"))
    assert not loaded["scipy.stats"]
