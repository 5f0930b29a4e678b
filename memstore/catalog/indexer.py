"""Keeps the derived index in step with the vault's files: catch-up, record, full rebuild.

A manifest (sqlite, beside the search index) remembers each indexed file's fingerprint, id
and content hash. Catch-up compares it with a scan of the vault, so commits made with the
git CLI, editor saves, deletes and renames are all found the same way, without pygit2.

The index is a cache: found damaged (on open, by a cheap check under the write lock, or
by any read or write that fails), it is moved aside and rebuilt from the files, and one
warning says so. Where .memstore/ cannot be written, a temporary index answers instead.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from memstore.core.codec import content_hash
from memstore.core.errors import VaultError
from memstore.core.model import FileProblem, Memory
from memstore.index import (
    Document,
    Part,
    SearchIndex,
    SearchIndexError,
    as_helper,
    connect_read_only,
    document_entities,
    usable_cores,
    write_part,
)
from memstore.vault.files import Fingerprint, Vault, process_alive

INDEX_DIR = "index"
FORMAT = "8"  # bump when documents or the schema change: a mismatched index is rebuilt
Progress = Callable[[int, int], None]
FULL_EVERY_S = 300  # a quick catch-up misses in-place writes: a full one at least this often
# A folder changed this recently may change again within the same clock tick, unseen: it
# is stored as RACY and listed again by the next catch-up (git's "racy" rule).
RACY_NS = 2_000_000_000
RACY = -1
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    """What the manifest knows of one indexed file."""

    path: str
    id: str
    workspace: str
    hash: str
    problem: str
    kind: str = "note"
    supersedes: tuple[str, ...] = ()
    created: str = ""
    seen: int = 1
    recalled: int = 0
    last_recalled: str = ""
    confirmed: int = 0
    archived: str = ""


@dataclass(frozen=True)
class Folders:
    """Folder modification times a catch-up saw, for the manifest's `folders` table."""

    mtimes: dict[str, int]
    gone: tuple[str, ...] = ()  # folders to forget, with everything under them
    replaced: str | None = None  # a subtree listed whole ('' the vault): its rows start anew


@dataclass(frozen=True)
class CatchUp:
    """What a catch-up changed."""

    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    problems: tuple[FileProblem, ...] = ()


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

    @property
    def is_clean(self) -> bool:
        return not (self.missing or self.stale or self.changed or self.miscounted)


