# Two commands do all the set-up on a fresh machine (Python >= 3.11 and git needed):
#   make demo   installs memstore into .venv and runs the demo on the bundled sample vault
#   make test   installs the dev tools into .venv and runs exactly what CI runs
#   make dist   builds the wheel and sdist of the distribution memstore-agents into dist/
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
# Wheels of memstore's dependencies, pip, pipx and the build backend: tests/test_newcomer.py
# runs the README's install lines into a fresh HOME from these, without the network.
WHEELHOUSE = $(VENV)/wheelhouse
DIST ?= dist

.PHONY: demo test check bench dist

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The semantic extra too, so its model tests run here and in CI (it is off unless turned on).
# The distribution was named memstore before memstore-agents: a venv made before the rename
# drops that old record first, so one distribution owns the `memstore` command.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip uninstall --quiet --yes memstore 2>/dev/null || true
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

# The suite runs in parallel (pytest-xdist): one worker more than the machine has cores, as
# many tests wait on a git or memstore process they started. `loadgroup` hands out tests as
# `load` does, except that the tests of one `xdist_group` run in one worker (they share a
# set-up that costs seconds: tests/cli's walk over every command's help).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

test: check $(WHEELHOUSE)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# tests/test_dist.py runs this target into a temporary DIST and installs the wheel offline.
dist: $(VENV)/.installed
	rm -f $(DIST)/memstore_agents-*
	$(BIN)/python -m hatchling build -d $(DIST)

bench: $(VENV)/.installed
	$(BIN)/python tests/benchmarks/bench_foundation.py --sizes 1000 10000
