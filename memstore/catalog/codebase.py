"""Source trees ingested as code chunks: derived from the code, never copied into the vault.

A person registers a root (a folder, usually a git repository) into a workspace; its files
are cut into chunks (memstore/catalog/chunking.py) and indexed in a search index of their own
under `.memstore/code/`, beside the memories' index and as disposable as it: `memstore
reindex` deletes it and chunks every registered root again. The registrations themselves
(`.memstore/code-roots.json`) are local state a person lists and removes; they are never
committed, since a root's path means nothing on another machine.

Re-ingesting costs what changed. A file whose size and modification time match the last
run is not read; one whose text hashes the same is not chunked; a chunk whose text hashes
the same as one the file had keeps its index document (its key names the digest, not the
lines), and only a chunk that moved is written again, with its new line range.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar

from memstore.catalog.chunking import Chunk, chunk_source, prose
from memstore.catalog.sources import Walk, read_source, walk_sources
from memstore.core.errors import InvalidInputError, VaultError
from memstore.core.model import Hit
from memstore.index import Document, IndexHit, SearchIndex, SearchIndexError, shared
from memstore.vault.locks import try_flock

CODE_DIR = "code"  # .memstore/code/: the chunks' search index and what was read
ROOTS_FILE = "code-roots.json"  # .memstore/: the registered roots (kept when the index goes)
KIND = "code"
CODE_ANY_TERM_LIMIT = 100
SHARE_MIN = 2000  # chunks per process before a cold ingest's indexing is shared by cores
MAX_ENTITIES = 20  # a memory's entities looked up for the code it names
SAME_TEXT = 0.85  # word-shingle Jaccard at which two chunks count as the same code
RRF_K = 60  # reciprocal rank fusion's usual constant: rank 1 and rank 2 stay close
# state.sqlite's layout and what a chunk's document holds (3: its prose, `prose`), as
# PRAGMA user_version: a code index of another one is rebuilt
SCHEMA = 3
SHOWN_PATHS = 100  # at most this many already-chunked paths in an ingest's summary
LOCK_FILE = "code.lock"  # .memstore/: one writer of the code index at a time, across processes
LOCK_WAIT_S = 10.0  # an ingest waits this long for another process's to finish
RACY_NS = 2_000_000_000  # a file changed this close to its reading may change again unseen
Progress = Callable[[int, int], None]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class CodeRoot:
    """A registered source tree and the workspace its chunks belong to."""

    path: str  # absolute, resolved
    workspace: str
    added: str = ""  # when it was first ingested (ISO 8601, UTC)


@dataclass
class IngestSummary:
    """What one ingest of a root did (or, with `dry_run`, would do)."""

    root: str
    workspace: str
    dry_run: bool = False
    files_scanned: int = 0  # files the walk listed (skipped ones not counted)
    files_read: int = 0  # files whose size or time changed, so were read again
    files_removed: int = 0  # files gone since the last ingest
    files_skipped: dict[str, int] = field(default_factory=dict)  # reason → count
    created: int = 0  # chunks new to the index
    updated: int = 0  # chunks whose text is unchanged but which moved to other lines
    unchanged: int = 0
    removed: int = 0
    seconds: float = 0.0
    # files changed since the last ingest that a running memstore (the daemon's watcher, a
    # search's catch-up) already chunked: this ingest found them current, but they changed
    already_chunked: int = 0
    already_chunked_paths: list[str] = field(default_factory=list)  # the first SHOWN_PATHS

    def as_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class _Stored:
    key: str
    path: str
    start: int
    end: int
    digest: str


def _guarded(method: F) -> F:
    """Run a CodeIndex method holding its mutex."""

    @functools.wraps(method)
    def guarded(self: CodeIndex, *args: Any, **kwargs: Any) -> Any:
        with self._mutex:
            return method(self, *args, **kwargs)

    return guarded  # type: ignore[return-value]


class CodeIndex:
    """The chunks of every registered root: a search index and a table of what was read."""

    def __init__(
        self, state_dir: Path, search: SearchIndex, db: sqlite3.Connection, *, fresh: bool
    ) -> None:
        self.state_dir = state_dir
        self.search = search
        self.fresh = fresh  # made just now: registered roots have no chunks here yet
        self._db = db
        self._identity = _identity(state_dir)
        # Readers (search) and the short writing steps of one process take turns here; the
        # walk and the chunking of an ingest run outside it, under the writer lock only.
        self._mutex = threading.RLock()
        self._writer_depth = 0  # how deep this process is in `writing`

    def is_replaced(self) -> bool:
        """Say whether another process deleted or rebuilt this code index since it was
        opened (`memstore reindex`): its files are then no longer the ones on disk."""
        return _identity(self.state_dir) != self._identity

    @classmethod
    def open(cls, state_dir: Path) -> CodeIndex:
        """Open (creating) the code index under a vault's `.memstore/`; a damaged one is
        deleted and made afresh (it is derived: `memstore ingest` or `reindex` refills it)."""
        folder = state_dir / CODE_DIR
        fresh = not (folder / "state.sqlite").is_file()
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            db = sqlite3.connect(
                folder / "state.sqlite", timeout=10, isolation_level=None, check_same_thread=False
            )  # a store serves several threads, one at a time
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if not fresh and version != SCHEMA:  # another layout: it is a cache, start over
                db.close()
                cls.delete(state_dir)
                return cls.open(state_dir)
            _create_tables(db)
            db.execute(f"PRAGMA user_version = {SCHEMA}")
        except (OSError, sqlite3.Error) as err:
            raise VaultError(f"cannot open the code index in {folder}: {err}") from err
        try:
            search = SearchIndex.open(folder / "search")
        except SearchIndexError:
            db.close()
            cls.delete(state_dir)
            return cls.open(state_dir)
        # A question about code ("where do we …") rarely has every word in one function: its
        # any-word search keeps all its words, not the memories' 3 rarest (measured on the
        # stdlib questions of bench_code.py: recall@5 0.37 → 0.60).
        search.any_term_limit = CODE_ANY_TERM_LIMIT
        # Code is found by its words and names; a memory's links to it come from the chunks
        # table. Extracting entities from every chunk was a tenth of a cold ingest.
        search.keeps_entities = False
        return cls(state_dir, search, db, fresh=fresh)

    @staticmethod
    def delete(state_dir: Path) -> None:
        """Remove the derived code index (registrations stay)."""
        shutil.rmtree(state_dir / CODE_DIR, ignore_errors=True)

    def close(self) -> None:
        self.search.close()
        self._db.close()

    def __enter__(self) -> CodeIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- registrations ------------------------------------------------------------

    def roots(self) -> list[CodeRoot]:
        return registered_roots(self.state_dir)

    @_guarded
    def chunk_count(self, root: str | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM chunks", []
        if root is not None:
            sql, args = sql + " WHERE root = ?", [root]
        return int(self._db.execute(sql, args).fetchone()[0])

    def remove(self, path: Path) -> tuple[CodeRoot, int]:
        """Unregister the root at `path` and drop its chunks; return it and how many went."""
        target = str(path.resolve())
        roots = self.roots()
        found = next((r for r in roots if r.path == target), None)
        if found is None:
            known = ", ".join(r.path for r in roots) or "none"
            raise InvalidInputError(
                f"{target} is not an ingested root (ingested: {known}); "
                "see them with `memstore ingest --list`"
            )
        with self.writing(), self._mutex:
            keys = [
                row[0]
                for row in self._db.execute("SELECT key FROM chunks WHERE root = ?", [target])
            ]
            keys += self.search.keys_with_prefix(f"{_root_id(target)}:")  # any a crash left
            self.search.apply([], sorted(set(keys)))
            with self._transaction():
                self._db.execute("DELETE FROM chunks WHERE root = ?", [target])
                self._db.execute("DELETE FROM files WHERE root = ?", [target])
                self._db.execute("DELETE FROM complete WHERE root = ?", [target])
                self._db.execute("DELETE FROM caught_up WHERE root = ?", [target])
            _write_roots(
                self.state_dir, [r for r in registered_roots(self.state_dir) if r.path != target]
            )
        return found, len(set(keys))

    # --- ingest -------------------------------------------------------------------

    def ingest(
        self,
        path: Path,
        workspace: str,
        *,
        dry_run: bool = False,
        progress: Progress | None = None,
        wait: float = LOCK_WAIT_S,
    ) -> IngestSummary:
        """Register `path` into `workspace` (unless `dry_run`) and bring its chunks up to date."""
        root = path.resolve()
        if not root.is_dir():
            raise InvalidInputError(f"{root} is not a folder; pass the folder of a source tree")
        roots = self.roots()
        known = next((r for r in roots if r.path == str(root)), None)
        if known is not None and known.workspace != workspace:
            raise InvalidInputError(
                f"{root} is ingested into workspace {known.workspace!r}, not {workspace!r}; "
                f"run `memstore ingest --remove {root}` first to move it"
            )
        started = time.perf_counter()
        with self.writing(wait):
            if not dry_run:
                self.refill(skip=str(root))
            walk = walk_sources(root, known=self._known(str(root)))
            summary = IngestSummary(str(root), workspace, dry_run=dry_run)
            self._bring_up_to_date(walk, workspace, summary, progress=progress)
            self._report_caught_up(str(root), summary, clear=not dry_run)
            if not dry_run and known is None:
                added = datetime.now(UTC).isoformat(timespec="seconds")
                current = registered_roots(self.state_dir)
                _write_roots(self.state_dir, [*current, CodeRoot(str(root), workspace, added)])
        summary.seconds = round(time.perf_counter() - started, 3)
        return summary

    def refresh(
        self, root: CodeRoot, *, wait: float = 0.0, refill: bool = True
    ) -> IngestSummary | None:
        """Bring one registered root up to date (after a change under it was seen); None
        when another writer holds the code index longer than `wait` seconds. Without
        `refill` (a reader's catch-up) a root not chunked whole is left alone, and so are
        the other roots: chunking a lost index again is a writer's work, minutes long."""
        started = time.perf_counter()
        try:
            with self.writing(wait):
                if refill:
                    self.refill()
                elif not self._is_complete(root.path):
                    return None
                summary = IngestSummary(root.path, root.workspace)
                walk = walk_sources(Path(root.path), known=self._known(root.path))
                changed = self._bring_up_to_date(walk, root.workspace, summary)
                if changed:  # the next `memstore ingest` of this root says they changed
                    with self._mutex, self._transaction():
                        self._db.executemany(
                            "INSERT OR IGNORE INTO caught_up VALUES (?, ?)",
                            [[root.path, path] for path in changed],
                        )
        except BusyError:
            return None
        summary.seconds = round(time.perf_counter() - started, 3)
        return summary

    @_guarded
    def _is_complete(self, root: str) -> bool:
        row = self._db.execute("SELECT 1 FROM complete WHERE root = ?", [root]).fetchone()
        return row is not None

    def _report_caught_up(self, root: str, summary: IngestSummary, *, clear: bool) -> None:
        """Put the files a running memstore chunked since the last ingest into `summary`."""
        with self._mutex:
            rows = self._db.execute(
                "SELECT path FROM caught_up WHERE root = ? ORDER BY path", [root]
            ).fetchall()
            if clear and rows:
                with self._transaction():
                    self._db.execute("DELETE FROM caught_up WHERE root = ?", [root])
        summary.already_chunked = len(rows)
        summary.already_chunked_paths = [row[0] for row in rows[:SHOWN_PATHS]]

    def refill(self, *, skip: str = "") -> list[IngestSummary]:
        """Chunk the registered roots this index does not hold whole (it was deleted, or a
        rebuild was killed midway); the writer lock held."""
        with self._mutex:
            done = {row[0] for row in self._db.execute("SELECT root FROM complete")}
        summaries = []
        for root in registered_roots(self.state_dir):
            if root.path in done or root.path == skip or not Path(root.path).is_dir():
                continue
            summary = IngestSummary(root.path, root.workspace)
            walk = walk_sources(Path(root.path), known=self._known(root.path))
            self._bring_up_to_date(walk, root.workspace, summary)
            summaries.append(summary)
        return summaries

    @_guarded
    def warm(self) -> None:
        """Load what a resident process keeps for its searches (the terms for typo walks)."""
        with contextlib.suppress(SearchIndexError):  # damaged: the next search says so
            self.search.load_terms()

    @_guarded
    def _known(self, root: str) -> dict[str, tuple[int, int]]:
        """The files of `root` as last read: path → (size, mtime_ns)."""
        rows = self._db.execute(
            "SELECT path, size, mtime_ns FROM files WHERE root = ? AND digest IS NOT NULL", [root]
        )
        return {path: (size, mtime) for path, size, mtime in rows}

    @contextlib.contextmanager
    def writing(self, wait: float = LOCK_WAIT_S) -> Iterator[None]:
        """Hold the code index's writer lock (`.memstore/code.lock`, re-entrant in this
        process); raise BusyError if another process keeps it over `wait` seconds."""
        if self._writer_depth:
            self._writer_depth += 1
            try:
                yield
            finally:
                self._writer_depth -= 1
            return
        handle = _lock_file(self.state_dir)
        try:
            deadline = time.monotonic() + wait
            while not _locked(handle):
                if time.monotonic() >= deadline:
                    holder = (self.state_dir / LOCK_FILE).read_text("utf-8", "replace").strip()
                    raise BusyError(
                        f"another memstore is writing the code index ({holder or 'unknown'}); "
                        "wait for it to finish, then run the command again"
                    )
                time.sleep(0.05)
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}".encode())
            handle.flush()
            self._writer_depth = 1
            try:
                yield
            finally:
                self._writer_depth = 0
        finally:
            handle.close()

    def _bring_up_to_date(
        self,
        walk: Walk,
        workspace: str,
        summary: IngestSummary,
        *,
        progress: Progress | None = None,
    ) -> list[str]:
        """Chunk what changed under the walked root; return the files whose chunks changed."""
        root = str(walk.root)
        summary.files_scanned = len(walk.files)
        summary.files_skipped = dict(walk.skipped)
        with self._mutex:
            seen = {
                row[0]: (row[1], row[2], row[3])
                for row in self._db.execute(
                    "SELECT path, size, mtime_ns, digest FROM files WHERE root = ?", [root]
                )
            }
            stored: dict[str, list[_Stored]] = defaultdict(list)
            for row in self._db.execute(
                "SELECT key, path, start, end_line, digest FROM chunks WHERE root = ?", [root]
            ):
                stored[row[1]].append(_Stored(*row))
        upserts: list[Document] = []
        new_keys: set[str] = set()
        deletes: list[str] = []
        chunk_rows: list[tuple[str | int, ...]] = []
        dropped_rows: list[str] = []
        file_rows: list[tuple[str, str, int, int, str]] = []
        dirty: list[str] = []  # files whose documents change: marked before they do
        suspect: dict[str, set[str]] = {}  # a file a killed run left dirty → its plan's keys
        now_ns = time.time_ns()
        listed = {f.path for f in walk.files}
        for done, source in enumerate(walk.files, 1):
            if progress is not None:
                progress(done, len(walk.files))
            before = seen.get(source.path)
            if before is not None and before[:2] == (source.size, source.mtime_ns):
                summary.unchanged += len(stored.get(source.path, ()))
                continue
            text = read_source(walk.root, source.path)
            summary.files_read += 1
            if text is None:  # became binary or too large, or went, since the walk
                summary.files_skipped["unreadable"] = summary.files_skipped.get("unreadable", 0) + 1
                listed.discard(source.path)
                continue
            digest = _digest(text)
            mtime = -1 if now_ns - source.mtime_ns < RACY_NS else source.mtime_ns
            file_rows.append((root, source.path, source.size, mtime, digest))
            if before is not None and before[2] == digest:
                summary.unchanged += len(stored.get(source.path, ()))
                continue
            was_dirty = before is not None and before[2] is None
            old = stored.get(source.path, [])
            plan = _match(root, source.path, chunk_source(source.path, text), old)
            dirty.append(source.path)
            if was_dirty:
                suspect[source.path] = {key for _, key, _ in plan.kept}
            for chunk, key, status in plan.kept:
                if status == "unchanged" and not was_dirty:
                    summary.unchanged += 1
                    continue
                if status == "created":
                    summary.created += 1
                    if not was_dirty:
                        new_keys.add(key)
                elif status == "updated":
                    summary.updated += 1
                else:
                    summary.unchanged += 1  # written again: the index may have lost it
                upserts.append(_document(key, workspace, source.path, chunk, root))
                chunk_rows.append(
                    (key, root, source.path, chunk.start, chunk.end, chunk.kind, chunk.name,
                     chunk.digest, workspace, _leaf(chunk.name), _base(source.path))
                )  # fmt: skip
            summary.removed += len(plan.gone)
            deletes += plan.gone
            dropped_rows += plan.gone
        gone_files = sorted(set(seen) - listed)
        for path in gone_files:
            summary.files_removed += 1
            gone = [s.key for s in stored.get(path, ())]
            summary.removed += len(gone)
            deletes += gone
            dropped_rows += gone
            dirty.append(path)
            if seen[path][2] is None:
                suspect[path] = set()
        if summary.dry_run:
            return dirty
        with self._mutex:
            if dirty:  # a kill from here on leaves these files to be read again, and checked
                with self._transaction():
                    self._db.executemany(
                        "INSERT OR REPLACE INTO files VALUES (?, ?, -1, -1, NULL)",
                        [[root, path] for path in dirty],
                    )
            for path, keys in suspect.items():  # documents a killed run wrote, unrecorded
                prefix = f"{_root_id(root)}:{path}#"
                deletes += [k for k in self.search.keys_with_prefix(prefix) if k not in keys]
            if upserts or deletes:
                deletes = sorted(set(deletes))
                if len(new_keys) < len(upserts):
                    self.search.apply(upserts, deletes, new=new_keys)
                else:  # all new (a cold ingest): the cores share its indexing
                    folder = self.search.root / "parts"
                    with shared(upserts, folder, SHARE_MIN) as (docs, parts):
                        self.search.apply(docs, deletes, new=new_keys, parts=parts)
            with self._transaction():
                self._db.executemany(
                    "DELETE FROM chunks WHERE key = ?", [[k] for k in dropped_rows]
                )
                self._db.executemany(
                    "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    chunk_rows,
                )
                self._db.executemany(
                    "DELETE FROM files WHERE root = ? AND path = ?", [[root, p] for p in gone_files]
                )
                self._db.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", file_rows
                )
                self._db.execute("INSERT OR IGNORE INTO complete VALUES (?)", [root])
        return dirty

    def rebuild(self, progress: Progress | None = None) -> list[IngestSummary]:
        """Chunk every registered root again into an empty index (for `memstore reindex`)."""
        with self.writing(), self._mutex:
            keys = [row[0] for row in self._db.execute("SELECT key FROM chunks")]
            keys += self.search.keys_with_prefix("")
            if keys:
                self.search.apply([], sorted(set(keys)))
            with self._transaction():
                self._db.execute("DELETE FROM chunks")
                self._db.execute("DELETE FROM files")
                self._db.execute("DELETE FROM complete")
            return self.refill()

    # --- search -------------------------------------------------------------------

    @_guarded
    def find(self, text: str, scope: set[str] | None, limit: int) -> list[Hit]:
        """Return the best chunks for `text` in `scope` (None: every workspace) as hits, by
        BM25 over any of the query's words (a hit lacking some is weak), tests after code.

        Not every word first, as memories are: a question about code rarely has all its
        words in one function, and a long chunk that happens to hold them all outranked
        the function asked for (bench_code's standard-library questions: recall@5 0.77 →
        0.82, and one search instead of two).
        """
        found = [
            _hit(hit)
            for hit in self.search.search(
                text,
                workspaces=scope,
                limit=limit * 3,  # room for the near-duplicates dropped below
                any_term=True,
                typos=True,
                coverage=True,
            )
        ]
        if not _asks_for_tests(text):  # "where do we …" wants the code, not its tests
            found.sort(key=lambda hit: _is_test(hit.path))  # stable: ranks kept
        return distinct(found, limit)

    @_guarded
    def listing(self, workspace: str | None, limit: int) -> tuple[list[dict[str, object]], int]:
        """Return the chunks (of one workspace, or all) by root, path and line, at most
        `limit` of them (0: all), and how many there are."""
        where, args = ("WHERE workspace = ?", [workspace]) if workspace else ("", [])
        total = int(self._db.execute(f"SELECT COUNT(*) FROM chunks {where}", args).fetchone()[0])
        rows = self._db.execute(
            f"SELECT path, start, end_line, kind, name, workspace, root FROM chunks {where} "
            "ORDER BY root, path, start, end_line" + (" LIMIT ?" if limit else ""),
            [*args, limit] if limit else args,
        ).fetchall()
        return [
            {"ref": f"{p}:{a}-{b}", "kind": k, "name": n, "workspace": w, "root": r}
            for p, a, b, k, n, w, r in rows
        ], total

    @_guarded
    def named(self, entities: Sequence[str], scope: set[str] | None, limit: int = 3) -> list[str]:
        """Return where the code a memory names is: `path:start-end` of the functions and
        classes it names (an identifier equal to a chunk's name or its last part), then the
        files it names (a path equal to a file's, or ending in it), at most `limit`."""
        names = sorted({e.lower() for e in entities if e})[:MAX_ENTITIES]
        if not names:
            return []
        marks = ", ".join("?" * len(names))
        found: list[str] = []
        rows = self._db.execute(
            f"SELECT path, start, end_line, workspace FROM chunks WHERE leaf IN ({marks}) "
            "ORDER BY path, start",
            names,
        ).fetchall()
        found += [f"{p}:{a}-{b}" for p, a, b, ws in rows if scope is None or ws in scope]
        bases = {PurePosixPath(n).name: n for n in names if "/" in n or "." in n}
        if bases:
            marks = ", ".join("?" * len(bases))
            files = self._db.execute(
                f"SELECT DISTINCT path, workspace FROM chunks WHERE base IN ({marks}) ORDER BY path",
                list(bases),
            ).fetchall()
            for path, ws in files:
                named = bases.get(_base(path), "")
                if (scope is None or ws in scope) and ("/" + path.lower()).endswith("/" + named):
                    found.append(path)
        return list(dict.fromkeys(found))[:limit]

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


