# The two commands of the README. Each creates .venv on first use.
#   make bench   runs the benchmark (SQLite, in-memory channel layer unless told otherwise)
#   make test    lint, type-check, the docs site, then the suite on SQLite and on PostgreSQL
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/postgres
ARGS ?=

.PHONY: bench test lint venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

bench: $(STAMP)
	$(BIN)/python manage.py runbench $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy djbench sampleproject
	$(BIN)/lint-imports --no-cache
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site

test: lint
	$(BIN)/python -m pytest
	@echo "--- again on PostgreSQL ($(PG_TEST_URL)) ---"
	DATABASE_URL=$(PG_TEST_URL) $(BIN)/python -m pytest
