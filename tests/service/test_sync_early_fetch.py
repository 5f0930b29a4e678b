"""A sync's fetch runs beside its flush of usage (issue 39 part 5): at 1,000,000 memories
the flush of a session's recalls takes ~9 s and the fetch 5-15 s, one after the other
before. The fetch now starts before the flush (it writes only objects and refs/remotes/*),
and a flush that fails ends it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstore.core.errors import VaultError
from memstore.service.store import Store
from memstore.service.writer import Writer
from memstore.vault import remote as remote_module
from tests.conftest import git
from tests.service.test_crash_points import TEXTS
from tests.service.test_sync import converge, machines, one_behind, remote  # noqa: F401 (fixtures)

RECALLED = "2026-12-20T09:00:00Z"


def _spy_on_fetches(monkeypatch: pytest.MonkeyPatch, store: Store) -> list[Any]:
    """Record, for each fetch `store`'s vault starts, HEAD's subject then and the fetch."""
    started: list[Any] = []
    real_start = remote_module.start_fetch

    def start_fetch(root: Path, *args: Any) -> Any:
        fetching = real_start(root, *args)
        if root == store.vault.root:
            started.append((git(root, "log", "-1", "--format=%s"), fetching))
        return fetching

    monkeypatch.setattr(remote_module, "start_fetch", start_fetch)
    return started


def test_the_fetch_starts_before_the_flush_of_usage_and_the_sync_is_the_same(
    machines: list[Store],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b, _ = machines
    ids = one_behind(a, b, TEXTS[:3])
    a.add("Redis eviction policy is allkeys-lru on the cache cluster", workspace="infra")
    a.usage.record(ids, RECALLED)  # a session's recalls, pending: the flush commits them
    started = _spy_on_fetches(monkeypatch, a)
    outcome, flushed, _ = a.sync()
    assert (outcome.merge, outcome.pushed, flushed) == ("merged", True, len(ids))
    # One fetch, started while HEAD was still the add (the code before: the flush's commit).
    assert len(started) == 1
    assert started[0][0].startswith("add(infra): Redis eviction"), started[0][0]
    assert git(a.vault.root, "status", "--porcelain") == ""
    assert a.search("Loki logs", k=3).hits  # what the fetch brought is merged and indexed
    assert b.sync()[0].merge == "fast-forward"
    assert git(b.vault.root, "rev-parse", "HEAD") == git(a.vault.root, "rev-parse", "HEAD")


def test_a_flush_that_fails_ends_the_fetch_it_started(
    machines: list[Store],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b, _ = machines
    ids = [a.add(text, workspace="infra").id for text in TEXTS[:2]]
    converge([a, b])
    a.usage.record(ids, RECALLED)
    started = _spy_on_fetches(monkeypatch, a)

    def failing_flush(self: Writer, tx: Any, every: float | None = None) -> int:
        raise VaultError("the disk is full")

    monkeypatch.setattr(Writer, "flush_usage_held", failing_flush)
    with pytest.raises(VaultError, match="the disk is full"):
        a.sync()
    assert len(started) == 1
    process = started[0][1].process
    assert process is not None and process.poll() is not None  # ended, not left running
