"""A module's shared fixture runs memstore in the tests' own environment too (tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def seen_by_a_module_fixture() -> dict[str, str | None]:
    names = ("HOME", "MEMSTORE_NO_DAEMON", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "TMPDIR")
    return {name: os.environ.get(name) for name in names}


def test_a_module_fixture_starts_no_daemon_and_keeps_out_of_the_real_home(
    seen_by_a_module_fixture: dict[str, str | None], tmp_path_factory: pytest.TempPathFactory
) -> None:
    seen = seen_by_a_module_fixture
    assert seen["MEMSTORE_NO_DAEMON"] == "1"  # or the daemon it starts outlives the run
    temporary = tmp_path_factory.getbasetemp()
    for name in ("HOME", "GIT_CONFIG_GLOBAL", "TMPDIR"):
        assert seen[name] and Path(seen[name]).is_relative_to(temporary), (name, seen[name])
    assert seen["GIT_CONFIG_NOSYSTEM"] == "1"
