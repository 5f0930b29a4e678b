"""Source trees ingested as code chunks: derived from the code, never copied into the vault.

A person registers a root (a folder, usually a git repository) into a workspace; its files
are cut into chunks (memstore/catalog/chunking.py) and indexed in a search index of their own
under `.memstore/code/`, beside the memories' index and as disposable as it: `memstore
reindex` deletes it and chunks every registered root again. The registrations themselves
(`.memstore/code-roots.json`) are local state a person lists and removes; they are never
committed, since a root's path means nothing on another machine.

Re-ingesting costs what changed: the plan of a root's changes is made in
memstore/catalog/code_changes.py (the catch-up planner, memstore/catalog/plan.py, applied
to source files), recorded in its manifest (code_manifest.py), under the writer lock
(code_roots.py); code hits are ranked in code_hits.py.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from memstore.catalog.code_changes import (
    SHOWN_PATHS,
    Changes,
    IngestSummary,
    chunk_key,
    plan_root,
    root_id,
)
from memstore.catalog.code_evidence import definition_names, identifiers, read_question
from memstore.catalog.code_hits import KIND, Similarity, distinct, fuse, ranked
from memstore.catalog.code_manifest import CodeManifest, OtherLayoutError, schema
from memstore.catalog.code_roots import (
    LOCK_FILE,
    LOCK_WAIT_S,
    ROOTS_FILE,
    BusyError,
    CodeRoot,
    WriterLock,
    ingested,
    registered_roots,
    write_roots,
)
from memstore.catalog.manifest import file_identity
from memstore.catalog.sources import Walk, walk_sources
from memstore.core.errors import InvalidInputError, VaultError
from memstore.core.model import Hit
from memstore.index import SearchIndex, SearchIndexError, shared

CODE_DIR = "code"  # .memstore/code/: the chunks' search index and what was read
CODE_ANY_TERM_LIMIT = 100
# Candidates read per hit asked for, then ranked by their evidence: the answer to a question
# was among the first 15 BM25 hits (k=5) for 0.88 / 0.87 of two question sets, the first 30
# for 0.90 / 0.88 (docs/code.md, "Confidence").
CANDIDATES = 3
SHARE_MIN = 2000  # chunks per process before a cold ingest's indexing is shared by cores
MAX_ENTITIES = 20  # a memory's entities looked up for the code it names
Progress = Callable[[int, int], None]
F = TypeVar("F", bound=Callable[..., Any])


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
        self, state_dir: Path, search: SearchIndex, db: CodeManifest, *, fresh: bool
    ) -> None:
        self.state_dir = state_dir
        self.search = search
        self.fresh = fresh  # made just now: registered roots have no chunks here yet
        self._db = db
        self._identity = db.identity()
        # Readers (search) and the short writing steps of one process take turns here; the
        # walk and the chunking of an ingest run outside it, under the writer lock only.
        self._mutex = threading.RLock()
        self._writer = WriterLock(state_dir)

    def is_replaced(self) -> bool:
        """Say whether another process deleted or rebuilt this code index since it was
        opened (`memstore reindex`): its files are then no longer the ones on disk."""
        return file_identity(self.state_dir / CODE_DIR / "state.sqlite") != self._identity

    @classmethod
    def open(cls, state_dir: Path) -> CodeIndex:
        """Open (creating) the code index under a vault's `.memstore/`; a damaged one is
        deleted and made afresh (it is derived: `memstore ingest` or `reindex` refills it)."""
        folder = state_dir / CODE_DIR
        fresh = not (folder / "state.sqlite").is_file()
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            db = CodeManifest.open(
                folder / "state.sqlite", schema(fresh), wal=False, read_only=False
            )
        except OtherLayoutError:  # it is a cache: start over
            cls.delete(state_dir)
            return cls.open(state_dir)
        except (OSError, SearchIndexError) as err:
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
            keys += self.search.keys_with_prefix(f"{root_id(target)}:")  # any a crash left
            self.search.apply([], sorted(set(keys)))
            self._db.forget(target)
            write_roots(
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
                write_roots(self.state_dir, [*current, CodeRoot(str(root), workspace, added)])
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
                    with self._mutex, self._db.transaction() as db:
                        db.executemany(
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
                with self._db.transaction() as db:
                    db.execute("DELETE FROM caught_up WHERE root = ?", [root])
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
        return self._db.known(root)

    def writing(self, wait: float = LOCK_WAIT_S) -> contextlib.AbstractContextManager[None]:
        """Hold the code index's writer lock (`.memstore/code.lock`, re-entrant in this
        process); raise BusyError if another process keeps it over `wait` seconds."""
        return self._writer.held(wait)

    def _bring_up_to_date(
        self,
        walk: Walk,
        workspace: str,
        summary: IngestSummary,
        *,
        progress: Progress | None = None,
    ) -> list[str]:
        """Chunk what changed under the walked root; return the files whose chunks changed."""
        summary.files_scanned = len(walk.files)
        summary.files_skipped = dict(walk.skipped)
        with self._mutex:
            seen, stored = self._db.seen(str(walk.root)), self._db.stored(str(walk.root))
        changes = plan_root(walk, workspace, summary, seen, stored, progress, time.time_ns())
        if not summary.dry_run:
            with self._mutex:
                self._write(changes)
        return changes.dirty

    def _write(self, changes: Changes) -> None:
        """Write a root's planned changes: dirty files marked, the index, the manifest."""
        root, deletes = changes.root, list(changes.deletes)
        if changes.dirty:  # a kill from here on leaves these files to be read again, and checked
            self._db.mark_dirty(root, changes.dirty)
        for path, keys in changes.suspect.items():  # documents a killed run wrote, unrecorded
            prefix = f"{root_id(root)}:{path}#"
            deletes += [k for k in self.search.keys_with_prefix(prefix) if k not in keys]
        if changes.upserts or deletes:
            deletes = sorted(set(deletes))
            if len(changes.new_keys) < len(changes.upserts):
                self.search.apply(changes.upserts, deletes, new=changes.new_keys)
            else:  # all new (a cold ingest): the cores share its indexing
                folder = self.search.root / "parts"
                with shared(changes.upserts, folder, SHARE_MIN) as (docs, parts):
                    self.search.apply(docs, deletes, new=changes.new_keys, parts=parts)
        self._db.record(changes)

    def rebuild(self, progress: Progress | None = None) -> list[IngestSummary]:
        """Chunk every registered root again into an empty index (for `memstore reindex`)."""
        with self.writing(), self._mutex:
            keys = [row[0] for row in self._db.execute("SELECT key FROM chunks")]
            keys += self.search.keys_with_prefix("")
            if keys:
                self.search.apply([], sorted(set(keys)))
            self._db.forget(None)
            return self.refill()

    # --- search -------------------------------------------------------------------

    @_guarded
    def find(
        self, text: str, scope: set[str] | None, limit: int, similar: Similarity | None = None
    ) -> list[Hit]:
        """Return the best chunks for `text` in `scope` (None: every workspace) as hits, by
        BM25 over any of the query's words and the evidence of each (code_hits.py), tests
        after code; the first one confident (not weak) only when its evidence is strong;
        weak ones ordered again with `similar`'s opinion when given (code_semantic.py).

        Not every word first, as memories are: a question about code rarely has all its
        words in one function, and a long chunk that happens to hold them all outranked
        the function asked for (bench_code's standard-library questions: recall@5 0.77 →
        0.82, and one search instead of two).
        """
        search = self.search
        found = search.search(
            text,
            workspaces=scope,
            limit=limit * CANDIDATES,  # reranked by evidence, near-duplicates dropped
            any_term=True,
            typos=True,
            coverage=True,
        )
        names = definition_names(identifiers(text))
        named = (
            search.search(  # the definitions it names as code: "urlsplit" of `urllib.parse.urlsplit`
                " ".join(names),
                workspaces=scope,
                limit=limit * CANDIDATES,
                any_term=len(names) > 1,  # each name's parts together: a short search
            )
            if names
            else []
        )
        if not found and not named:
            return []
        question = read_question(text, search.term_frequencies(text), search.document_count())
        return ranked(found, text, limit, question, named, similar)

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
                named = bases.get(PurePosixPath(path).name.lower(), "")
                if (scope is None or ws in scope) and ("/" + path.lower()).endswith("/" + named):
                    found.append(path)
        return list(dict.fromkeys(found))[:limit]


__all__ = [
    "CODE_DIR",
    "KIND",
    "LOCK_FILE",
    "ROOTS_FILE",
    "BusyError",
    "CodeIndex",
    "CodeRoot",
    "IngestSummary",
    "chunk_key",
    "distinct",
    "fuse",
    "ingested",
    "registered_roots",
]
