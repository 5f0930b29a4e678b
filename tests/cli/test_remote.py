"""`memstore remote remove`: the remote goes, sync says what it uses now, a typo changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git, invoke_memstore


def bare(path: Path) -> str:
    git(path.parent, "init", "-q", "--bare", "-b", "main", str(path))
    return str(path)


def config(vault: Path) -> str:
    return (vault / ".git" / "config").read_text(encoding="utf-8")


def two_remotes(tmp_path: Path) -> tuple[Path, str, str]:
    """A vault whose branch tracks `backup`, with `origin` beside it."""
    vault = tmp_path / "v"
    assert invoke_memstore("init", str(vault)).returncode == 0
    backup, origin = bare(tmp_path / "backup.git"), bare(tmp_path / "origin.git")
    assert invoke_memstore("remote", "add", "backup", backup, vault=vault).returncode == 0
    assert invoke_memstore("remote", "add", origin, vault=vault).returncode == 0
    assert "remote = backup" in config(vault)
    return vault, backup, origin


def test_removing_the_remote_sync_uses_says_what_sync_uses_now(tmp_path: Path) -> None:
    vault, backup, origin = two_remotes(tmp_path)
    assert invoke_memstore("add", "the heron nests by the weir", vault=vault).returncode == 0
    assert invoke_memstore("sync", vault=vault).returncode == 0  # to backup, the tracked one
    removed = invoke_memstore("remote", "remove", "backup", vault=vault)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"removed remote backup ({backup})\n  memstore sync uses origin now\n"
    text = config(vault)
    assert "backup" not in text and f"url = {origin}" in text  # its tracking went too
    assert git(vault, "branch", "-r").split() == []  # and its remote-tracking branches
    assert invoke_memstore("remote", vault=vault).stdout == f"origin\t{origin}\n"
    synced = invoke_memstore("sync", vault=vault)
    assert synced.returncode == 0, synced.stderr
    assert git(Path(origin), "rev-parse", "main") == git(vault, "rev-parse", "HEAD")
    last = invoke_memstore("remote", "remove", "origin", "--json", vault=vault)
    assert last.returncode == 0, last.stderr
    assert json.loads(last.stdout) == {"name": "origin", "url": origin, "synced_with": None}


def test_removing_another_remote_leaves_sync_as_it_was(tmp_path: Path) -> None:
    vault, backup, origin = two_remotes(tmp_path)
    removed = invoke_memstore("remote", "remove", "origin", vault=vault)
    assert removed.stdout == f"removed remote origin ({origin})\n", removed.stdout
    shown = invoke_memstore("remote", "show", "--json", vault=vault)
    assert json.loads(shown.stdout) == {"name": "backup", "url": backup}
    assert "remote = backup" in config(vault)


def test_removing_the_tracked_one_of_two_without_origin_names_the_other(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    assert invoke_memstore("init", str(vault)).returncode == 0
    for name in ("backup", "mirror"):
        url = bare(tmp_path / f"{name}.git")
        assert invoke_memstore("remote", "add", name, url, vault=vault).returncode == 0
    removed = invoke_memstore("remote", "remove", "backup", vault=vault)
    assert removed.stdout.splitlines()[1:] == [
        "  memstore sync has no remote now; for mirror:",
        "Next:  memstore sync --remote mirror",
    ], removed.stdout
    last = invoke_memstore("remote", "remove", "mirror", "--json", vault=vault)
    assert json.loads(last.stdout)["synced_with"] is None


def test_the_remotes_a_refusal_names_are_in_order_of_name(tmp_path: Path) -> None:
    """As docs/cli.md's example and `git remote` list them, whatever order they were added."""
    vault = tmp_path / "v"
    assert invoke_memstore("init", str(vault)).returncode == 0
    for name in ("origin", "mirror", "backup"):
        url = bare(tmp_path / f"{name}.git")
        assert invoke_memstore("remote", "add", name, url, vault=vault).returncode == 0
    typo = invoke_memstore("remote", "remove", "bakcup", vault=vault)
    assert typo.returncode == 1
    assert "(it has: backup, mirror, origin)" in typo.stderr, typo.stderr


def test_a_remote_the_vault_lacks_is_refused_naming_those_it_has(tmp_path: Path) -> None:
    vault, _, _ = two_remotes(tmp_path)
    before = config(vault)
    typo = invoke_memstore("remote", "remove", "bakcup", "--json", vault=vault)
    assert (typo.returncode, typo.stdout) == (1, "")
    assert typo.stderr == (
        "Error: the vault has no remote 'bakcup' (it has: backup, origin); name one of those, "
        "e.g. 'memstore remote remove backup'\n"
    )
    assert config(vault) == before
    for name in ("backup", "origin"):
        assert invoke_memstore("remote", "remove", name, vault=vault).returncode == 0
    none = invoke_memstore("remote", "remove", "origin", vault=vault)
    assert none.returncode == 1
    assert none.stderr == "Error: the vault has no remote 'origin': it has none to remove\n"
