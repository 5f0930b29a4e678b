"""`memstore view --since` with a value that is neither a date nor an age is a usage error:
exit 2 with the usage line, as a bad option is, and nothing written or opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_view import opened, vault  # noqa: F401 (fixtures)
from tests.conftest import invoke_memstore


@pytest.mark.parametrize("since", ["someday", "2026-13-45", "7 fortnights", "-3d"])
def test_a_bad_since_is_a_usage_error(
    vault: Path,  # noqa: F811
    opened: list[Path],  # noqa: F811
    since: str,
) -> None:
    done = invoke_memstore("view", "--since", since, "--open", vault=vault)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.startswith("Usage: memstore view")
    assert f"Error: Invalid value: --since {since!r} is neither a date nor an age" in done.stderr
    assert done.stdout == "" and opened == []
    assert not (vault / ".memstore" / "view.html").exists()


def test_a_good_since_still_writes_the_page(vault: Path) -> None:  # noqa: F811
    done = invoke_memstore("view", "--since", "1970-01-01", vault=vault)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_file()
