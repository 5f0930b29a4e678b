"""Keeps the derived index in step with the vault's files: catch-up, record, full rebuild.

A manifest (sqlite, beside the search index) remembers each indexed file's fingerprint, id
and content hash. Catch-up compares it with a scan of the vault, so commits made with the
git CLI, editor saves, deletes and renames are all found the same way, without pygit2.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from index import Document, SearchIndex, SearchIndexError
from memstore.codec import content_hash
from memstore.errors import VaultError
from memstore.model import FileProblem, Memory
from memstore.vault import Fingerprint, Vault

INDEX_DIR = "index"
FORMAT = "6"  # bump when documents change shape: a mismatched index is rebuilt
Progress = Callable[[int, int], None]


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

    @property
    def is_clean(self) -> bool:
        return not (self.missing or self.stale or self.changed or self.miscounted)


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


class Indexer:
    """The search index plus the manifest of what it was built from."""

    def __init__(self, vault: Vault, search: SearchIndex, manifest: sqlite3.Connection) -> None:
        self.vault = vault
        self.search = search
        self._db = manifest
        self.recovered_from: Path | None = None

    @property
    def root(self) -> Path:
        return self.vault.state_dir / INDEX_DIR

    @classmethod
    def open(cls, vault: Vault) -> Indexer:
        """Open the index; a damaged or outdated one is moved aside and rebuilt on catch-up."""
        root = vault.state_dir / INDEX_DIR
        recovered: Path | None = None
        try:
            indexer = cls._open_at(vault, root)
            if indexer._meta("format") not in (None, FORMAT):
                indexer.close()
                SearchIndex.delete(root)
                indexer = cls._open_at(vault, root)
        except (SearchIndexError, sqlite3.DatabaseError) as err:
            if not os.access(vault.state_dir, os.W_OK):
                raise VaultError(
                    f"cannot open the index in {vault.state_dir}, which is read-only; "
                    "make the vault writable (memstore keeps its index there)"
                ) from err
            recovered = SearchIndex.quarantine(root)
            indexer = cls._open_at(vault, root)
        indexer.recovered_from = recovered
        return indexer

    @classmethod
    def _open_at(cls, vault: Vault, root: Path) -> Indexer:
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as err:
            raise VaultError(
                f"cannot create {root}: {err.strerror}; is the vault read-only?"
            ) from err
        search = SearchIndex.open(root / "search")
        db = sqlite3.connect(
            root / "manifest.sqlite", timeout=10, isolation_level=None, check_same_thread=False
        )
        db.execute("PRAGMA journal_mode=WAL")
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
        return cls(vault, search, db)

    def close(self) -> None:
        self.search.close()
        self._db.close()

    def _meta(self, name: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", [name]).fetchone()
        return None if row is None else str(row[0])

    # --- lookups --------------------------------------------------------------------

    def by_hash(self, workspace: str, hash: str) -> list[Entry]:
        """Return indexed files in `workspace` whose text normalizes to `hash`."""
        return self._entries("workspace = ? AND hash = ?", [workspace, hash])

    def by_id_prefix(self, prefix: str) -> list[Entry]:
        """Return indexed files whose id starts with `prefix`."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return self._entries("id LIKE ? ESCAPE '\\'", [f"{escaped}%"])

    def by_path(self, paths: list[str]) -> list[Entry]:
        """Return the indexed files among `paths`."""
        marks = ",".join("?" * len(paths))
        return self._entries(f"path IN ({marks})", paths) if paths else []

    def superseded_by(self, memory_id: str) -> list[Entry]:
        """Return the memories that name `memory_id` in their `supersedes`."""
        return self._entries("path IN (SELECT path FROM links WHERE old = ?)", [memory_id])

    def by_kind(self, kind: str, workspaces: set[str] | None) -> list[Entry]:
        """Return the memories of one kind, in the given workspaces (None: all)."""
        entries = self._entries("kind = ?", [kind])
        return [e for e in entries if workspaces is None or e.workspace in workspaces]

    def count(self) -> int:
        """Return how many files are indexed."""
        return int(self._db.execute("SELECT COUNT(*) FROM files").fetchone()[0])

    def entries(self) -> list[Entry]:
        """Return every indexed file."""
        return self._entries("1 = 1", [])

    def _entries(self, where: str, args: list[str]) -> list[Entry]:
        rows = self._db.execute(
            "SELECT path, id, workspace, hash, problem, kind, supersedes, created, seen, "
            f"recalled, last_recalled, confirmed, archived FROM files WHERE {where} ORDER BY path",
            args,
        )
        return [_entry(row) for row in rows]

    def fingerprints(self, workspace: str | None = None) -> dict[str, Fingerprint]:
        if workspace is None:
            rows = self._db.execute("SELECT path, mtime_ns, size FROM files")
        else:
            rows = self._db.execute(
                "SELECT path, mtime_ns, size FROM files WHERE workspace = ?", [workspace]
            )
        return {path: (mtime, size) for path, mtime, size in rows}

    # --- keeping up -----------------------------------------------------------------

    def catch_up(
        self, progress: Progress | None = None, *, workspace: str | None = None
    ) -> CatchUp:
        """Index every file changed, added or removed since the index last saw the vault.

        With `workspace`, look only in that folder (the write lane's cheaper check).
        """
        on_disk = self.vault.scan(workspace=workspace)
        known = self.fingerprints(workspace)
        changed = sorted(p for p, fp in on_disk.items() if known.get(p) != fp)
        removed = sorted(p for p in known if p not in on_disk)
        if not changed and not removed:
            return CatchUp()
        return self._apply(changed, removed, on_disk, progress)

    def remove(self, paths: list[str]) -> None:
        """Drop files memstore has just deleted from the index."""
        self._apply([], paths, {}, None)

    def record(self, path: str, memory: Memory) -> None:
        """Index one file memstore has just written."""
        self._apply([path], [], {path: self._fingerprint(path)}, None, memories={path: memory})

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
    ) -> CatchUp:
        changed = list(changed)
        removed = list(removed)
        docs: list[Document] = []
        rows: list[tuple[object, ...]] = []
        problems: list[FileProblem] = []
        unreadable: list[str] = []
        for done, path in enumerate(changed, 1):
            try:
                memory = (memories or {}).get(path) or self.vault.read(path)
            except VaultError as err:
                # An unreadable file keeps its previous index entry: not a deletion.
                unreadable.append(path)
                problems.append(FileProblem(path, str(err)))
                continue
            if memory.problem:
                problems.append(FileProblem(path, memory.problem))
            doc = document_for(path, memory)
            docs.append(doc)
            fp = on_disk[path]
            rows.append(
                (
                    *(path, fp[0], fp[1], doc.id, doc.workspace, doc.hash, memory.problem),
                    *(memory.kind, " ".join(memory.supersedes), memory.created, memory.seen),
                    *(memory.recalled, memory.last_recalled, memory.confirmed, memory.archived),
                )
            )
            if progress is not None and (done % 200 == 0 or done == len(changed)):
                progress(done, len(changed))
        self.search.apply(docs, removed, limitmb=256 if len(docs) > 500 else 64)
        db = self._db
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
        db.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", [FORMAT])
        db.execute("COMMIT")
        updated = tuple(p for p in changed if p not in unreadable)
        return CatchUp(updated, tuple(removed), tuple(problems))

    def drift(self) -> Drift:
        """Compare the index with every file, read afresh; change nothing."""
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
        )

    def problems(self) -> list[FileProblem]:
        """Return every indexed file that could not be read cleanly."""
        rows = self._db.execute("SELECT path, problem FROM files WHERE problem != '' ORDER BY path")
        return [FileProblem(path, problem) for path, problem in rows]


def rebuild(vault: Vault, progress: Progress | None = None) -> tuple[Indexer, CatchUp]:
    """Build a fresh index from the files alone, replacing the old one when it is complete."""
    final = vault.state_dir / INDEX_DIR
    fresh = vault.state_dir / f"{INDEX_DIR}.building"
    SearchIndex.delete(fresh)
    indexer = Indexer._open_at(vault, fresh)
    try:
        result = indexer.catch_up(progress)
    finally:
        indexer.close()
    SearchIndex.delete(final)
    fresh.rename(final)
    return Indexer.open(vault), result