@dataclass(frozen=True)
class _Plan:
    kept: list[tuple[Chunk, str, str]]  # chunk, key, "created" | "updated" | "unchanged"
    gone: list[str]  # keys of the file's old chunks it no longer has


def _match(root: str, path: str, chunks: list[Chunk], old: list[_Stored]) -> _Plan:
    """Pair a file's new chunks with its old ones by digest: same text, same key."""
    by_digest: dict[str, list[_Stored]] = defaultdict(list)
    for stored in sorted(old, key=lambda s: (s.start, s.end)):
        by_digest[stored.digest].append(stored)
    kept = []
    occurrences: Counter[str] = Counter()
    used = {s.key for s in old}
    for chunk in chunks:
        digest = chunk.digest
        candidates = by_digest.get(digest)
        if candidates:
            same = next(
                (s for s in candidates if (s.start, s.end) == (chunk.start, chunk.end)), None
            )
            stored = same or candidates[0]
            candidates.remove(stored)
            status = "unchanged" if same is not None else "updated"
            kept.append((chunk, stored.key, status))
            continue
        while True:  # a key not taken: the n-th chunk of this text in this file
            key = chunk_key(root, path, digest, occurrences[digest])
            occurrences[digest] += 1
            if key not in used:
                break
        used.add(key)
        kept.append((chunk, key, "created"))
    gone = [s.key for rest in by_digest.values() for s in rest]
    return _Plan(kept, gone)


