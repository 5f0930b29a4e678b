"""A manifest: the sqlite table of what a derived index was built from, beside that index.

Both derived stores keep one (the memories' `index/manifest.sqlite`, the code's
`code/state.sqlite`), each with its own tables; this owns what they share: opening (WAL,
no fsync per write: it is a cache), one transaction at a time, and turning what sqlite
raises into SearchIndexError, which the owner heals by rebuilding.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Self

from memstore.index import SearchIndexError, connect_read_only

Schema = Callable[[sqlite3.Connection], None]


class Manifest:
    """One sqlite manifest: queries, writes in one transaction, and its file's identity."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path

    @classmethod
    def open(cls, path: Path, schema: Schema, *, wal: bool = True, read_only: bool = True) -> Self:
        """Open (creating if missing) the manifest at `path` and its tables (`schema` may
        raise to refuse it: the connection is closed). With `read_only`, one in a folder
        that cannot be written is opened read-only (a read-only vault can still be searched).

        Raises:
            SearchIndexError: it cannot be opened (damaged, or not a database).
        """
        if read_only and path.is_file() and not os.access(path.parent, os.W_OK):
            try:
                return cls(connect_read_only(path), path)
            except sqlite3.Error as err:
                raise SearchIndexError(f"manifest at {path} cannot be opened ({err})") from err
        try:  # one connection serves a store's threads, one at a time
            db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as err:
            raise SearchIndexError(f"manifest at {path} cannot be opened ({err})") from err
        try:
            if wal:
                db.execute("PRAGMA journal_mode=WAL")
                # A cache: a power cut may lose the last commit (the count check then
                # rebuilds), never corrupt it; a killed process loses nothing. Saves an
                # fsync per write.
                db.execute("PRAGMA synchronous=NORMAL")
            schema(db)
        except sqlite3.Error as err:
            db.close()
            raise SearchIndexError(f"manifest at {path} cannot be opened ({err})") from err
        except BaseException:
            db.close()
            raise
        return cls(db, path)

    def close(self) -> None:
        self.db.close()

    def query(self, sql: str, args: Iterable[object] = ()) -> list[tuple[Any, ...]]:
        """Run a query; damage (or any sqlite failure) becomes SearchIndexError."""
        try:
            return self.db.execute(sql, list(args)).fetchall()
        except sqlite3.Error as err:
            raise SearchIndexError(f"the manifest at {self.path} cannot be read ({err})") from err

    def execute(self, sql: str, args: Iterable[object] = ()) -> sqlite3.Cursor:
        """Run one statement as it is (sqlite's own errors pass through)."""
        return self.db.execute(sql, list(args))

    def executemany(self, sql: str, rows: Iterable[Any]) -> None:
        self.db.executemany(sql, rows)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Write in one transaction (BEGIN IMMEDIATE: one writer at a time), rolled back on
        any failure; what sqlite raises becomes SearchIndexError."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as err:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise SearchIndexError(f"manifest at {self.path} cannot be written ({err})") from err

    def identity(self) -> tuple[int, int] | None:
        """Return the (device, inode) of the manifest's file, None when there is none: another
        process's rebuild puts a new file there."""
        return file_identity(self.path)


def file_identity(path: Path) -> tuple[int, int] | None:
    """Return the (device, inode) of the file at `path`, None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino
