"""A sync writes git's index once (issue 39 part 5): at 1,000,000 memories the index is
127 MiB, read in ~1.3 s and written in ~0.5 s of CPU, and a sync with recall counters
pending wrote it three times (the counter flush's commit, the merge's checkout, and again to
date it after the branch). The flush's commit now leaves it behind in a large vault, the
status of every file tells the flush's files from a person's edit by hashing them, and the
checkout stages them in memory and writes the index once, after the branch moved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest

from memstore.core.codec import parse_memory
from memstore.service.store import Store
from memstore.vault.git import GitRepo
from memstore.vault.index_staging import INDEX_LAG
from tests.conftest import git, wait_until
from tests.service.test_crash_points import TEXTS
from tests.service.test_sync import converge, machines, one_behind, remote  # noqa: F401 (fixtures)

RECALLED = "2026-12-20T09:00:00Z"


@pytest.fixture
def index_writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every write of git's index by libgit2 from here on: an explicit write, or a
    checkout that writes it on completion (all but DONT_WRITE_INDEX)."""
    seen: list[str] = []
    real_write, real_checkout = pygit2.Index.write, pygit2.Repository.checkout_tree

    def write(self: pygit2.Index) -> None:
        seen.append("write")
        real_write(self)

    def checkout(self: pygit2.Repository, treeish: Any, **kwargs: Any) -> None:
        how = kwargs.get("strategy", pygit2.enums.CheckoutStrategy.SAFE)
        if not how & pygit2.enums.CheckoutStrategy.DONT_WRITE_INDEX:
            seen.append("checkout")
        real_checkout(self, treeish, **kwargs)

    monkeypatch.setattr(pygit2.Index, "write", write)
    monkeypatch.setattr(pygit2.Repository, "checkout_tree", checkout)
    yield seen


def _lag(store: Store) -> Path:
    return store.vault.root / ".git" / INDEX_LAG


def _file(store: Store, memory_id: str) -> Path:
    return next(store.vault.root.glob(f"*/**/*{memory_id}.md"))


def _recalled(store: Store, memory_id: str) -> int:
    path = _file(store, memory_id)
    return parse_memory(path.read_text(encoding="utf-8"), path=str(path)).recalled


def _as_if_large(store: Store) -> None:
    """Make git's index count as large (written whole on every commit): commits that may
    leave it behind do, as at 30,000 files and more."""
    store.git.defer_index_bytes = 0


def test_a_sync_with_counters_and_a_merge_writes_gits_index_once(
    machines: list[Store],  # noqa: F811
    index_writes: list[str],
) -> None:
    a, b, _ = machines
    ids = one_behind(a, b, TEXTS[:4])
    a.add("Redis eviction policy is allkeys-lru on the cache cluster", workspace="infra")
    a.usage.record(ids, RECALLED)  # a session's recalls, pending
    _as_if_large(a)
    index_writes.clear()
    outcome, flushed, _ = a.sync()
    assert (outcome.merge, outcome.pushed, flushed) == ("merged", True, len(ids))
    # The code before wrote it three times: the flush's staging, the checkout's, the date's.
    assert index_writes == ["write"], index_writes
    assert not _lag(a).exists()  # the checkout staged what the flush left behind
    assert git(a.vault.root, "status", "--porcelain") == ""
    assert git(a.vault.root, "diff", "--cached", "--stat") == ""
    messages = git(a.vault.root, "log", "--format=%s", "-6")
    assert "edit(" not in messages  # the flush's own files were never taken for a person's
    assert a.search("Loki logs", k=3).hits  # what the merge brought is indexed
    for memory_id in ids:
        assert _recalled(a, memory_id) == 1


def test_a_persons_edit_of_a_file_the_flush_left_behind_is_committed_as_theirs(
    machines: list[Store],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b, _ = machines
    ids = one_behind(a, b, TEXTS[:3])
    a.usage.record(ids, RECALLED)
    _as_if_large(a)
    edited = _file(a, ids[0])
    relative = edited.relative_to(a.vault.root).as_posix()
    real_status = GitRepo.changed_paths

    def changed_paths(self: GitRepo, paths: Any = None) -> list[str]:
        # After the flush's commit (git's index left behind for its files), before the
        # status of every file: a person saves one of the flushed files (once, in A).
        text = edited.read_text(encoding="utf-8")
        if (
            paths is None
            and self.root == a.vault.root
            and _lag(a).exists()
            and "ingress" not in text
        ):
            edited.write_text(text.replace("nginx", "the ingress's nginx"), encoding="utf-8")
        return real_status(self, paths)

    monkeypatch.setattr(GitRepo, "changed_paths", changed_paths)
    outcome, flushed, _ = a.sync()
    assert (outcome.merge, flushed) == ("merged", len(ids))
    assert outcome.edited == [relative]  # that one only, not the flush's others
    assert "the ingress's nginx" in git(a.vault.root, "show", f"HEAD:{relative}")
    assert git(a.vault.root, "status", "--porcelain") == ""
    assert all(_recalled(a, i) == 1 for i in ids)
    assert b.sync()[0].merge == "fast-forward"
    assert "the ingress's nginx" in (b.vault.root / relative).read_text("utf-8")


def test_a_flush_no_checkout_took_is_staged_once_the_sync_is_over(
    machines: list[Store],  # noqa: F811
) -> None:
    a, b, _ = machines
    ids = [a.add(text, workspace="infra").id for text in TEXTS[:3]]
    converge([a, b])
    a.usage.record(ids, RECALLED)
    _as_if_large(a)
    outcome, flushed, _ = a.sync()  # nothing to bring in: no checkout
    assert (outcome.merge, outcome.pushed, flushed) == ("up to date", True, len(ids))
    # the stager stages it once writes pause (a process of its own), bounded
    wait_until(lambda: not _lag(a).exists(), 30, "git's index was never staged")
    wait_until(
        lambda: git(a.vault.root, "status", "--porcelain") == "", 30, "git status is not clean"
    )