def distinct(hits: Sequence[Hit], limit: int = 0) -> list[Hit]:
    """Keep each hit unless one ranked above it is the same code: byte-identical text, an
    overlapping line range of the same file, or near-identical text (word 3-shingles with
    Jaccard ≥ SAME_TEXT): a budget spent on one function twice tells the agent nothing.

    Stops once `limit` (0: no limit) are kept: comparing the hits no one will see was a
    fifth of a first-time code recall.
    """
    kept: list[Hit] = []
    seen: list[tuple[str, int, int, str, frozenset[str]]] = []
    for hit in hits:
        if limit and len(kept) >= limit:
            break
        path, start, end = _span(hit.path)
        body = hit.content.partition("\n")[2]
        shingles = _shingles(body)
        if any(
            body == other_body
            or (path == other and start <= other_end and other_start <= end)
            or _near_identical(shingles, other_shingles)
            for other, other_start, other_end, other_body, other_shingles in seen
        ):
            continue
        kept.append(hit)
        seen.append((path, start, end, body, shingles))
    return kept


_TEST_FOLDERS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs"})
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures"})


def _is_test(ref: str) -> bool:
    """Say whether a chunk is in a test file: a test folder, or a name as test runners
    find them (test_x.py, x_test.go, x.test.ts, x.spec.js, XTest.java)."""
    path = PurePosixPath(ref.rpartition(":")[0] or ref)
    if _TEST_FOLDERS & {part.lower() for part in path.parts[:-1]}:
        return True
    stem = path.name.split(".", 1)[0]
    return (
        stem.startswith("test_")
        or stem.endswith(("_test", "Test", "Tests"))
        or ".test." in path.name
        or ".spec." in path.name
    )


