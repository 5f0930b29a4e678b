"""A writer that names many files (a sync's flush of 606 memories' recall counters) looks
for hand edits by hashing those files, not by git's status of every file (issue 39: at
1,000,000 memories that status cost 7.2 s of the sync), and still commits the edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.service.store import Store
from memstore.vault.edits import NAMED_EDITS_MAX
from memstore.vault.git import GitRepo
from tests.conftest import git


def test_many_named_paths_are_hashed_not_a_status(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    path = vault / edited.path
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\nand pgbouncer on 6432\n")
    statuses: list[str] = []
    real = GitRepo._status_paths

    def recording(self: GitRepo) -> list[str]:
        statuses.append("status")
        return real(self)

    monkeypatch.setattr(GitRepo, "_status_paths", recording)
    named = [edited.path, *(f"infra/2026-12/other-{i}.md" for i in range(600))]
    with store.transaction() as tx:
        made = tx.commit_edits(named)
    assert statuses == []
    assert len(made) == 1 and edited.path in git(vault, "show", "--name-only", made[0])
    assert not git(vault, "status", "--porcelain").strip()

    with path.open("a", encoding="utf-8") as handle:
        handle.write("\nand a read replica\n")
    beyond = [edited.path, *(f"infra/x-{i}.md" for i in range(NAMED_EDITS_MAX))]
    with store.transaction() as tx:
        made = tx.commit_edits(beyond)  # more than hashing is worth: git's status
    assert statuses == ["status"] and len(made) == 1
