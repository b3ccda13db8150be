# The two commands of the project (README.md):
#   make demo   set up, then run the demo study of every method (serve it, or --simulate it into reports)
#   make test   set up, then run the whole test suite
.PHONY: demo test setup bench

PY := .venv/bin/python
export DIALEVAL_TEST_POSTGRES_URL ?= postgresql://postgres@127.0.0.1:5432/test

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/dialeval demo $(ARGS)

test: setup
	@bash scripts/start-postgres.sh
	$(PY) -m pytest -q -p no:cacheprovider $(ARGS)

bench: setup
	.venv/bin/dialeval bench adaptive --json benchmarks/results-adaptive.json