def _asks_for_tests(text: str) -> bool:
    return bool(_TEST_WORDS & {word.lower().strip("?.,!") for word in text.split()})


def _span(ref: str) -> tuple[str, int, int]:
    path, _, lines = ref.rpartition(":")
    first, _, last = lines.partition("-")
    try:
        return path, int(first), int(last)
    except ValueError:
        return ref, 0, -1


@functools.lru_cache(maxsize=4096)  # a resident index meets the same chunks again and again
def _shingles(text: str) -> frozenset[str]:
    words = text.split()
    return frozenset(" ".join(words[i : i + 3]) for i in range(max(len(words) - 2, 1)))


def _near_identical(a: frozenset[str], b: frozenset[str]) -> bool:
    """Say whether the Jaccard index of `a` and `b` is at least SAME_TEXT, without building
    their union: it is at most the smaller size over the larger, so most pairs of chunks
    are told apart by their sizes alone."""
    small, large = sorted((len(a), len(b)))
    if not small or small < SAME_TEXT * large:
        return False
    shared = len(a & b)
    return shared >= SAME_TEXT * (small + large - shared)


def fuse(memories: Sequence[Hit], code: Sequence[Hit], k: int) -> list[Hit]:
    """Rank memory and code hits together: memories holding every query word first, then
    the rest by reciprocal rank, 1 / (RRF_K + rank) in its own list (the two lists' BM25
    scores come from different indexes and do not compare), a memory before a chunk on a
    tie. The code keeps its own order (`CodeIndex.find`: a chunk lacking a word of the
    question is often the answer; moving those holding every word up put the right one
    first on 34 of bench_code's 60 standard-library questions, not 37)."""
    ranked = [
        (side == 1 or hit.weak, -1 / (RRF_K + rank), side, rank, hit)
        for side, hits in enumerate((memories, code))
        for rank, hit in enumerate(hits, 1)
    ]
    ranked.sort(key=lambda row: row[:4])
    return [row[4] for row in ranked[:k]]


