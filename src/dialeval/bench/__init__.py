"""Benchmarks that a CLI can run directly (`dialeval bench adaptive --json bench.json`).

- `dialeval.bench.adaptive.run_adaptive_benchmark`: adaptive pair selection with anytime-valid
  stopping vs uniform allocation with a fixed-size test, on simulated studies calibrated to
  published effect sizes (`dialeval.bench.calibration`).

Submodules are imported on use, so importing this package is cheap.
"""

__all__ = ["adaptive", "calibration"]
