"""The service: one vault, its git history and its index. CLI, MCP and watcher call this.

`Store` is small: it opens the vault, owns its parts and hands out transactions. The work is
in the parts: `Writer` (writer.py), `Reader` (reader.py, and the add's hint: hints.py),
`Maintenance` (maintenance.py), `Sources` (sources.py, ingested code), `Vectors` (vectors.py).
The writer and the transaction are imported at the first write: a search needs neither.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from memstore.catalog.indexer import Indexer
from memstore.core.config import Settings
from memstore.core.errors import VaultError
from memstore.core.model import Caller
from memstore.service.checks import memory_path
from memstore.service.maintenance import Maintenance
from memstore.service.reader import Reader, Stats
from memstore.service.resources import Clock, Resources, fixed_clock
from memstore.service.sources import Sources
from memstore.service.vault_init import InitResult, init_vault, is_unmade, require_vault
from memstore.service.vectors import Vectors
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo, Trailers
from memstore.vault.usage import Usage

if TYPE_CHECKING:
    from memstore.service.transaction import Transaction
    from memstore.service.writer import Writer

__all__ = ["InitResult", "Stats", "Store", "init_vault", "memory_path", "require_vault"]

P = ParamSpec("P")
R = TypeVar("R")


def _now() -> datetime:
    return datetime.now(UTC)


def _part(
    name: str, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Store, P], R]:
    """A Store method that hands the call to one of its parts (typed as the part's method;
    one named by a string, the writer's, is looked up when called: its module loads then)."""
    attribute = method if isinstance(method, str) else method.__name__

    def call(self: Store, *args: P.args, **kwargs: P.kwargs) -> R:
        return getattr(getattr(self, name), attribute)(*args, **kwargs)

    call.__name__ = attribute
    call.__doc__ = None if isinstance(method, str) else method.__doc__
    return call


class Store:
    """A vault opened for reading and writing memories."""

    def __init__(
        self,
        settings: Settings,
        vault: Vault,
        clock: Clock = _now,
        *,
        shared: Resources | None = None,
    ) -> None:
        self.settings = settings
        self.vault = vault
        # Who writes by default; checked here, before anything is written (single lines).
        self.trailers = Trailers(settings.source, settings.session, settings.host)
        self.caller = Caller(settings.source, settings.session, settings.host)
        clock = (clock is _now and fixed_clock(settings.env)) or clock  # MEMSTORE_NOW: tests'
        self.shared = shared or Resources(vault, clock, settings.env)
        self.reader = Reader(self)
        self.maintenance = Maintenance(self)
        self.sources = Sources(self)
        self.vectors = Vectors(self)
        if shared is None:
            vault.on_lock = self.maintenance.heal

    @classmethod
    def open(cls, settings: Settings, *, create: bool = False, clock: Clock = _now) -> Store:
        """Open the vault in `settings`; with `create`, make it first if it does not exist."""
        root = settings.vault
        if create and settings.may_create_vault and is_unmade(root):
            init_vault(root, settings)
        require_vault(settings)
        return cls(settings, Vault(root), clock)

    @contextlib.contextmanager
    def serving(self, settings: Settings) -> Iterator[Store]:
        """Serve one request with its caller's settings (source, session, host, environment,
        lock timeout, semantic view): a view of this store sharing its vault, index and
        repository, the store held meanwhile. Nothing of this store changes."""
        if settings.vault != self.settings.vault:
            raise VaultError(f"this store serves {self.settings.vault}, not {settings.vault}")
        with self.shared.mutex:
            yield Store(settings, self.vault, shared=self.shared)

    @contextlib.contextmanager
    def transaction(
        self,
        caller: Caller | None = None,
        *,
        catch_up: bool = True,
        workspace: str | None = None,
        serialize: bool = True,
    ) -> Iterator[Transaction]:
        """Hold the vault for one write by `caller` (default: this store's).

        Steps: the store's mutex (threads of this process; `serialize` False leaves it to
        them, for long work on objects of its own), the vault's write lock (taking it heals
        what a killed process left), a catch-up of the index (of `workspace`, or all; unless
        `catch_up` is False), then the body: a person's edits committed on their own, ONE
        commit of memstore's (Transaction.commit), the index updated; the lock is released.
        """
        with self.shared.mutex if serialize else contextlib.nullcontext():
            if serialize:
                self.shared.follow_index()
            with self.vault.lock(self.settings.lock_timeout):
                from memstore.service.transaction import Transaction

                tx = Transaction(self, caller or self.caller)
                if catch_up:
                    tx.catch_up(workspace)
                try:
                    yield tx
                finally:
                    if tx.deferred:  # git's index catches up once writes pause
                        self.shared.stager.later()

    @contextlib.contextmanager
    def reading(self) -> Iterator[Store]:
        """Hold the store against other threads of this process while reading its index
        (never the vault lock: readers do not wait for writers)."""
        with self.shared.mutex:
            yield self

    def hold(self) -> None:
        """Stop the background merge, wait for the operation under way, then keep all
        others out (the process exits)."""
        self.maintenance.stop_merging()
        self.shared.mutex.acquire()

    def close(self) -> None:
        """Stop the background merge (Maintenance.stop_merging), then close the index,
        counters and repository."""
        self.maintenance.stop_merging()
        self.shared.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @functools.cached_property
    def writer(self) -> Writer:
        from memstore.service.writer import Writer

        return Writer(self)

    @property
    def git(self) -> GitRepo:
        return self.shared.git()

    @property
    def indexer(self) -> Indexer:
        shared = self.shared
        if shared.indexer is None:
            shared.indexer = Indexer.open(self.vault)
        return shared.indexer

    @property
    def usage(self) -> Usage:
        return self.shared.usage

    @property
    def resident(self) -> bool:
        return self.shared.resident

    @resident.setter
    def resident(self, value: bool) -> None:
        self.shared.resident = value

    # The parts' public methods, called on the store (one line each).
    if TYPE_CHECKING:
        add = _part("writer", Writer.add)
        update = _part("writer", Writer.update)
        confirm = _part("writer", Writer.confirm)
        confirm_cited = _part("writer", Writer.confirm_cited)
        forget = _part("writer", Writer.forget)
        plan_memory = _part("writer", Writer.plan_memory)
        flush_usage = _part("writer", Writer.flush_usage)
        replica = _part("writer", Writer.replica)
    else:  # named, not typed: the writer's module is imported at the first write
        add = _part("writer", "add")
        update = _part("writer", "update")
        confirm = _part("writer", "confirm")
        confirm_cited = _part("writer", "confirm_cited")
        forget = _part("writer", "forget")
        plan_memory = _part("writer", "plan_memory")
        flush_usage = _part("writer", "flush_usage")
        replica = _part("writer", "replica")
    search = _part("reader", Reader.search)
    recall = _part("reader", Reader.recall)
    hint = _part("reader", Reader.hint)
    resolve = _part("reader", Reader.resolve)
    show = _part("reader", Reader.show)
    stats = _part("reader", Reader.stats)
    problems = _part("reader", Reader.problems)
    overlap = _part("reader", Reader.overlap)
    changes_since_last_session = _part("reader", Reader.changes_since_last_session)
    log = _part("reader", Reader.log)
    catch_up = _part("maintenance", Maintenance.catch_up)
    doctor = _part("maintenance", Maintenance.doctor)
    reindex = _part("maintenance", Maintenance.reindex)
    tidy = _part("maintenance", Maintenance.tidy)
    compact_index = _part("maintenance", Maintenance.compact_index)
    ensure_merge_driver = _part("maintenance", Maintenance.ensure_merge_driver)
    set_remote = _part("maintenance", Maintenance.set_remote)
    remote_name = _part("maintenance", Maintenance.remote_name)
    remote_url = _part("maintenance", Maintenance.remote_url)
    sync = _part("maintenance", Maintenance.sync)
    code_index = _part("sources", Sources.code_index)
    ingest = _part("sources", Sources.ingest)
    forget_source = _part("sources", Sources.forget_source)
    refresh_source = _part("sources", Sources.refresh_source)
    refresh_sources = _part("sources", Sources.refresh_sources)
    refill_sources = _part("sources", Sources.refill_sources)
    source_roots = _part("sources", Sources.source_roots)
    workspaces = _part("sources", Sources.workspaces)
