"""`memstore log --since` and `memstore list --since` with a value that is neither a date nor an
age are a usage error, as `memstore view --since` is: exit 2, the usage line and one error
line naming the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_view import vault  # noqa: F401 (fixture)
from tests.conftest import invoke_memstore


@pytest.mark.parametrize("command", ["log", "list"])
@pytest.mark.parametrize("since", ["nonsense", "2026-13-45", "7 fortnights", "-3d"])
def test_a_bad_since_is_a_usage_error(vault: Path, since: str, command: str) -> None:  # noqa: F811
    done = invoke_memstore(command, "--since", since, vault=vault)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.startswith(f"Usage: memstore {command}")
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error")]
    assert errors == [
        f"Error: Invalid value: --since {since!r} is neither a date nor an age; "
        "use e.g. 2026-11-01, 2026-11-01T14:30, 7d, 12h or 30m"
    ]
    assert done.stdout == ""


@pytest.mark.parametrize("command", ["log", "list"])
def test_a_good_since_still_lists_the_commits(vault: Path, command: str) -> None:  # noqa: F811
    done = invoke_memstore(command, "--since", "1970-01-01", vault=vault)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
