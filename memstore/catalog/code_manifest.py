"""The code index's manifest (`code/state.sqlite`): the files read and their chunks.

Also the roots chunked whole, and the files a running memstore chunked since the root's
last ingest (the next ingest reports them).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable

from memstore.catalog.code_changes import Changes, Seen, Stored
from memstore.catalog.manifest import Manifest

# state.sqlite's layout and what a chunk's document holds (3: its prose, `prose`; 4: the
# search index's `exact` field; 5: irregular verbs read as their base, index/inflections.py;
# 6: ß folded to ss and ligatures spelled out, index/analysis.py's accent_map; 7: a
# camelCase identifier with accents or ligatures split into its parts as its folded spelling
# is), as PRAGMA user_version: a code index of another one is rebuilt
SCHEMA = 7


class OtherLayoutError(Exception):
    """The manifest was written by another layout (SCHEMA): the code index starts over."""


def schema(fresh: bool) -> Callable[[sqlite3.Connection], None]:
    """Return the manifest's tables' creation; it refuses a manifest of another layout."""

    def create(db: sqlite3.Connection) -> None:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if not fresh and version != SCHEMA:  # another layout: it is a cache, start over
            raise OtherLayoutError(version)
        _create_tables(db)
        db.execute(f"PRAGMA user_version = {SCHEMA}")

    return create


class CodeManifest(Manifest):
    """What the code index was built from."""

    def known(self, root: str) -> dict[str, tuple[int, int]]:
        """The files of `root` as last read: path → (size, mtime_ns)."""
        rows = self.execute(
            "SELECT path, size, mtime_ns FROM files WHERE root = ? AND digest IS NOT NULL", [root]
        )
        return {path: (size, mtime) for path, size, mtime in rows}

    def seen(self, root: str) -> dict[str, Seen]:
        """The files of `root` as recorded: path → (size, mtime_ns, digest)."""
        rows = self.execute("SELECT path, size, mtime_ns, digest FROM files WHERE root = ?", [root])
        return {row[0]: (row[1], row[2], row[3]) for row in rows}

    def stored(self, root: str) -> dict[str, list[Stored]]:
        """The chunks of `root`'s files: path → its chunks."""
        stored: dict[str, list[Stored]] = defaultdict(list)
        for row in self.execute(
            "SELECT key, path, start, end_line, digest FROM chunks WHERE root = ?", [root]
        ):
            stored[row[1]].append(Stored(*row))
        return stored

    def mark_dirty(self, root: str, paths: list[str]) -> None:
        """Mark files whose documents are about to change: a kill from here on leaves them
        to be read again, and checked."""
        with self.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, -1, -1, NULL)",
                [[root, path] for path in paths],
            )

    def record(self, changes: Changes) -> None:
        """Record a root's changes once the index holds them; the root is now complete."""
        root = changes.root
        with self.transaction() as db:
            db.executemany("DELETE FROM chunks WHERE key = ?", [[k] for k in changes.dropped_rows])
            db.executemany(
                "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                changes.chunk_rows,
            )
            db.executemany(
                "DELETE FROM files WHERE root = ? AND path = ?",
                [[root, p] for p in changes.gone_files],
            )
            db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", changes.file_rows)
            db.execute("INSERT OR IGNORE INTO complete VALUES (?)", [root])

    def forget(self, root: str | None) -> None:
        """Forget one root's files and chunks (None: every root's)."""
        tables = ("chunks", "files", "complete") + (("caught_up",) if root is not None else ())
        with self.transaction() as db:
            for table in tables:
                if root is None:
                    db.execute(f"DELETE FROM {table}")
                else:
                    db.execute(f"DELETE FROM {table} WHERE root = ?", [root])


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
