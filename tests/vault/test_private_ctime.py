"""Making files private leaves the ones already private alone: a chmod moves a file's ctime
off what git's index recorded, and every later git status then hashes the file again (a sync
of 1,000 memories into a 100k vault spent most of its minute there; issue 39)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memstore.service.store import Store
from memstore.vault.files import Vault
from tests.cli.test_upkeep import cli
from tests.conftest import git, settings_at


def chmods(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every os.chmod from here on (and still do it)."""
    seen: list[str] = []
    real = os.chmod

    def recording(path: object, mode: int, *args: object, **kwargs: object) -> None:
        seen.append(os.fspath(path))  # type: ignore[arg-type]
        real(path, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "chmod", recording)
    return seen


def test_make_private_changes_only_what_is_not_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "team" / "2026-12"
    folder.mkdir(parents=True)
    (tmp_path / "team").chmod(0o700)
    folder.chmod(0o700)
    private, open_ = folder / "a-1.md", folder / "b-2.md"
    private.write_text("a\n")
    private.chmod(0o600)
    open_.write_text("b\n")
    open_.chmod(0o644)
    (folder / "link.md").symlink_to(private)
    seen = chmods(monkeypatch)
    Vault(tmp_path).make_private(
        ["team/2026-12/a-1.md", "team/2026-12/b-2.md", "team/2026-12/link.md", "team/gone.md"]
    )
    assert [Path(p).name for p in seen] == [tmp_path.name, "b-2.md"]  # the root, then b
    assert open_.stat().st_mode & 0o777 == 0o600
    Vault(tmp_path).make_private()  # all of it: the memories are private already
    assert not [p for p in seen[2:] if p.startswith(str(tmp_path / "team"))]


def test_a_sync_that_brings_private_files_chmods_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    first, clone = tmp_path / "first", tmp_path / "clone"
    for vault in (first, clone):
        assert cli(vault, "init", str(vault)).returncode == 0
        assert cli(vault, "remote", "add", str(remote)).returncode == 0
    assert cli(first, "add", "shared fact about the deploy lock", "-w", "team").returncode == 0
    assert cli(first, "sync").returncode == 0
    old = os.umask(0o077)  # as the launcher sets it: checkouts write private files
    try:
        seen = chmods(monkeypatch)
        with Store.open(settings_at(clone)) as store:
            store.sync()
    finally:
        os.umask(old)
    brought = list(clone.glob("team/**/*.md"))
    assert brought, "the sync brought the memory"
    assert not [p for p in seen if p.startswith(str(clone / "team"))], seen