def _hit(found: IndexHit) -> Hit:
    document = found.document
    ref, _, root = document.source.partition("\n")
    coverage = 1.0 if found.coverage is None else found.coverage
    # the label is "<ref> <kind>[ <name>]": a hit shows the path and name, not the prose
    name = document.content.partition("\n")[0].removeprefix(f"{ref} ").partition(" ")[2]
    return Hit(
        id=document.id,
        workspace=document.workspace,
        kind=KIND,
        path=ref,
        content=document.content,
        keywords=tuple(k for k in (ref.rpartition(":")[0], name) if k),
        source=root,
        created="",
        seen=1,
        score=found.score,
        weak=coverage < 1.0,
        coverage=coverage,
        view="lexical" if coverage >= 1.0 else "any-word",
    )


def chunk_key(root: str, path: str, digest: str, occurrence: int) -> str:
    """Name a chunk by its root, file and text (not its lines: a moved chunk keeps it)."""
    return f"{_root_id(root)}:{path}#{digest[:16]}.{occurrence}"


def _document(key: str, workspace: str, path: str, chunk: Chunk, root: str) -> Document:
    ref = f"{path}:{chunk.start}-{chunk.end}"
    label = " ".join(part for part in (ref, chunk.kind, chunk.name) if part)
    return Document(
        key=key,
        id=hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12],
        workspace=workspace,
        kind=KIND,
        # the path, kind and name are searched beside the code (localmind embeds the same),
        # and so are a definition's comments and docstrings (`prose`) once more: a module
        # chunk's are left to its text (they describe the whole file, and gave every
        # question about a file the code between its definitions: recall@5 0.77 → 0.75)
        content=f"{label}\n{chunk.text}",
        keywords=tuple(
            k for k in (path, chunk.name, "" if chunk.kind == "module" else prose(chunk)) if k
        ),
        source=f"{ref}\n{root}",
        hash=chunk.digest,
    )


