"""A one-shot command leaves a deferred git index to a child process (issue 39: adds)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memstore.service.store import Store
from memstore.vault.files import process_alive
from memstore.vault.git import INDEX_LAG, GitRepo, read_index_lag
from tests.conftest import git, settings_at, wait_until


def test_a_one_shot_add_answers_and_a_child_stages_git_index(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stagers = tmp_path / "stagers"
    sync_index = GitRepo.sync_index

    def noted(self: GitRepo) -> list[str]:
        with stagers.open("a", encoding="utf-8") as file:
            file.write(f"{os.getpid()}\n")
        return sync_index(self)

    monkeypatch.setattr(GitRepo, "sync_index", noted)
    with Store.open(settings_at(vault)) as store:
        store.shared.one_shot = True  # as ops/lean.py opens it for `memstore add`
        store.git.defer_index_bytes = 0  # as if the vault were large
        added = store.add("Staging deploys need a second reviewer", workspace="ops")
        assert store.git.index_lag()[1] == [added.path]
    # the commit is made and the memory findable before the staging
    assert git(vault, "log", "-1", "--format=%s").startswith("add(ops)")
    wait_until(lambda: not (vault / ".git" / INDEX_LAG).exists(), 10, "the child staged")
    assert git(vault, "status", "--porcelain") == ""
    pids = {int(line) for line in stagers.read_text(encoding="utf-8").split()}
    assert pids and os.getpid() not in pids  # not this process: it had answered already


def test_a_store_that_is_not_one_shot_stages_at_close_itself(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stagers: list[int] = []
    sync_index = GitRepo.sync_index

    def noted(self: GitRepo) -> list[str]:
        stagers.append(os.getpid())
        return sync_index(self)

    monkeypatch.setattr(GitRepo, "sync_index", noted)
    monkeypatch.setattr("memstore.vault.staging.INDEX_QUIET_S", 60.0)  # only the close stages
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0
        store.add("Staging deploys need a second reviewer", workspace="ops")
    assert stagers == [os.getpid()]
    assert git(vault, "status", "--porcelain") == ""


def test_the_staging_child_is_named_so_the_next_writer_leaves_it_the_work(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = tmp_path / "release"
    sync_index = GitRepo.sync_index

    def held(self: GitRepo) -> list[str]:  # the child waits here until the test lets it go
        deadline = time.monotonic() + 30
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return sync_index(self)

    monkeypatch.setattr(GitRepo, "sync_index", held)
    with Store.open(settings_at(vault)) as store:
        store.shared.one_shot = True
        store.git.defer_index_bytes = 0
        added = store.add("The release branch is cut on Mondays", workspace="ops")
    pids, paths = read_index_lag(vault)
    assert paths == [added.path]
    assert any(pid != os.getpid() and process_alive(pid) for pid in pids)  # the child, named
    with Store.open(settings_at(vault)) as other:
        assert other.shared.stager.is_live()  # so a writer's lock-time heal leaves it alone
    release.touch()
    wait_until(lambda: not (vault / ".git" / INDEX_LAG).exists(), 10, "the child staged")
    assert git(vault, "status", "--porcelain") == ""
