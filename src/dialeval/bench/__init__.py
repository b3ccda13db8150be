"""The benchmarks `dialeval bench NAME` ships: each re-checks, on the user's own install, a number the
documentation claims (`dialeval bench adaptive`, `judges`, `judge-guided`).

The rule: a benchmark behind a user-facing claim of the docs lives here and runs through
`dialeval bench`; developer scripts (speed, scale, load, fuzzing, comparisons with other tools, one-off
checks) live in benchmarks/ at the top of the repository and are never installed. The product never
imports this package (tests/test_import_rules.py): what a product command needs, e.g. the study-size
simulations of `dialeval plan`, lives in the product (stats/study_design.py) and is imported from there.

- `dialeval.bench.adaptive.run_adaptive_benchmark`: adaptive pair selection with anytime-valid
  stopping vs uniform allocation with a fixed-size test, on simulated studies calibrated to
  published effect sizes (`dialeval.bench.calibration`).
- `dialeval.bench.judges.run_judges_benchmark`: judge-corrected intervals (PPI++) on real Arena battles.
- `dialeval.bench.judge_guided.run_judge_guided_benchmark`: judge-guided anytime-valid stopping vs the
  human-only test (simulated pools and the Arena judge files).

Submodules are imported on use, so importing this package is cheap.
"""

__all__ = ["adaptive", "calibration", "judge_guided", "judges"]