def _shared_ids(entries: Iterable[Entry]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The ids more than one file uses (a copy by hand, an old merge of a moved memory)."""
    by_id: dict[str, list[str]] = {}
    for entry in entries:
        by_id.setdefault(entry.id, []).append(entry.path)
    return tuple((i, tuple(sorted(p))) for i, p in sorted(by_id.items()) if len(p) > 1)


def _entry(row: tuple[Any, ...]) -> Entry:
    path, memory_id, workspace, hash, problem, kind, supersedes, *counters = row
    created, seen, recalled, last_recalled, confirmed, archived = counters
    return Entry(
        path,
        memory_id,
        workspace,
        hash,
        problem,
        kind,
        tuple((supersedes or "").split()),
        created or "",
        seen or 1,
        recalled or 0,
        last_recalled or "",
        confirmed or 0,
        archived or "",
    )


def has_conflict(memory: Memory) -> bool:
    """Return whether sync left both versions of this memory's text in it."""
    return any(key == "conflict" and "true" in raw.lower() for key, raw in memory.extra)


def document_for(path: str, memory: Memory) -> Document:
    """Return the search document for a memory file."""
    return Document(
        key=path,
        id=memory.id,
        workspace=memory.workspace,
        kind=memory.kind,
        content=memory.body,
        keywords=memory.keywords,
        source=memory.source,
        created=memory.created,
        seen=memory.seen,
        hash=content_hash(memory.body),
    )


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
        manifest: sqlite3.Connection,
        opened: tuple[Path, tuple[int, int] | None] = (Path(), None),
    ) -> None:
        self.vault = vault
        self.search = search
        self._db = manifest
        # the manifest's path and (device, inode) when it was opened: another process's
        # reindex or rebuild puts a new folder there, and `follow` reopens it
        self._opened = opened
        self.recovered_from: Path | None = None
        self._temporary: Path | None = None  # where a read-only vault's index was built
        self._full_due = False  # set by drift(): the next catch-up compares every file
        # Created empty by this process, not yet caught up: its first catch-up runs even with
        # a watcher running (which leaves catch-ups to itself but does not see an index
        # deleted under it: the empty one answered "no memories" until its next reconcile).
        self.unfilled = False

    @property
    def root(self) -> Path:
        return self.vault.state_dir / INDEX_DIR

    @classmethod
    def open(cls, vault: Vault) -> Indexer:
        """Open the index; a damaged or outdated one is rebuilt from the files, a missing one
        is created empty (the next catch-up fills it)."""
        root = vault.state_dir / INDEX_DIR
        remove_stale_builds(vault)
        if not os.path.lexists(root):
            try:  # a first index, empty: the next catch-up fills it, even beside a watcher
                indexer = cls._open_at(vault, root)
            except (VaultError, SearchIndexError):
                return cls._recover(vault, None)
            indexer.unfilled = True
            return indexer
        try:
            indexer = cls._open_at(vault, root, create=False)
        except SearchIndexError as err:
            return cls._recover(vault, err)
        try:
            outdated = indexer._meta("format") not in (None, FORMAT)
        except SearchIndexError as err:
            indexer.close()
            return cls._recover(vault, err)
        if outdated:  # not damage: nothing worth keeping aside
            indexer.close()
            built = SearchIndexError(f"index at {root} was built by another memstore version")
            return cls._recover(vault, built, keep=False)
        return indexer

    @classmethod
    def _recover(cls, vault: Vault, err: SearchIndexError | None, *, keep: bool = True) -> Indexer:
        """Move a damaged index aside (`err` None: there is none; `keep` False: replace it
        without keeping it), rebuild it, say so."""
        root = vault.state_dir / INDEX_DIR
        try:
            moved = SearchIndex.quarantine(root) if err is not None and keep else None
            indexer, result = rebuild(vault)
        except (OSError, VaultError, SearchIndexError) as failure:
            indexer, result = _temporary(vault)
            reason = _one_line(err) if err else f"no index at {root}"
            log.warning(
                "%s, and %s cannot be written (%s): searched a temporary index of %d memory "
                "files; make it writable to keep one",
                reason,
                vault.state_dir,
                getattr(failure, "strerror", None) or failure,
                len(result.updated),
            )
            return indexer
        indexer.recovered_from = moved
        if err is not None and moved is not None:
            log.warning(
                "%s: moved it aside to %s and rebuilt it from %d memory files",
                _one_line(err),
                moved.relative_to(vault.root),
                len(result.updated),
            )
        elif err is not None:
            log.warning("%s: rebuilt it from %d memory files", _one_line(err), len(result.updated))
        elif result.updated:
            log.warning(
                "no index in %s: built it from %d memory files",
                vault.state_dir,
                len(result.updated),
            )
        return indexer

    def heal(self, err: SearchIndexError) -> CatchUp:
        """Replace this damaged index by one rebuilt from the files; this object and its
        `search` stay valid for whoever holds them."""
        with contextlib.suppress(sqlite3.Error):  # it is damaged: close what closes
            self._db.close()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
        fresh = Indexer._recover(self.vault, err)
        self._become(fresh)
        self.recovered_from = fresh.recovered_from
        return CatchUp(updated=tuple(self.fingerprints()))

    def is_replaced(self) -> bool:
        """Say whether another process has put a new index where this one was opened (its
        reindex, or its rebuild of a damaged index): this one's files are gone from disk."""
        path, identity = self._opened
        if identity is None or self._temporary is not None:
            return False
        now = _identity(path)
        # None: being replaced right now, or deleted; keep this one until a new one stands
        return now is not None and now != identity

    def is_deleted(self) -> bool:
        """Say whether the index this one opened was removed and nothing is putting another
        in its place (a person deleted the cache; a rebuild's swap has a building folder)."""
        path, identity = self._opened
        if identity is None or self._temporary is not None or _identity(path) is not None:
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
            fresh = Indexer._recover(self.vault, None)
            self._db.close()
            self._become(fresh)
            return True
        if not self.is_replaced():
            return False
        try:  # never a rebuild here: a damaged or other-format one is its writer's to heal
            fresh = Indexer._open_at(self.vault, self.root, create=False)
        except SearchIndexError:
            return False
        try:
            is_ours = fresh._meta("format") in (None, FORMAT)
        except SearchIndexError:
            is_ours = False
        if not is_ours:
            fresh.close()
            return False
        self._db.close()
        self._become(fresh)
        # what this process wrote into the old one meanwhile may be missing: compare all
        self._full_due = True
        return True

    def _become(self, fresh: Indexer) -> None:
        """Take over `fresh`'s index and manifest (this one's are closed or damaged)."""
        self.search.take_over(fresh.search)
        self._db, self._temporary, self._opened = fresh._db, fresh._temporary, fresh._opened

    def check(self) -> None:
        """Raise SearchIndexError unless the search index holds one document per manifest
        entry (cheap; only meaningful while no writer is between its two commits)."""
        files = int(self._query("SELECT COUNT(*) FROM files", [])[0][0])
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
        identity = _identity(manifest)  # before connecting: a replacement between shows later
        db = _connect(manifest)
        identity = identity or _identity(manifest)  # one this connection just created
        try:
            rows = _query(db, "SELECT 1 FROM files LIMIT 1", [])
            search = SearchIndex.open(root / "search", create=not rows)
        except SearchIndexError:
            db.close()
            raise
        return cls(vault, search, db, (manifest, identity))

    def close(self) -> None:
        self.search.close()
        self._db.close()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)

    def _meta(self, name: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE name = ?", [name])
        return None if not rows else str(rows[0][0])

    def _query(self, sql: str, args: Iterable[object]) -> list[tuple[Any, ...]]:
        return _query(self._db, sql, args)

    # --- lookups --------------------------------------------------------------------

    @_healing
    def by_hash(self, workspace: str, hash: str) -> list[Entry]:
        """Return indexed files in `workspace` whose text normalizes to `hash`."""
        return self._entries("workspace = ? AND hash = ?", [workspace, hash])

    @_healing
    def by_id_prefix(self, prefix: str) -> list[Entry]:
        """Return indexed files whose id starts with `prefix`."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        # The range lets sqlite use the id index (LIKE alone reads every row: 50 ms at
        # 100,000); ids are stored lowercase, and LIKE folds ASCII case only.
        low = prefix.translate(_ASCII_LOWER)
        return self._entries(
            "id >= ? AND id < ? AND id LIKE ? ESCAPE '\\'", [low, f"{low}\U0010ffff", f"{escaped}%"]
        )

    @_healing
    def by_path(self, paths: list[str]) -> list[Entry]:
        """Return the indexed files among `paths`."""
        marks = ",".join("?" * len(paths))
        return self._entries(f"path IN ({marks})", paths) if paths else []

    @_healing
    def superseded_by(self, memory_id: str) -> list[Entry]:
        """Return the memories that name `memory_id` in their `supersedes`."""
        return self._entries("path IN (SELECT path FROM links WHERE old = ?)", [memory_id])

    @_healing
    def by_kind(self, kind: str, workspaces: set[str] | None) -> list[Entry]:
        """Return the memories of one kind, in the given workspaces (None: all)."""
        entries = self._entries("kind = ?", [kind])
        return [e for e in entries if workspaces is None or e.workspace in workspaces]

    @_healing
    def count(self) -> int:
        """Return how many files are indexed."""
        return int(self._query("SELECT COUNT(*) FROM files", [])[0][0])

    @_healing
    def entries(self) -> list[Entry]:
        """Return every indexed file."""
        return self._entries("1 = 1", [])

    def _entries(self, where: str, args: list[str]) -> list[Entry]:
        rows = self._query(
            "SELECT path, id, workspace, hash, problem, kind, supersedes, created, seen, "
            f"recalled, last_recalled, confirmed, archived FROM files WHERE {where} ORDER BY path",
            args,
        )
        return [_entry(row) for row in rows]

    @_healing
    def fingerprints(self, workspace: str | None = None) -> dict[str, Fingerprint]:
        if workspace is None:
            rows = self._query("SELECT path, mtime_ns, size FROM files", [])
        else:
            rows = self._query(
                "SELECT path, mtime_ns, size FROM files WHERE workspace = ?", [workspace]
            )
        return {path: (mtime, size) for path, mtime, size in rows}

    # --- keeping up -----------------------------------------------------------------

    @_healing
    def catch_up(
        self,
        progress: Progress | None = None,
        *,
        workspace: str | None = None,
        full: bool | None = None,
    ) -> CatchUp:
        """Index every file changed, added or removed since the index last saw the vault.

        Quick unless `full` (None: when due, see docs/search.md): only folders whose
        modification time changed are listed again, which finds every new, deleted,
        renamed or atomically saved file but not a file rewritten in place; a full
        catch-up compares every file. With `workspace`, look only in that folder (the
        write lane's check). The caller holds the vault's write lock.
        """
        self.check()
        if full is None:
            full = self._is_full_due(workspace)
        if full:
            result = self._catch_up(progress, workspace)
        else:
            result = self._quick_catch_up(workspace, progress)
        if workspace is None:
            self.unfilled = False
        return result

    def _is_full_due(self, workspace: str | None) -> bool:
        """Say whether a catch-up must compare every file (in its scope)."""
        if self._full_due or self.vault.is_watched():
            return True  # a watcher's catch-ups follow its events: in-place writes too
        if not self.vault.moved_by_commits_only(self._git_seen(), self.vault.head()):
            return True  # a checkout, merge or reset by hand may have rewritten files in place
        if workspace is not None:
            return False  # the time-based full catch-up is the whole vault's (readers')
        try:
            last = float(self._meta("full-at") or 0)
        except ValueError:
            last = 0
        return not 0 <= time.time() - last < FULL_EVERY_S

    def _git_seen(self) -> tuple[str, int]:
        head, _, size = (self._meta("git") or "").partition(" ")
        return head, int(size) if size.isdigit() else 0

    def _catch_up(
        self,
        progress: Progress | None,
        workspace: str | None = None,
        skipped: list[FileProblem] | None = None,
    ) -> CatchUp:
        """Compare every file (of `workspace`, or the vault) with the manifest (`skipped`
        receives the entries that look like memories but are not read: why, one each)."""
        started, head = time.time_ns(), self.vault.head()
        folders: dict[str, int] = {}
        on_disk = self.vault.scan(skipped, workspace=workspace, folders=folders)
        known = self.fingerprints(workspace)
        changed = sorted(p for p, fp in on_disk.items() if known.get(p) != fp)
        removed = sorted(p for p in known if p not in on_disk)
        meta = {}
        if workspace is None:
            meta = {"full-at": f"{started / 1e9:.3f}", "git": f"{head[0]} {head[1]}"}
            self._full_due = False
        scope = Folders(_settled(folders, started), replaced=workspace or "")
        new = {p for p in changed if p not in known}
        return self._apply(changed, removed, on_disk, progress, folders=scope, meta=meta, new=new)

    def _quick_catch_up(self, workspace: str | None, progress: Progress | None) -> CatchUp:
        """List again only the folders whose modification time changed.

        Writes nothing to the index unless a file changed: a read-only command records at
        most the folders it listed whose mtimes have settled (`_settle`); a folder still
        unsettled, or HEAD moved by commits, is looked at again next time, and the full
        catch-up records both.
        """
        started, head = time.time_ns(), self.vault.head()
        known = self._folders(workspace)
        if (workspace or "") not in known:
            return self._catch_up(progress, workspace)  # never listed: (first) full catch-up
        dirty = sorted(f for f, mtime in known.items() if self.vault.folder_mtime(f) != mtime)
        if not dirty:
            return CatchUp()
        on_disk, listed, gone = self._list_again(dirty, known)
        indexed = self._fingerprints_in(listed, gone)
        changed = sorted(p for p, fp in on_disk.items() if indexed.get(p) != fp)
        removed = sorted(p for p in indexed if p not in on_disk)
        if not changed and not removed:
            if not gone:
                self._settle(listed, known, started)
            return CatchUp()
        folders = Folders(_settled(listed, started), gone=tuple(sorted(gone)))
        meta = {"git": f"{head[0]} {head[1]}"}  # HEAD moved by commits alone, if at all
        new = {p for p in changed if p not in indexed}
        return self._apply(changed, removed, on_disk, progress, folders=folders, meta=meta, new=new)

    def _settle(self, listed: dict[str, int], known: dict[str, int], started: int) -> None:
        """Record the folders a look found as indexed whose mtimes have settled.

        After a clone, a sync or a reindex, every folder was changed too recently to trust
        (RACY). Without this, each later reader listed them all again (a 10k vault's every
        file, ~60 ms a search) until the next full catch-up recorded them.
        """
        settled = {
            folder: mtime
            for folder, mtime in _settled(listed, started).items()
            if mtime != RACY and known.get(folder) != mtime
        }
        if settled:
            with contextlib.suppress(SearchIndexError):  # not writable: list them next time
                self._write_manifest([], [], Folders(settled), {})

    def _list_again(
        self, dirty: list[str], known: dict[str, int]
    ) -> tuple[dict[str, Fingerprint], dict[str, int], set[str]]:
        """List the `dirty` folders (and folders new under them); return the files found,
        the folders listed with their mtimes, and the known folders that are gone."""
        on_disk: dict[str, Fingerprint] = {}
        listed: dict[str, int] = {}
        gone: set[str] = set()
        for folder in dirty:
            if any(_is_under(folder, g) for g in gone):
                continue
            subfolders = self.vault.scan_folder(folder, on_disk, None, listed)
            if folder not in listed:
                gone.add(folder)  # gone, no longer a folder, or unreadable
                continue
            for sub in subfolders:
                if sub not in known:
                    self.vault.scan_tree(sub, on_disk, None, listed)
            gone.update(f for f in known if _parent(f) == folder and f not in subfolders)
        unreadable = {f for f in gone if self.vault.folder_mtime(f) is not None}
        return on_disk, listed, gone - unreadable  # an unreadable folder keeps its entries

    def _folders(self, workspace: str | None) -> dict[str, int]:
        """Return the folders (of `workspace`, or all) with the mtime they were listed at."""
        if workspace is None:
            rows = self._query("SELECT path, mtime_ns FROM folders", [])
        else:
            low, high = _subtree(workspace)
            rows = self._query(
                "SELECT path, mtime_ns FROM folders WHERE path = ? OR (path >= ? AND path < ?)",
                [workspace, low, high],
            )
        return {path: mtime for path, mtime in rows}

    def _fingerprints_in(
        self, listed: Iterable[str], gone: Iterable[str]
    ) -> dict[str, Fingerprint]:
        """Return the indexed files directly in `listed` folders and anywhere under `gone`."""
        found: dict[str, Fingerprint] = {}
        for folder, whole in [*((f, False) for f in listed), *((f, True) for f in gone)]:
            if not folder:
                continue  # the vault's own folder holds no memories
            low, high = _subtree(folder)
            query = "SELECT path, mtime_ns, size FROM files WHERE path >= ? AND path < ?"
            if not whole:
                # direct children only, chosen by sqlite: a workspace folder listed again
                # (a month folder made in it) would otherwise fetch its whole subtree, ~20k
                # rows at 100k memories, on every add until the folder settles
                query += " AND instr(substr(path, ?), '/') = 0"
            rows = self._query(query, [low, high] if whole else [low, high, len(low) + 1])
            found.update((path, (mtime, size)) for path, mtime, size in rows)
        return found

    @_healing
    def remove(self, paths: list[str]) -> None:
        """Drop files memstore has just deleted from the index."""
        self._apply([], paths, {}, None)

    def record(self, path: str, memory: Memory) -> None:
        """Index one file memstore has just written."""
        self.record_all({path: memory})

    @_healing
    def record_all(self, memories: Mapping[str, Memory]) -> None:
        """Index files memstore has just written, in one index commit (a commit each made
        flushing 1,500 recall counters at 100,000 memories take ~40 s)."""
        paths = list(memories)
        if not paths:
            return
        fingerprints = {path: self._fingerprint(path) for path in paths}
        known = {
            e.path for i in range(0, len(paths), 500) for e in self.by_path(paths[i : i + 500])
        }
        new = tuple(path for path in paths if path not in known)
        self._apply(paths, [], fingerprints, None, memories=dict(memories), new=new)

    def _shares(
        self,
        changed: list[str],
        removed: list[str],
        memories: dict[str, Memory] | None,
        new: Collection[str],
    ) -> list[list[str]]:
        """Split a fresh build of many files into one share per core: this process indexes
        the first, a helper process each other one (returns [changed] when not worth it)."""
        count = min(usable_cores(), MAX_PARTS, len(changed) // PART_MIN)
        if count < 2 or removed or memories or len(new) < len(changed):
            return [changed]
        if self.search.document_count():
            return [changed]  # only an empty index takes segments built elsewhere
        # This process also writes its share's segment and every entity row after the
        # helpers are done, so it reads and indexes more than each of them in the meantime.
        unit = len(changed) / (count - 1 + OWN_WEIGHT)
        ends = [round(OWN_WEIGHT * unit + n * unit) for n in range(count - 1)] + [len(changed)]
        return [changed[start:end] for start, end in zip([0, *ends], ends, strict=False)]

    def _fingerprint(self, path: str) -> Fingerprint:
        st = self.vault.path(path).stat()
        return (st.st_mtime_ns, st.st_size)

    def _apply(
        self,
        changed: Iterable[str],
        removed: Iterable[str],
        on_disk: dict[str, Fingerprint],
        progress: Progress | None,
        memories: dict[str, Memory] | None = None,
        *,
        folders: Folders | None = None,
        meta: dict[str, str] | None = None,
        new: Collection[str] = (),
    ) -> CatchUp:
        changed = list(changed)
        removed = list(removed)
        rows: list[tuple[object, ...]] = []
        problems: list[FileProblem] = []
        unreadable: list[str] = []
        entities: dict[str, list[tuple[str, str]]] = {}
        own, *shares = self._shares(changed, removed, memories, new)
        parts_folder = self.search.root / "parts"
        if shares:  # what a build that crashed left there
            shutil.rmtree(parts_folder, ignore_errors=True)
        helpers = [
            _Part.start(self.vault.root, parts_folder / str(n), share, self.search.keeps_entities)
            for n, share in enumerate(shares)
        ]
        adopted: list[Part] = []

        def take(read: Read) -> Document | None:
            path, memory, error, found = read
            if memory is None:
                # An unreadable file keeps its previous index entry: not a deletion.
                unreadable.append(path)
                problems.append(FileProblem(path, error))
                return None
            if memory.problem:
                problems.append(FileProblem(path, memory.problem))
            doc = document_for(path, memory)
            if found is not None:
                entities[path] = found
            fp = on_disk[path]
            rows.append(
                (
                    *(path, fp[0], fp[1], doc.id, doc.workspace, doc.hash, memory.problem),
                    *(memory.kind, " ".join(memory.supersedes), memory.created, memory.seen),
                    *(memory.recalled, memory.last_recalled, memory.confirmed, memory.archived),
                )
            )
            return doc

        def documents() -> Iterator[Document]:
            reads = _read_files(self.vault, own, memories or {}, alone=not shares)
            for done, read in enumerate(reads, 1):
                if progress is not None and (done % 200 == 0 or done == len(own)):
                    progress(done + sum(h.done for h in helpers if h), len(changed))
                if (doc := take(read)) is not None:
                    yield doc
            for share, helper in zip(shares, helpers, strict=True):
                part = helper.result() if helper is not None else None
                if helper is None or part is None:  # it failed: this process indexes its share
                    for read in _read_files(self.vault, share, {}):
                        if (doc := take(read)) is not None:
                            yield doc
                    continue
                segment, its_reads = part
                keys = tuple(doc.key for read in its_reads if (doc := take(read)) is not None)
                if segment is not None:
                    adopted.append(Part(helper.folder, segment, keys))
            if progress is not None and shares:
                progress(len(changed), len(changed))

        try:
            if changed or removed:
                limitmb = _limitmb(len(own))
                self.search.apply(
                    documents(),
                    removed,
                    limitmb=limitmb,
                    new=new,
                    entities=entities,
                    parts=lambda: adopted,
                )
        finally:
            for helper in helpers:
                if helper is not None:
                    helper.stop()
            if shares:
                shutil.rmtree(parts_folder, ignore_errors=True)
        if unreadable and folders is not None:  # list their folders again next time
            retry = {_parent(p): RACY for p in unreadable}
            folders = replace(folders, mtimes={**folders.mtimes, **retry})
        self._write_manifest(rows, removed, folders or Folders({}), meta or {})
        updated = tuple(p for p in changed if p not in unreadable)
        return CatchUp(updated, tuple(removed), tuple(problems))

    def _write_manifest(
        self,
        rows: list[tuple[object, ...]],
        removed: list[str],
        folders: Folders,
        meta: dict[str, str],
    ) -> None:
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("DELETE FROM files WHERE path = ?", [[p] for p in removed])
            db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            touched = [[p] for p in [*removed, *(row[0] for row in rows)]]
            db.executemany("DELETE FROM links WHERE path = ?", touched)
            links = [(old, row[0]) for row in rows for old in str(row[8]).split()]
            db.executemany("INSERT INTO links VALUES (?, ?)", links)
            self._write_folders(folders)
            meta = {**meta, "format": FORMAT}
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(meta.items()))
            db.execute("COMMIT")
        except sqlite3.Error as err:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise SearchIndexError(f"manifest at {self.root} cannot be written ({err})") from err

    def _write_folders(self, folders: Folders) -> None:
        db = self._db
        if folders.replaced == "":
            db.execute("DELETE FROM folders")
        for folder in [*folders.gone, *([folders.replaced] if folders.replaced else [])]:
            db.execute("DELETE FROM folders WHERE path = ?", [folder])
            db.execute("DELETE FROM folders WHERE path >= ? AND path < ?", list(_subtree(folder)))
        db.executemany(
            "INSERT OR REPLACE INTO folders VALUES (?, ?)", sorted(folders.mtimes.items())
        )

    @_healing
    def drift(self) -> Drift:
        """Compare the index with every file, read afresh; change nothing but a damaged
        index, which this check reads whole and rebuilds (saying so in a warning)."""
        self._full_due = True  # whatever this finds, the next catch-up compares every file
        self.search.verify()
        check = self._query("PRAGMA quick_check", [])[0][0]
        if check != "ok":
            raise SearchIndexError(f"the index manifest is damaged ({_one_line(check)})")
        indexed = {doc.key: doc for doc in self.search.documents()}
        manifest = {entry.path: entry for entry in self.entries()}
        problems: list[FileProblem] = []
        on_disk = self.vault.scan(problems)
        changed, conflicts = [], []
        for path in sorted(on_disk):
            try:
                memory = self.vault.read(path)
            except VaultError as err:
                problems.append(FileProblem(path, str(err)))
                continue
            if memory.problem:
                problems.append(FileProblem(path, memory.problem))
            if has_conflict(memory):
                conflicts.append(path)
            if path not in indexed:
                continue
            if document_for(path, memory) != indexed[path]:
                changed.append(path)
        miscounted = [
            f"{path}: in the {'manifest' if path in manifest else 'search index'} only"
            for path in sorted(set(indexed) ^ set(manifest))
        ]
        if self.search.count() != len(indexed):
            miscounted.append(
                f"search index counts {self.search.count()} documents, holds {len(indexed)}"
            )
        return Drift(
            missing=tuple(sorted(set(on_disk) - set(indexed))),
            stale=tuple(sorted(set(indexed) - set(on_disk))),
            changed=tuple(changed),
            miscounted=tuple(miscounted),
            problems=tuple(sorted(problems, key=lambda p: p.path)),
            conflicts=tuple(conflicts),
            duplicate_ids=_shared_ids(manifest.values()),
        )

    @_healing
    def problems(self) -> list[FileProblem]:
        """Return every indexed file that could not be read cleanly."""
        rows = self._query("SELECT path, problem FROM files WHERE problem != '' ORDER BY path", [])
        return [FileProblem(path, problem) for path, problem in rows]


# --- reading many files in a second process -----------------------------------------------

# (path, memory or None, why it could not be read, its entities if already extracted)
Read = tuple[str, Memory | None, str, list[tuple[str, str]] | None]
READER_MIN = 5000  # fewer files are read here: starting the reader costs ~0.2 s
READER_CHUNK = 1000
# A fresh build of at least PART_MIN files per core is shared among up to MAX_PARTS
# processes, each writing a segment of its own (docs/benchmarks.md §5).
PART_MIN = 10_000
MAX_PARTS = 4
OWN_WEIGHT = 1.8  # this process's share against a helper's (measured at 100k on 2 cores)
PART_CODE = "from memstore.catalog.indexer import serve_part; serve_part()"


def _read_files(
    vault: Vault, paths: list[str], memories: dict[str, Memory], *, alone: bool = True
) -> Iterator[Read]:
    """Read `paths` in order; a large batch is read (and its entities found) by a second
    process while this one indexes, a chunk ahead (a rebuild: ~25% of the work), unless
    not `alone` (helpers indexing shares of the build have the other cores)."""
    if len(paths) < READER_MIN or memories or not alone:
        for path in paths:
            yield _read_one(vault, path, memories)
        return
    chunks = [paths[i : i + READER_CHUNK] for i in range(0, len(paths), READER_CHUNK)]
    reader = _Reader.start(vault.root, chunks)
    try:
        for chunk in chunks:
            batch = reader.receive() if reader is not None else None
            if batch is None:
                reader = None  # it failed: this process reads the rest
                batch = [_read_one(vault, path, memories) for path in chunk]
            yield from batch
    finally:
        if reader is not None:
            reader.stop()


def _read_one(vault: Vault, path: str, memories: dict[str, Memory]) -> Read:
    try:
        return path, memories.get(path) or vault.read(path), "", None
    except VaultError as err:
        return path, None, str(err), None


class _Reader:
    """A second Python process that reads and parses memory files (pickles over pipes).

    A thread feeds it every chunk of paths while this process reads its answers in order:
    the pipes' own buffers pace it, and neither side waits on the other's write.
    """

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    @classmethod
    def start(cls, root: Path, chunks: list[list[str]]) -> _Reader | None:
        try:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "from memstore.catalog.indexer import serve_reads; serve_reads()",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        except OSError:
            return None
        feeder = threading.Thread(target=_feed, args=(process, [str(root), *chunks]), daemon=True)
        feeder.start()
        return cls(process)

    def receive(self) -> list[Read] | None:
        try:
            return pickle.load(self._process.stdout)  # type: ignore[arg-type]
        except (OSError, EOFError, ValueError, pickle.UnpicklingError):
            self.stop()
            return None

    def stop(self) -> None:
        self._process.kill()  # done, or failed: what it still had to say is not needed
        self._process.wait()
        with contextlib.suppress(OSError):
            self._process.stdout.close()  # type: ignore[union-attr]


def _feed(process: subprocess.Popen[bytes], messages: list[object]) -> None:
    """Write every message to the reader's stdin, then close it (a thread of its own)."""
    try:
        for message in messages:
            pickle.dump(message, process.stdin)  # type: ignore[arg-type]
    except (OSError, ValueError):
        pass  # it is gone or was stopped: receive() says so
    finally:
        with contextlib.suppress(OSError, ValueError):
            process.stdin.close()  # type: ignore[union-attr]


def serve_reads() -> None:
    """Run as the reader process: read chunks of paths named on stdin, answer on stdout."""
    with as_helper():
        vault = Vault(Path(pickle.load(sys.stdin.buffer)))
        while True:
            try:
                paths = pickle.load(sys.stdin.buffer)
            except EOFError:
                return
            batch = []
            for path in paths:
                path, memory, error, _ = _read_one(vault, path, {})
                found = None if memory is None else document_entities(document_for(path, memory))
                batch.append((path, memory, error, found))
            pickle.dump(batch, sys.stdout.buffer)
            sys.stdout.buffer.flush()


class _Part:
    """A helper process that reads, parses and indexes one share of a fresh build into a
    folder of its own (`serve_part`), while this process indexes another.

    It reports how far it got as it goes and, at the end, its segment and what it read
    (pickles over a pipe, read by a thread so that it never waits on this process).
    """

    def __init__(self, process: subprocess.Popen[bytes], folder: Path) -> None:
        self._process = process
        self.folder = folder
        self.done = 0
        self._result: tuple[Any, list[Read]] | None = None
        self._listener = threading.Thread(target=self._listen, daemon=True)
        self._listener.start()

    @classmethod
    def start(cls, root: Path, folder: Path, paths: list[str], entities: bool) -> _Part | None:
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", PART_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        except OSError:
            return None
        part = cls(process, folder)
        job = (str(root), str(folder), paths, _limitmb(len(paths)), entities)
        feeder = threading.Thread(target=_feed, args=(process, [job]), daemon=True)
        feeder.start()
        return part

    def _listen(self) -> None:
        stream = self._process.stdout
        try:
            while True:
                message = pickle.load(stream)  # type: ignore[arg-type]
                if message[0] == "done":
                    self.done = message[1]
                elif message[0] == "part":
                    self._result = (message[1], message[2])
                    return
        except (OSError, EOFError, ValueError, pickle.UnpicklingError, IndexError, TypeError):
            return  # it failed or was stopped: result() says so

    def result(self) -> tuple[Any, list[Read]] | None:
        """Wait for the helper; return its segment (None: it indexed nothing) and what it
        read, or None if it failed."""
        self._listener.join()
        if self._process.wait() != 0:
            return None
        return self._result

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._listener.join()
        with contextlib.suppress(OSError):
            self._process.stdout.close()  # type: ignore[union-attr]


def serve_part() -> None:
    """Run as a helper process: index the share of a fresh build named on stdin."""
    with as_helper():
        root, folder, paths, limitmb, keep_entities = pickle.load(sys.stdin.buffer)
        vault = Vault(Path(root))
        out = sys.stdout.buffer
        reads: list[Read] = []

        def documents() -> Iterator[Document]:
            for done, path in enumerate(paths, 1):
                if done % 1000 == 0:  # a parent that is gone breaks the pipe: this one stops
                    pickle.dump(("done", done), out)
                    out.flush()
                path, memory, error, _ = _read_one(vault, path, {})
                if memory is None:
                    reads.append((path, memory, error, None))
                    continue
                doc = document_for(path, memory)
                reads.append((path, memory, error, document_entities(doc) if keep_entities else []))
                yield doc

        segment = write_part(Path(folder), documents(), limitmb)
        pickle.dump(("part", segment, reads), out)
        out.flush()


def rebuild(vault: Vault, progress: Progress | None = None) -> tuple[Indexer, CatchUp]:
    """Build a fresh index from the files alone, replacing the old one when it is complete."""
    final = vault.state_dir / INDEX_DIR
    # One building folder per process: two processes healing at once must not share one.
    fresh = vault.state_dir / f"{INDEX_DIR}.building-{os.getpid()}"
    remove_stale_builds(vault)
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


def remove_stale_builds(vault: Vault) -> list[Path]:
    """Delete the building folders of rebuilds whose process is gone (a reindex killed
    midway); return them. One of a live process is its rebuild under way: kept."""
    removed = []
    try:
        found = [
            p for p in vault.state_dir.iterdir() if p.name.startswith(f"{INDEX_DIR}.building-")
        ]
    except OSError:
        return []  # no state folder yet, or unreadable: the open says so
    for left in found:
        pid = left.name.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
            SearchIndex.delete(left)
            removed.append(left)
            log.warning("removed %s, left by a reindex that was killed", left)
    return removed


def _temporary(vault: Vault) -> tuple[Indexer, CatchUp]:
    """Build an index of the vault in a temporary folder (removed when it is closed)."""
    folder = Path(tempfile.mkdtemp(prefix="memstore-index-"))
    indexer = Indexer._open_at(vault, folder / INDEX_DIR)
    indexer._temporary = folder
    try:
        return indexer, indexer._catch_up(None)
    except SearchIndexError as err:
        indexer.close()
        raise VaultError(f"cannot build an index of {vault.root}: {err}") from err


def _limitmb(documents: int) -> int:
    """Return the memory Whoosh may fill before it spills postings to disk (in MB)."""
    return 64 if documents <= 500 else 256 if documents <= 10_000 else 1024


def _settled(folders: dict[str, int], started: int) -> dict[str, int]:
    """Return `folders` with those changed too recently to trust marked RACY."""
    return {f: m if m < started - RACY_NS else RACY for f, m in folders.items()}


def _subtree(folder: str) -> tuple[str, str]:
    """Return the bounds of the paths under a folder, for a range query ('0' follows '/')."""
    return f"{folder}/", f"{folder}0"


def _parent(folder: str) -> str:
    return folder.rpartition("/")[0]


def _is_under(folder: str, parent: str) -> bool:
    return bool(parent) and folder.startswith(f"{parent}/")


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())  # sqlite's integrity reports span lines


def _identity(path: Path) -> tuple[int, int] | None:
    """Return the (device, inode) of the file at `path`, None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _connect(path: Path) -> sqlite3.Connection:
    """Open (creating if missing) the manifest database."""
    if path.is_file() and not os.access(path.parent, os.W_OK):
        try:  # a read-only vault can still be searched
            return connect_read_only(path)
        except sqlite3.Error as err:
            raise SearchIndexError(f"manifest at {path} cannot be opened ({err})") from err
    try:
        db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as err:
        raise SearchIndexError(f"manifest at {path} cannot be opened ({err})") from err
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # A cache: a power cut may lose the last commit (the count check then rebuilds),
        # never corrupt it; a killed process loses nothing. Saves an fsync per write.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER, "
            "size INTEGER, id TEXT, workspace TEXT, hash TEXT, problem TEXT, kind TEXT, "
            "supersedes TEXT, created TEXT, seen INTEGER, recalled INTEGER, "
            "last_recalled TEXT, confirmed INTEGER, archived TEXT)"
        )
        db.execute("CREATE INDEX IF NOT EXISTS files_id ON files (id)")
        db.execute("CREATE TABLE IF NOT EXISTS links (old TEXT, path TEXT)")
        db.execute("CREATE INDEX IF NOT EXISTS links_old ON links (old)")
        db.execute("CREATE INDEX IF NOT EXISTS links_path ON links (path)")
        db.execute("CREATE INDEX IF NOT EXISTS files_kind ON files (kind)")
        db.execute("CREATE INDEX IF NOT EXISTS files_hash ON files (workspace, hash)")
        db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mtime_ns INTEGER)")
    except sqlite3.Error as err:
        db.close()
        raise SearchIndexError(f"manifest at {path} cannot be opened ({err})") from err
    return db


def _query(db: sqlite3.Connection, sql: str, args: Iterable[object]) -> list[tuple[Any, ...]]:
    """Run a manifest query; damage (or any sqlite failure) becomes SearchIndexError."""
    try:
        return db.execute(sql, list(args)).fetchall()
    except sqlite3.Error as err:
        raise SearchIndexError(f"the index manifest cannot be read ({err})") from err
