"""A memory a person wrote with `created: 2026-12-01` (a date without a time, valid YAML)
counts from UTC midnight: `audit` and `view` read it as every other command does, where
they crashed comparing a date without a zone with the clock's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git, invoke_memstore


@pytest.fixture
def dated(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    assert invoke_memstore("init", str(root)).returncode == 0
    folder = root / "hand" / "2026-12"
    folder.mkdir(parents=True)
    for name, created in (
        ("dateonly-qqqq1111", "2026-12-01"),
        ("naive-qqqq2222", "2026-12-01T10:00:00"),
    ):
        (folder / f"{name}.md").write_text(
            f"---\nid: {name[-8:]}\nkind: note\ncreated: {created}\n---\n"
            f"Written by hand on a day without a zone ({name})\n",
            encoding="utf-8",
        )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes written by hand")
    return root


def test_audit_reads_a_date_only_created(dated: Path) -> None:
    done = invoke_memstore("audit", "--json", vault=dated)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr and "TypeError" not in done.stderr
    json.loads(done.stdout)


def test_view_reads_a_date_only_created(dated: Path) -> None:
    done = invoke_memstore("view", "--json", vault=dated)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"qqqq1111", "qqqq2222"} <= set(json.dumps(data).replace('"', " ").split())
