"""In a large vault the status of every file is git's own (issue 39: at 1,000,000 files
3.7 s of CPU against libgit2's ~5 s): it must name exactly the paths libgit2's names, for
every kind of change a person makes, and a sync with it commits every hand edit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memstore.service.store import Store
from memstore.vault import git as git_module
from tests.conftest import git
from tests.service.test_sync import converge, machines, remote  # noqa: F401 (fixtures)


def both(store: Store, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """The status paths from libgit2 and from git's own status, of the same work tree."""
    store.git.status_env = store.settings.env  # as sync gives it
    monkeypatch.setattr(git_module, "STATUS_CLI_BYTES", 1 << 62)
    libgit2 = store.git.changed_paths()
    monkeypatch.setattr(git_module, "STATUS_CLI_BYTES", 0)
    cli = store.git.changed_paths()
    return libgit2, cli


def test_git_status_names_what_libgit2_names(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    gone = store.add("The staging deploy needs the VPN profile ops-eu", workspace="infra")
    staged = store.add("Redis eviction policy is allkeys-lru", workspace="cache")
    same = store.add("Grafana dashboards live in the observability folder", workspace="ops")
    assert both(store, monkeypatch) == ([], [])

    path = vault / edited.path
    with path.open("a", encoding="utf-8") as handle:  # in place
        handle.write("\nAlso on 6432 through pgbouncer.\n")
    (vault / gone.path).unlink()
    staged_path = vault / staged.path
    staged_path.write_text(staged_path.read_text(encoding="utf-8") + "\nstaged\n", "utf-8")
    git(vault, "add", staged.path)  # staged, and the work tree like the index
    same_path = vault / same.path
    original = same_path.read_text(encoding="utf-8")
    same_path.write_text(original + "\nstaged, then undone\n", "utf-8")
    git(vault, "add", same.path)
    same_path.write_text(original, "utf-8")  # the index differs from HEAD, the file does not
    new_folder = vault / "notes" / "2026-12"
    new_folder.mkdir(parents=True)
    (new_folder / "café menu ünïcode.md").write_text("a person's note\n", encoding="utf-8")
    (new_folder / "line\nbreak.md").write_text("an odd name\n", encoding="utf-8")
    (vault / "infra" / "loose.md").write_text("untracked beside memories\n", encoding="utf-8")
    (vault / ".memstore" / "scratch.md").write_text("ignored\n", encoding="utf-8")
    os.symlink("loose.md", vault / "infra" / "link.md")

    libgit2, cli = both(store, monkeypatch)
    assert cli == libgit2
    assert {edited.path, gone.path, staged.path, same.path, "infra/loose.md"} <= set(cli)
    assert "notes/2026-12/café menu ünïcode.md" in cli
    assert not any(p.startswith(".memstore") for p in cli)


def test_a_sync_with_git_status_commits_every_hand_edit(
    machines: list[Store],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(git_module, "STATUS_CLI_BYTES", 0)  # every vault counts as large
    a, b, _ = machines
    kept = a.add("Kafka retention is seven days on the events topic", workspace="infra")
    gone = a.add("Consul gossip runs on port 8301 between the agents", workspace="infra")
    converge([a, b])
    path = b.vault.root / kept.path
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\nCompacted topics keep the last value.\n")
    (b.vault.root / gone.path).unlink()
    hand = b.vault.root / "infra" / "by-hand.md"
    hand.write_text("---\nkind: note\n---\nNATS is the queue for the billing events\n", "utf-8")
    outcome, _, _ = b.sync()
    assert {kept.path, gone.path, "infra/by-hand.md"} <= set(outcome.edited)
    assert not git(b.vault.root, "status", "--porcelain").strip()
    converge([a, b])
    assert "Compacted topics" in (a.vault.root / kept.path).read_text(encoding="utf-8")
    assert not (a.vault.root / gone.path).exists()
    assert (a.vault.root / "infra" / "by-hand.md").is_file()
