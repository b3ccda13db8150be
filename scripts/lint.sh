#!/usr/bin/env bash
# The lint and type gates of `make test` (run before the tests): ruff's rules, ruff's formatting
# (check only: nothing is rewritten) and mypy on src/ against scripts/mypy-baseline.txt.
# Usage: scripts/lint.sh            (PY=path/to/python to use another interpreter than .venv's)
# To fix what it reports: .venv/bin/ruff check --fix . && .venv/bin/ruff format .
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
status=0
echo "lint: ruff check"
"$PY" -m ruff check . || status=1
echo "lint: ruff format --check"
"$PY" -m ruff format --check --output-format concise . || status=1
echo "lint: mypy (baseline scripts/mypy-baseline.txt)"
"$PY" scripts/mypy_gate.py || status=1
exit $status
