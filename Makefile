# The two commands of the project (README.md):
#   make demo   set up, then run the demo study of every method (serve it, or --simulate it into reports)
#   make test   set up, then the lint and type gates (scripts/lint.sh), then the whole test suite
#               (with the doctests of src/)
.PHONY: demo test setup setup-full bench

PY := .venv/bin/python
export DIALEVAL_TEST_POSTGRES_URL ?= postgresql://postgres@127.0.0.1:5432/test

# make demo installs only what the demo needs (the base install); make test adds the extras
# (postgres, llm, metrics, parquet, test) and the Debian packages the tests use.
setup:
	@bash scripts/setup.sh --base

setup-full:
	@bash scripts/setup.sh --full

demo: setup
	.venv/bin/dialeval demo $(ARGS)

test: setup-full
	@PY=$(PY) bash scripts/lint.sh
	@bash scripts/start-postgres.sh
	$(PY) -m pytest -q -p no:cacheprovider $(ARGS)

bench: setup-full
	.venv/bin/dialeval bench adaptive --json benchmarks/results-adaptive.json
