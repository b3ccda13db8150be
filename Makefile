# The two commands of the project (README.md):
#   make demo   set up, then run the demo study of every method (serve it, or --simulate it into reports)
#   make test   set up, then the licence check of every installed dependency (scripts/check_licences.py)
#               and the documentation site in strict mode (mkdocs.yml; a broken link fails), then two
#               workers take from one queue the lint and type gates (scripts/lint.sh), the built
#               wheel installed and run outside the checkout (scripts/check_wheel.py) and the parts of
#               the whole test suite, with the doctests of src/ (scripts/run_tests.py)
.PHONY: demo test setup setup-full bench bench-door

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
	$(PY) scripts/check_licences.py
	$(PY) scripts/gen_reference.py --check
	@# the site into a temporary folder (never committed); not --quiet, which hides what --strict counts
	@site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir $$site; rc=$$?; rm -rf $$site; exit $$rc
	@bash scripts/start-postgres.sh
	@# two workers side by side take the parts of the suite and the two slow gates from one queue:
	@# scripts/lint.sh, scripts/check_wheel.py (scripts/run_tests.py); ARGS=tests/stats runs one part
	$(PY) scripts/run_tests.py $(ARGS)

bench: setup-full
	.venv/bin/dialeval bench adaptive --json benchmarks/results-adaptive.json

# The speed targets at the user's door (issue 25), each beside its limit measured in the same run:
# the installed command in a subprocess (a small report of every method, --help; 1M arena battles, 100k Direct
# Assessment ratings, 100k Spot The Bot segments) and every method served to 200 annotators over real
# HTTP on SQLite and PostgreSQL. About 30 minutes on a quiet machine; results in benchmarks/*.json,
# summarised by hand in the first table of benchmarks/README.md.
bench-door: setup-full
	$(PY) benchmarks/cli_start.py
	$(PY) benchmarks/cli_scale.py
	$(PY) benchmarks/load.py --seconds 20
