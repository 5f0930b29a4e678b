"""Keeps the derived index in step with the vault's files: catch-up, record, full rebuild.

A manifest (sqlite, beside the search index: memory_manifest.py) remembers each indexed
file's fingerprint, id and content hash. Catch-up (updater.py) compares it with a scan of
the vault, so commits made with the git CLI, editor saves, deletes and renames are all
found the same way, without pygit2.

The index is a cache: found damaged (on open, by a cheap check under the write lock, or
by any read or write that fails), it is moved aside and rebuilt from the files, and one
warning says so. Where .memstore/ cannot be written, a temporary index answers instead.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from memstore.catalog.leftovers import remove_leftovers
from memstore.catalog.listings import Listings
from memstore.catalog.manifest import file_identity
from memstore.catalog.memory_manifest import FORMAT, Entry, MemoryManifest, create_tables
from memstore.catalog.reading import document_for
from memstore.catalog.updater import CatchUp, Moved, Updater
from memstore.core.errors import VaultError
from memstore.core.front_matter_keys import repeated_keys
from memstore.core.model import FileProblem, Memory
from memstore.index import SearchIndex, SearchIndexError
from memstore.vault.files import Fingerprint, Vault, process_alive

INDEX_DIR = "index"
Progress = Callable[[int, int], None]
FULL_EVERY_S = 300  # a quick catch-up misses in-place writes: a full one at least this often
F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger(__name__)

__all__ = [
    "INDEX_DIR",
    "CatchUp",
    "Drift",
    "Entry",
    "Indexer",
    "Progress",
    "changed_among",
    "document_for",
    "has_conflict",
    "rebuild",
    "remove_leftovers",
]


@dataclass(frozen=True)
class Drift:
    """How the index differs from the files (empty everywhere means consistent)."""

    missing: tuple[str, ...] = ()  # files the index does not have
    stale: tuple[str, ...] = ()  # index entries whose file is gone
    changed: tuple[str, ...] = ()  # index entries that no longer match their file
    miscounted: tuple[str, ...] = ()  # disagreements between the search index and manifest
    problems: tuple[FileProblem, ...] = ()  # files that cannot be read cleanly (not drift)
    conflicts: tuple[str, ...] = ()  # memories sync left with both texts (`conflict: true`)
    duplicate_ids: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (id, the files using it)
    repeated_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (file, keys stated twice)

    @property
    def is_clean(self) -> bool:
        return not (self.missing or self.stale or self.changed or self.miscounted)


def changed_among(indexer: Indexer, paths: list[str]) -> list[str]:
    """Return those of `paths` (a one-shot search's hits) whose file is not as indexed: its
    fingerprint is not the one recorded, or, read within its racy window (a same-size
    rewrite in that clock tick keeps it), what it yields now is not what the index holds."""
    changed = indexer.manifest.changed_among(indexer.vault.root, paths)
    racy = [p for p in indexer.manifest.racy_among(paths) if p not in changed]
    return changed + indexer._updater().look_again(racy)[0] if racy else changed


def _shared_ids(entries: Iterable[Entry]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The ids more than one file uses (a copy by hand, an old merge of a moved memory)."""
    by_id: dict[str, list[str]] = {}
    for entry in entries:
        by_id.setdefault(entry.id, []).append(entry.path)
    return tuple((i, tuple(sorted(p))) for i, p in sorted(by_id.items()) if len(p) > 1)


def has_conflict(memory: Memory) -> bool:
    """Return whether sync left both versions of this memory's text in it."""
    return any(key == "conflict" and "true" in raw.lower() for key, raw in memory.extra)


def _healing(method: F) -> F:
    """Run an Indexer method; on damage, rebuild the index from the files and run it again."""

    @functools.wraps(method)
    def healed(self: Indexer, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except SearchIndexError as err:
            self.heal(err)
        try:
            return method(self, *args, **kwargs)
        except SearchIndexError as err:
            raise VaultError(f"{err}, even rebuilt; run 'memstore reindex'") from err

    return healed  # type: ignore[return-value]


class Indexer:
    """The search index plus the manifest of what it was built from."""

    def __init__(
        self,
        vault: Vault,
        search: SearchIndex,
        manifest: MemoryManifest,
        opened: tuple[Path, tuple[int, int] | None] = (Path(), None),
    ) -> None:
        self.vault = vault
        self.search = search
        self.manifest = manifest
        # the manifest's path and (device, inode) when it was opened: another process's
        # reindex or rebuild puts a new folder there, and `follow` reopens it
        self._opened = opened
        self.recovered_from: Path | None = None
        self._temporary: Path | None = None  # where a read-only vault's index was built
        self._full_due = False  # set by drift(): the next catch-up compares every file
        # A one-shot search that starts a daemon leaves the 5-minute comparison to that
        # daemon's watcher (docs/search.md, rule 1); `deferred_full` says one was due.
        self.defer_timed_full = False
        self.deferred_full = False
        # Created empty by this process, not yet caught up: its first catch-up runs even with
        # a watcher running (which leaves catch-ups to itself but does not see an index
        # deleted under it: the empty one answered "no memories" until its next reconcile).
        self.unfilled = False
        # the folders' entries as this process's index holds them (catalog/listings.py)
        self.listings = Listings(os.fspath(vault.root))

    @property
    def root(self) -> Path:
        return self.vault.state_dir / INDEX_DIR

    @classmethod
    def open(cls, vault: Vault) -> Indexer:
        """Open the index; a damaged or outdated one is rebuilt from the files, a missing one
        is created empty (the next catch-up fills it): catalog/recovery.py."""
        from memstore.catalog.recovery import open_index

        return open_index(vault)

    def heal(self, err: SearchIndexError) -> CatchUp:
        """Replace this damaged index by one rebuilt from the files; this object and its
        `search` stay valid for whoever holds them."""
        with contextlib.suppress(Exception):  # it is damaged: close what closes
            self.manifest.close()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
        from memstore.catalog.recovery import recover

        fresh = recover(self.vault, err)
        self._become(fresh)
        self.recovered_from = fresh.recovered_from
        return CatchUp(updated=tuple(self.fingerprints()))

    def is_replaced(self) -> bool:
        """Say whether another process has put a new index where this one was opened (its
        reindex, or its rebuild of a damaged index): this one's files are gone from disk."""
        path, identity = self._opened
        if identity is None or self._temporary is not None:
            return False
        now = file_identity(path)
        # None: being replaced right now, or deleted; keep this one until a new one stands
        return now is not None and now != identity

    def is_deleted(self) -> bool:
        """Say whether the index this one opened was removed and nothing is putting another
        in its place (a person deleted the cache; a rebuild's swap has a building folder)."""
        path, identity = self._opened
        if identity is None or self._temporary is not None or file_identity(path) is not None:
            return False
        return not any(
            pid.isdigit() and int(pid) != os.getpid() and process_alive(int(pid))
            for pid in (
                left.name.rpartition("-")[2]
                for left in self.vault.state_dir.glob(f"{INDEX_DIR}.building-*")
            )
        )

    def follow(self) -> bool:
        """Reopen the index when another process replaced it (`is_replaced`), or rebuild it
        when it was deleted (`is_deleted`); this object and its `search` stay valid for whoever
        holds them. Return whether it did either."""
        if self.is_deleted():
            log.info("the index at %s was deleted; rebuilding it from the files", self.root)
            from memstore.catalog.recovery import recover

            fresh = recover(self.vault, None)
            self.manifest.close()
            self._become(fresh)
            return True
        if not self.is_replaced():
            return False
        try:  # never a rebuild here: a damaged or other-format one is its writer's to heal
            fresh = Indexer._open_at(self.vault, self.root, create=False)
        except SearchIndexError:
            return False
        try:
            is_ours = fresh.manifest.meta("format") in (None, FORMAT)
        except SearchIndexError:
            is_ours = False
        if not is_ours:
            fresh.close()
            return False
        self.manifest.close()
        self._become(fresh)
        # what this process wrote into the old one meanwhile may be missing: compare all
        self._full_due = True
        return True

    def _become(self, fresh: Indexer) -> None:
        """Take over `fresh`'s index and manifest (this one's are closed or damaged)."""
        self.listings.forget()
        self.search.take_over(fresh.search)
        self.manifest, self._temporary = fresh.manifest, fresh._temporary
        self._opened = fresh._opened

    def check(self) -> None:
        """Raise SearchIndexError unless the search index holds one document per manifest
        entry (cheap; only meaningful while no writer is between its two commits)."""
        files = self.manifest.count()
        documents = self.search.count()
        if files != documents:
            raise SearchIndexError(
                f"index at {self.root} holds {documents} documents for {files} indexed files"
            )

    @classmethod
    def _open_at(cls, vault: Vault, root: Path, *, create: bool = True) -> Indexer:
        if create:
            try:
                root.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as err:
                raise VaultError(f"cannot create {root}: {err.strerror}") from err
        elif not root.is_dir():
            raise SearchIndexError(f"index at {root} is not a folder")
        manifest = root / "manifest.sqlite"
        if not create and not manifest.is_file():
            raise SearchIndexError(f"index at {root} has lost its manifest")
        identity = file_identity(manifest)  # before connecting: a replacement shows later
        db = MemoryManifest.open(manifest, create_tables)
        identity = identity or file_identity(manifest)  # one this connection just created
        try:
            search = SearchIndex.open(root / "search", create=db.is_empty())
        except SearchIndexError:
            db.close()
            raise
        return cls(vault, search, db, (manifest, identity))

    def close(self) -> None:
        self.search.close()
        self.manifest.close()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)

    # --- lookups --------------------------------------------------------------------

    @_healing
    def by_hash(self, workspace: str, hash: str) -> list[Entry]:
        """Return indexed files in `workspace` whose text normalizes to `hash`."""
        return self.manifest.entries("workspace = ? AND hash = ?", [workspace, hash])

    @_healing
    def by_id_prefix(self, prefix: str) -> list[Entry]:
        """Return indexed files whose id starts with `prefix`."""
        return self.manifest.by_id_prefix(prefix)

    @_healing
    def by_path(self, paths: list[str]) -> list[Entry]:
        """Return the indexed files among `paths`."""
        return sorted(self.manifest.by_path(paths), key=lambda entry: entry.path)

    @_healing
    def superseded_by(self, memory_id: str) -> list[Entry]:
        """Return the memories that name `memory_id` in their `supersedes`."""
        return self.manifest.entries("path IN (SELECT path FROM links WHERE old = ?)", [memory_id])

    @_healing
    def by_kind(self, kind: str, workspaces: set[str] | None) -> list[Entry]:
        """Return the memories of one kind, in the given workspaces (None: all)."""
        entries = self.manifest.entries("kind = ?", [kind])
        return [e for e in entries if workspaces is None or e.workspace in workspaces]

    @_healing
    def count(self) -> int:
        """Return how many files are indexed."""
        return self.manifest.count()

    @_healing
    def entries(self) -> list[Entry]:
        """Return every indexed file."""
        return self.manifest.entries()

    @_healing
    def fingerprints(self, workspace: str | None = None) -> dict[str, Fingerprint]:
        return self.manifest.fingerprints(workspace)

    # --- keeping up -----------------------------------------------------------------

    @_healing
    def catch_up(
        self,
        progress: Progress | None = None,
        *,
        workspace: str | None = None,
        full: bool | None = None,
        moved: Moved | None = None,
    ) -> CatchUp:
        """Index every file changed, added or removed since the index last saw the vault.

        Quick unless `full` (None: when due, see docs/search.md): only folders whose
        modification time changed are listed again, which finds every new, deleted,
        renamed or atomically saved file but not a file rewritten in place; a full
        catch-up compares every file. With `workspace`, look only in that folder (the
        write lane's check). `moved`: HEAD was moved by memstore's own checkout, which
        changed only those paths: their folders are listed again instead of every file.
        Run under the vault's write lock: a service transaction's catch-up
        (`Transaction.catch_up`) or a reader's (`Maintenance`, when the lock is free).
        """
        self.check()
        if full is None:
            full = self._is_full_due(workspace, moved)
        if full:
            result = self._catch_up(progress, workspace)
        elif moved is not None:
            result = self._updater().quick(None, progress, also=moved.folders())
        else:
            result = self._quick_catch_up(workspace, progress)
        if workspace is None:
            self.unfilled = False
        return result

    def _is_full_due(self, workspace: str | None, moved: Moved | None = None) -> bool:
        """Say whether a catch-up must compare every file (in its scope)."""
        if self._full_due or self.vault.is_watched():
            return True  # a watcher's catch-ups follow its events: in-place writes too
        seen, now = self._git_seen(), self.vault.head()
        # a checkout, merge or reset by hand may have rewritten files in place; memstore's
        # own (`moved`) says which files it changed, from a HEAD reached by commits alone
        if not self.vault.moved_by_commits_only(seen, now) and (
            moved is None
            or workspace is not None
            or moved.head != now[0]
            or not self.vault.moved_by_commits_only(seen, moved.before)
        ):
            return True
        if workspace is not None or moved is not None:
            return False  # the time-based full catch-up is for the whole vault's readers
        try:
            last = float(self.manifest.meta("full-at") or 0)
        except ValueError:
            last = 0
        due = not 0 <= time.time() - last < FULL_EVERY_S
        if due and self.defer_timed_full:
            self.deferred_full = True
            return False
        return due

    def saw_head(self) -> bool:
        """Say whether the index was last caught up at the vault's HEAD as it is now."""
        return self._git_seen() == self.vault.head()

    def _git_seen(self) -> tuple[str, int]:
        head, _, size = (self.manifest.meta("git") or "").partition(" ")
        return head, int(size) if size.isdigit() else 0

    def _updater(self) -> Updater:
        return Updater(self.vault, self.search, self.manifest, self.listings)

    def _catch_up(
        self,
        progress: Progress | None,
        workspace: str | None = None,
        skipped: list[FileProblem] | None = None,
    ) -> CatchUp:
        """Compare every file (of `workspace`, or the vault) with the manifest (`skipped`
        receives the entries that look like memories but are not read: why, one each)."""
        if workspace is None:
            self._full_due = False
        return self._updater().full(progress, workspace, skipped)

    def _quick_catch_up(self, workspace: str | None, progress: Progress | None) -> CatchUp:
        return self._updater().quick(workspace, progress)

    def _apply(self, *args: Any, **kwargs: Any) -> CatchUp:
        return self._updater().apply(*args, **kwargs)

    @_healing
    def remove(self, paths: list[str]) -> None:
        """Drop files memstore has just deleted from the index."""
        self._apply([], paths, {}, None)
        self.listings.removed(paths)

    def record_settled(self, folders: Mapping[str, int], started: int) -> None:
        """Record in the manifest the times of folders changed only by this process's own
        writes (path → time; each checked with Listings.unchanged since `started`), those
        settled, as a quick catch-up records them: without listing the vault's folders."""
        self._updater().record_own(dict(folders), started)

    def record(self, path: str, memory: Memory) -> None:
        """Index one file memstore has just written."""
        self.record_all({path: memory})

    @_healing
    def record_all(self, memories: Mapping[str, Memory]) -> None:
        """Index files memstore has just written, in one index commit (a commit each made
        flushing 1,500 recall counters at 100,000 memories take ~40 s)."""
        self._updater().record_all(memories)

    @_healing
    def drift(self) -> Drift:
        """Compare the index with every file, read afresh; change nothing but a damaged
        index, which this check reads whole and rebuilds (saying so in a warning)."""
        self._full_due = True  # whatever this finds, the next catch-up compares every file
        self.search.verify()
        check = self.manifest.query("PRAGMA quick_check")[0][0]
        if check != "ok":
            raise SearchIndexError(f"the index manifest is damaged ({one_line(check)})")
        indexed = {doc.key: doc for doc in self.search.documents()}
        manifest = {entry.path: entry for entry in self.entries()}
        problems: list[FileProblem] = []
        on_disk = self.vault.scan(problems)
        changed, conflicts, repeated = _compare_files(self.vault, on_disk, indexed, problems)
        miscounted = [
            f"{path}: in the {'manifest' if path in manifest else 'search index'} only"
            for path in sorted(set(indexed) ^ set(manifest))
        ]
        if self.search.count() != len(indexed):
            miscounted.append(
                f"search index counts {self.search.count()} documents, holds {len(indexed)}"
            )
        unreadable = {p.path for p in problems}  # listed as problems: no --fix indexes them
        return Drift(
            missing=tuple(sorted(set(on_disk) - set(indexed) - unreadable)),
            stale=tuple(sorted(set(indexed) - set(on_disk))),
            changed=tuple(changed),
            miscounted=tuple(miscounted),
            problems=tuple(sorted(problems, key=lambda p: p.path)),
            conflicts=tuple(conflicts),
            duplicate_ids=_shared_ids(manifest.values()),
            repeated_keys=tuple(repeated),
        )

    @_healing
    def problems(self) -> list[FileProblem]:
        """Return every indexed file that could not be read cleanly."""
        return [FileProblem(path, problem) for path, problem in self.manifest.problems()]


def _compare_files(
    vault: Vault, on_disk: Iterable[str], indexed: Mapping[str, Any], problems: list[FileProblem]
) -> tuple[list[str], list[str], list[tuple[str, tuple[str, ...]]]]:
    """Read every file afresh (`drift`): those whose document differs from the index's,
    those sync left with both texts, and those whose front matter states a key twice;
    `problems` gets the files that cannot be read cleanly."""
    changed: list[str] = []
    conflicts: list[str] = []
    repeated: list[tuple[str, tuple[str, ...]]] = []
    for path in sorted(on_disk):
        try:
            memory = vault.read(path)
        except VaultError as err:
            problems.append(FileProblem(path, str(err)))
            continue
        if memory.problem:
            problems.append(FileProblem(path, memory.problem))
        elif memory.has_front_matter and (twice := _repeated_keys(vault, path)):
            repeated.append((path, twice))
        if has_conflict(memory):
            conflicts.append(path)
        if path in indexed and document_for(path, memory) != indexed[path]:
            changed.append(path)
    return changed, conflicts, repeated


def _repeated_keys(vault: Vault, path: str) -> tuple[str, ...]:
    """The keys a file's front matter states twice (YAML silently keeps the last)."""
    try:
        text = vault.path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ()  # gone since the scan: the drift says so
    return repeated_keys(text)


def rebuild(vault: Vault, progress: Progress | None = None) -> tuple[Indexer, CatchUp]:
    """Build a fresh index from the files alone, replacing the old one when it is complete."""
    final = vault.state_dir / INDEX_DIR
    # One building folder per process: two processes healing at once must not share one.
    fresh = vault.state_dir / f"{INDEX_DIR}.building-{os.getpid()}"
    remove_leftovers(vault)
    SearchIndex.delete(fresh)
    indexer = Indexer._open_at(vault, fresh)
    skipped: list[FileProblem] = []
    try:
        result = indexer._catch_up(progress, skipped=skipped)
        # what the scan passed over is said too (a name that is not UTF-8, a folder named .md)
        result = replace(result, problems=(*result.problems, *skipped))
    except BaseException:  # a failure or Ctrl-C: the half-built index goes (a kill: above)
        indexer.close()
        SearchIndex.delete(fresh)
        raise
    indexer.close()
    SearchIndex.delete(final)
    try:
        fresh.rename(final)
    except OSError:
        SearchIndex.delete(fresh)  # another process put a complete index there meanwhile
    return Indexer._open_at(vault, final, create=False), result


def one_line(err: BaseException) -> str:
    return " ".join(str(err).split())  # sqlite's integrity reports span lines
