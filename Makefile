# `make check` runs exactly what CI runs after installing: format, lint (import rules
# included), types, tests. `scripts/ci` installs what they need first.
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: check fmt lint types test bench format

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

test:
	$(BIN)/pytest $(PYTEST_ARGS)

bench:
	$(BIN)/python bench/run_all.py
