"""A long-lived process lets go of git's index once its deferred staging is written (issue 39:
the daemon's memory), and its next writes and stagings go on as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.daemon.heap import trim_heap
from memstore.service.store import Store
from memstore.vault.git import INDEX_LAG, GitRepo
from tests.conftest import git, settings_at, wait_until


def test_git_index_is_let_go_after_staging_and_read_again_for_the_next(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[int] = []
    release = GitRepo.release_index

    def counted(self: GitRepo) -> None:
        released.append(1)
        release(self)

    monkeypatch.setattr(GitRepo, "release_index", counted)
    lag = vault / ".git" / INDEX_LAG
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0  # as if the vault were large
        first = store.add("Deploys pause during the holidays", workspace="ops")
        wait_until(lambda: not lag.exists() and released, 10, "staged, then let go")
        trim_heap()
        second = store.add("Releases are tagged from main only", workspace="ops")
        assert store.git.index_lag()[1] == [second.path]  # committed without the index
        wait_until(lambda: not lag.exists() and len(released) == 2, 10, "staged again")
        assert store.search("holidays").hits[0].path == first.path
    assert git(vault, "status", "--porcelain") == ""
    tracked = git(vault, "ls-files").split()
    assert first.path in tracked and second.path in tracked
    assert git(vault, "log", "-2", "--format=%s").count("add(ops)") == 2


def test_a_one_shot_process_stages_at_exit_without_letting_go(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[int] = []
    monkeypatch.setattr(GitRepo, "release_index", lambda self: released.append(1))
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0
        store.add("Hotfixes skip the freeze", workspace="ops")
    assert not (vault / ".git" / INDEX_LAG).exists() and not released
    assert git(vault, "status", "--porcelain") == ""