class BusyError(VaultError):
    """Another process is writing the code index."""


def _lock_file(state_dir: Path) -> BinaryIO:
    try:
        return open(state_dir / LOCK_FILE, "a+b")
    except OSError as err:
        raise VaultError(f"cannot create {state_dir / LOCK_FILE}: {err.strerror}") from err


def _locked(handle: BinaryIO) -> bool:
    try:
        return try_flock(handle)  # the vault lock's own
    except OSError as err:
        raise VaultError(f"cannot lock the code index: {err.strerror}") from err


def _identity(state_dir: Path) -> tuple[int, int] | None:
    try:
        info = (state_dir / CODE_DIR / "state.sqlite").stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower()


def _base(path: str) -> str:
    return PurePosixPath(path).name.lower()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _root_id(root: str) -> str:
    return hashlib.sha256(root.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def registered_roots(state_dir: Path) -> list[CodeRoot]:
    """Return the roots registered in a vault (none when nothing was ever ingested)."""
    try:
        raw = (state_dir / ROOTS_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as err:
        raise VaultError(f"cannot read {state_dir / ROOTS_FILE}: {err.strerror}") from err
    try:
        rows = json.loads(raw)
        return [
            CodeRoot(str(r["path"]), str(r["workspace"]), str(r.get("added", ""))) for r in rows
        ]
    except (ValueError, TypeError, KeyError) as err:
        raise VaultError(
            f"{state_dir / ROOTS_FILE} is not a list of roots ({err}); fix or delete it, "
            "then `memstore ingest PATH` each source tree again"
        ) from err


def _write_roots(state_dir: Path, roots: list[CodeRoot]) -> None:
    target = state_dir / ROOTS_FILE
    scratch = target.with_name(f".{ROOTS_FILE}.tmp")
    try:
        scratch.write_text(json.dumps([asdict(r) for r in roots], indent=2) + "\n", "utf-8")
        os.replace(scratch, target)
    except OSError as err:
        raise VaultError(f"cannot write {target}: {err.strerror}") from err


def _create_tables(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS files (root TEXT, path TEXT, size INTEGER, "
        "mtime_ns INTEGER, digest TEXT, PRIMARY KEY (root, path))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS chunks (key TEXT PRIMARY KEY, root TEXT, path TEXT, "
        "start INTEGER, end_line INTEGER, kind TEXT, name TEXT, digest TEXT, workspace TEXT, "
        "leaf TEXT, base TEXT)"  # leaf, base: the name's last part and the file's, lowercase
    )
    db.execute("CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks (root, path)")
    # the roots chunked whole: one a killed run left midway is not here, so it is redone
    db.execute("CREATE TABLE IF NOT EXISTS complete (root TEXT PRIMARY KEY)")
    # files a refresh (not an ingest) chunked again, until the next ingest of the root says so
    db.execute(
        "CREATE TABLE IF NOT EXISTS caught_up (root TEXT, path TEXT, PRIMARY KEY (root, path))"
    )
    db.execute("CREATE INDEX IF NOT EXISTS chunks_by_leaf ON chunks (leaf)")
    db.execute("CREATE INDEX IF NOT EXISTS chunks_by_base ON chunks (base)")


def ingested(state_dir: Path) -> bool:
    """Say whether a vault has any registered root (else no code index is opened)."""
    return (state_dir / ROOTS_FILE).is_file() and bool(registered_roots(state_dir))


__all__ = [
    "CODE_DIR",
    "KIND",
    "CodeIndex",
    "CodeRoot",
    "IngestSummary",
    "chunk_key",
    "distinct",
    "fuse",
    "ingested",
    "registered_roots",
]
