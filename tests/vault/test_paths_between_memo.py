"""`paths_between` remembers each pair of commits (a sync asks one pair up to five times;
at 1,000,000 memories each diff cost 0.5-0.7 s): the answer is git's diff every time."""

from __future__ import annotations

from pathlib import Path

from memstore.service.store import Store
from memstore.vault import git_objects
from tests.conftest import git


def diffed(vault: Path, old: str, new: str) -> list[str]:
    return sorted(git(vault, "diff", "--name-only", "--no-renames", old, new).split())


def test_paths_between_is_git_diff_and_asked_once_per_pair(store: Store, vault: Path) -> None:
    kept = store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    gone = store.add("The staging deploy needs the VPN profile ops-eu", workspace="infra")
    first = store.git.head()
    store.add("Redis eviction policy is allkeys-lru", workspace="cache")
    path = vault / kept.path
    path.write_text(path.read_text(encoding="utf-8") + "\nand pgbouncer\n", encoding="utf-8")
    (vault / gone.path).unlink()
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "by hand")
    last = store.git.head()

    expected = diffed(vault, first, last)
    assert store.git.paths_between(first, last) == expected
    assert {kept.path, gone.path} <= set(expected)
    between = store.git.__dict__["_between"]
    assert list(between) == [(first, last)]
    between[(first, last)].append("not/a/path.md")  # a second answer comes from memory
    assert store.git.paths_between(first, last) == [*expected, "not/a/path.md"]
    between[(first, last)].pop()
    answer = store.git.paths_between(first, last)
    answer.append("changed/by/the/caller.md")  # a caller's list is its own
    assert store.git.paths_between(first, last) == expected
    assert store.git.paths_between(last, first) == diffed(vault, last, first)
    assert store.git.paths_between("", first) == sorted(
        git(vault, "ls-tree", "-r", "--name-only", first).split()
    )
    for i in range(git_objects.BETWEEN_KEPT + 3):  # bounded
        store.add(f"Kafka topic number {i} keeps seven days", workspace="events")
        store.git.paths_between(first, store.git.head())
    assert len(store.git.__dict__["_between"]) <= git_objects.BETWEEN_KEPT
