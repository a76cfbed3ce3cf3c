# `make check` runs exactly what CI runs after installing: format, lint (import rules
# included), types, tests. `scripts/ci` installs what they need first.
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: check fmt lint types test test-parallel test-services bench format test310 test-newest test-others

check: fmt lint types test

fmt:
	$(BIN)/ruff format --check src tests bench

format:
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

lint:
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports --no-cache

types:
	$(BIN)/mypy

# The tests in two parts (docs/ci.md): those that need no root service on every core
# (pytest-xdist, a test file per worker: a module-scoped server starts once), then the
# slurm, netns and service ones one at a time (fixed names, ports and namespaces).
# PYTEST_WORKERS=1 runs the first part in one process.
PYTEST_WORKERS ?= auto
SERVICES := slurm or netns or service

test: test-parallel test-services

test-parallel:
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not ($(SERVICES))" $(PYTEST_ARGS)

test-services:
	$(BIN)/pytest -m "$(SERVICES)" $(PYTEST_ARGS)

# The tests without root services on pyenv's Python 3.10 (Ubuntu 22.04, DGX OS 6) and on
# its newest 3.x, each in its own .venv-X.Y; CI runs both after `check` (scripts/ci-python).
test310:
	scripts/ci-python 3.10

test-newest:
	scripts/ci-python newest

test-others:
	scripts/ci-python --others

bench:
	$(BIN)/python bench/run_all.py
