"""What every view of one open vault shares: its repository, indexes, counters and mutex."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memstore.catalog.indexer import Indexer
from memstore.catalog.staleness import Repositories
from memstore.core.errors import InvalidInputError
from memstore.core.model import CoreMemory
from memstore.service.tiers import Tiers
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo
from memstore.vault.staging import IndexStager
from memstore.vault.usage import Usage

if TYPE_CHECKING:
    from memstore.catalog.citing import CiteChecker
    from memstore.catalog.codebase import CodeIndex
    from memstore.catalog.semantic import VectorIndex
    from memstore.service.store import Store

Clock = Callable[[], datetime]


def fixed_clock(env: Mapping[str, str]) -> Clock | None:
    """The clock `MEMSTORE_NOW` (an ISO time; UTC unless it says) stops, for tests: a score's
    recency part moves with the clock, so two searches a minute apart differ in a decimal."""
    value = env.get("MEMSTORE_NOW", "")
    if not value:
        return None
    try:
        fixed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInputError(
            f"MEMSTORE_NOW is {value!r}, not a time: set an ISO time such as "
            "2026-01-02T03:04:05+00:00, or unset it (it is for tests)"
        ) from None
    fixed = fixed if fixed.tzinfo is not None else fixed.replace(tzinfo=UTC)
    return lambda: fixed


class Resources:
    """The state one open vault keeps, shared by the store and each request's view of it
    (`Store.serving`): opened lazily, closed once."""

    def __init__(self, vault: Vault, clock: Clock, env: Mapping[str, str] | None = None) -> None:
        self.vault = vault
        self.clock = clock
        self.repo: GitRepo | None = None
        self.indexer: Indexer | None = None
        self.code: CodeIndex | None = None  # opened when a source tree was ingested
        self.code_mutex = threading.Lock()
        # A long-running process (the daemon, `serve`) keeps more in memory for its later
        # requests: the code index's terms for typo walks (~0.2 s to read, ~3 MB at 22k
        # chunks; a one-off command walks the segments instead).
        self.resident = False
        # A one-shot command (the lean `add` without a daemon) leaves git's index, when a
        # commit deferred it, for a child process to stage after it answers (IndexStager).
        self.one_shot = False
        self.usage = Usage(vault.state_dir / "usage.sqlite")
        self.core_cache: dict[object, tuple[CoreMemory, ...]] = {}
        # The semantic view of each model asked for (Settings.semantic), and the index
        # version its vectors were last brought in step with.
        self.vector_views: dict[str, VectorIndex] = {}
        self.vectors_at: dict[str, int] = {}
        # One store may serve several threads (the MCP server and its watcher, the daemon).
        self.mutex = threading.RLock()
        # git's index is staged by a process of its own, in the shell's environment
        self.stager = IndexStager(vault, lambda: self.repo, self.mutex, env or {})
        self.sources_refreshed: float | None = None  # monotonic time of a search's walk
        self.replica: str | None = None  # this clone's name in seen_by/recalled_by, once read
        self.tiers = Tiers()  # the followed team vaults recall reads beside this one
        # One checker of citations per repository root recall was asked from (its cache of
        # each cited file, by mtime and size, is what makes a check cost nothing)
        self.cite_checkers: dict[Path, CiteChecker] = {}
        self.repositories = Repositories()  # the repository of each folder recall is asked from

    def cite_checker(self, root: Path) -> CiteChecker:
        """Return the citation checker of the repository at `root` (one per root, kept)."""
        checker = self.cite_checkers.get(root)
        if checker is None:
            from memstore.catalog.citing import CiteChecker

            checker = self.cite_checkers[root] = CiteChecker(root)
        return checker

    def git(self) -> GitRepo:
        if self.repo is None:
            self.repo = GitRepo.open(self.vault.root)
        return self.repo

    def forget_index_caches(self) -> None:
        # A new index (followed, healed, rebuilt) numbers its versions from the start again.
        self.core_cache = {}
        self.vectors_at = {}

    def follow_index(self) -> None:
        """Reopen the index if another process replaced it (`memstore reindex` beside a
        daemon): this process would otherwise write to files no longer on disk.

        Only under the mutex (never waiting for it: the caller may hold the vault lock), so
        no other thread is reading the index being closed.
        """
        if self.indexer is None or not self.mutex.acquire(blocking=False):
            return
        try:
            if self.indexer is not None and self.indexer.follow():
                self.forget_index_caches()
        finally:
            self.mutex.release()

    def close(self) -> None:
        self.tiers.close()
        self.stager.flush(final=True, detach=self.one_shot)
        self.usage.close()
        if self.indexer is not None:
            self.indexer.close()
            self.indexer = None
        if self.code is not None:
            self.code.close()
            self.code = None


class Part:
    """One part of a store's work (writer, reader, maintenance…), reached through its store."""

    def __init__(self, store: Store) -> None:
        self.store = store


F = TypeVar("F", bound=Callable[..., Any])


def serialized(method: F) -> F:
    """Run a part's method under the store's mutex (threads share one index and repository)."""

    @functools.wraps(method)
    def locked(self: Part, *args: Any, **kwargs: Any) -> Any:
        shared = self.store.shared
        with shared.mutex:
            shared.follow_index()
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]
