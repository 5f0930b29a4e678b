"""The memories' manifest: what each indexed memory file was, its links and folders.

For each file: its fingerprint, id, hash and counters; the `supersedes` links between
memories; the folders a catch-up listed, with their modification times; and the files read
within their racy window (`racy`: catalog/plan.py), which the next catch-up reads again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstore.catalog.manifest import Manifest
from memstore.index import SearchIndexError, roomy_cache
from memstore.vault.files import Fingerprint

FORMAT = (
    "14"  # bump when documents, the schema or the analysis change: a mismatched index is rebuilt
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ROW_COLUMNS = (
    "id, workspace, hash, problem, kind, supersedes, created, seen, recalled, "
    "last_recalled, confirmed, archived, cites, session"
)
_ENTRY_COLUMNS = f"path, {_ROW_COLUMNS}"


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
    # its citations as catalog/staleness.py stores them (JSON; "" when it cites nothing)
    cites: str = ""
    session: str = ""  # the agent session that wrote it ('' unknown: front matter `session`)


@dataclass(frozen=True)
class Folders:
    """Folder modification times a catch-up saw, for the manifest's `folders` table."""

    mtimes: dict[str, int]
    gone: tuple[str, ...] = ()  # folders to forget, with everything under them
    replaced: str | None = None  # a subtree listed whole ('' the vault): its rows start anew


def _entry(row: tuple[Any, ...]) -> Entry:
    path, memory_id, workspace, hash, problem, kind, supersedes, *counters = row
    created, seen, recalled, last_recalled, confirmed, archived, cites, session = counters
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
        cites or "",
        session or "",
    )


class MemoryManifest(Manifest):
    """The manifest of the memories' index (`index/manifest.sqlite`)."""

    def meta(self, name: str) -> str | None:
        rows = self.query("SELECT value FROM meta WHERE name = ?", [name])
        return None if not rows else str(rows[0][0])

    def count(self) -> int:
        return int(self.query("SELECT COUNT(*) FROM files")[0][0])

    def is_empty(self) -> bool:
        return not self.query("SELECT 1 FROM files LIMIT 1")

    def entries(self, where: str = "1 = 1", args: Iterable[str] = ()) -> list[Entry]:
        """Return the entries matching an SQL condition, by path."""
        rows = self.query(f"SELECT {_ENTRY_COLUMNS} FROM files WHERE {where} ORDER BY path", args)
        return [_entry(row) for row in rows]

    def by_path(self, paths: list[str], batch: int = 500) -> list[Entry]:
        """Return the entries among `paths`, asked `batch` at a time (sqlite's variables)."""
        found: list[Entry] = []
        for start in range(0, len(paths), batch):
            some = paths[start : start + batch]
            found += self.entries(f"path IN ({','.join('?' * len(some))})", some)
        return found

    def held_ids(self, ids: Iterable[str], batch: int = 500) -> set[str]:
        """Return which of `ids` a file holds (the id index, `batch` ids a query)."""
        wanted, found = sorted(ids), set()
        for start in range(0, len(wanted), batch):
            some = wanted[start : start + batch]
            marks = ",".join("?" * len(some))
            found |= {
                str(r[0]) for r in self.query(f"SELECT id FROM files WHERE id IN ({marks})", some)
            }
        return found

    def by_id_prefix(self, prefix: str) -> list[Entry]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        # The range lets sqlite use the id index (LIKE alone reads every row: 50 ms at
        # 100,000); ids are stored lowercase, and LIKE folds ASCII case only.
        low = prefix.translate(_ASCII_LOWER)
        return self.entries(
            "id >= ? AND id < ? AND id LIKE ? ESCAPE '\\'", [low, f"{low}\U0010ffff", f"{escaped}%"]
        )

    def beside(self, entry: Entry, since: str, until: str) -> list[str]:
        """Return the paths of the memories written just before and just after `entry` in
        its session (in `created` order, then by path), each created between `since` and
        `until`; none when it records no session."""
        if not entry.session:
            return []
        found = []
        for compare, order, bound in (("<", "DESC", ">= ?"), (">", "ASC", "<= ?")):
            rows = self.query(
                "SELECT path FROM files WHERE session = ? AND session != '' "
                f"AND (created, path) {compare} (?, ?) AND created {bound} "
                f"ORDER BY created {order}, path {order} LIMIT 1",
                [entry.session, entry.created, entry.path, since if order == "DESC" else until],
            )
            found += [str(row[0]) for row in rows]
        return found

    def citing(self) -> list[Entry]:
        """Return the entries of the memories that cite code (their `cites` column set)."""
        return self.entries("cites != ''")

    def problems(self) -> list[tuple[str, str]]:
        return [
            (path, problem)
            for path, problem in self.query(
                "SELECT path, problem FROM files WHERE problem != '' ORDER BY path"
            )
        ]

    def fingerprints(self, workspace: str | None = None) -> dict[str, Fingerprint]:
        """Return the recorded files (of `workspace`, or all): path → (mtime_ns, size)."""
        if workspace is None:
            rows = self.query("SELECT path, mtime_ns, size FROM files")
        else:
            rows = self.query(
                "SELECT path, mtime_ns, size FROM files WHERE workspace = ?", [workspace]
            )
        return {path: (mtime, size) for path, mtime, size in rows}

    def changed_among(self, root: Path, paths: Iterable[str]) -> list[str]:
        """Return those of `paths` whose file under `root` is not as recorded (rewritten
        in place, removed): a one-shot search's look at its hits when the comparison of
        every file was left to the daemon it starts (docs/search.md, rule 1)."""
        changed = []
        for path in dict.fromkeys(paths):
            rows = self.query("SELECT mtime_ns, size FROM files WHERE path = ?", [path])
            try:
                info = (root / path).stat()
            except OSError:
                changed.append(path)
                continue
            if [(info.st_mtime_ns, info.st_size)] != [tuple(row) for row in rows]:
                changed.append(path)
        return changed

    def racy_among(self, paths: list[str]) -> list[str]:
        """Return those of `paths` read within their racy window (see `racy`)."""
        if not paths:
            return []
        marks = ",".join("?" * len(paths))
        try:
            rows = self.execute(f"SELECT path FROM racy WHERE path IN ({marks})", paths)
            return sorted(str(row[0]) for row in rows.fetchall())
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):  # an older manifest opened read-only
                return []
            raise SearchIndexError(f"the manifest at {self.path} cannot be read ({err})") from err
        except sqlite3.Error as err:
            raise SearchIndexError(f"the manifest at {self.path} cannot be read ({err})") from err

    def rows_of(self, paths: list[str]) -> dict[str, tuple[object, ...]]:
        """Return the rows of those of `paths` recorded, after each one's path and
        fingerprint (as `reading.manifest_row` makes them)."""
        found: dict[str, tuple[object, ...]] = {}
        for start in range(0, len(paths), 500):
            some = paths[start : start + 500]
            marks = ",".join("?" * len(some))
            query = f"SELECT path, {_ROW_COLUMNS} FROM files WHERE path IN ({marks})"
            found.update((row[0], tuple(row[1:])) for row in self.query(query, some))
        return found

    def racy(self, workspace: str | None) -> set[str]:
        """Return the files (of `workspace`, or all) read within their racy window: the
        next catch-up reads them again (a manifest an older memstore made has none)."""
        query, args = "SELECT path FROM racy", []
        if workspace is not None:
            query, args = f"{query} WHERE path >= ? AND path < ?", list(subtree(workspace))
        try:
            rows = self.execute(query, args).fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):  # an older manifest opened read-only
                return set()
            raise SearchIndexError(f"the manifest at {self.path} cannot be read ({err})") from err
        except sqlite3.Error as err:
            raise SearchIndexError(f"the manifest at {self.path} cannot be read ({err})") from err
        return {str(row[0]) for row in rows}

    def paths(self, workspace: str | None = None) -> Iterator[str]:
        """Yield the recorded files (of `workspace`, or all), a row at a time."""
        where, args = ("", []) if workspace is None else (" WHERE workspace = ?", [workspace])
        try:
            for (path,) in self.execute(f"SELECT path FROM files{where}", args):
                yield path
        except sqlite3.Error as err:
            raise SearchIndexError(f"the manifest at {self.path} cannot be read ({err})") from err

    def folders(self, workspace: str | None) -> dict[str, int]:
        """Return the folders (of `workspace`, or all) with the mtime they were listed at."""
        if workspace is None:
            rows = self.query("SELECT path, mtime_ns FROM folders")
        else:
            low, high = subtree(workspace)
            rows = self.query(
                "SELECT path, mtime_ns FROM folders WHERE path = ? OR (path >= ? AND path < ?)",
                [workspace, low, high],
            )
        return {path: mtime for path, mtime in rows}

    def fingerprints_in(self, listed: Iterable[str], gone: Iterable[str]) -> dict[str, Fingerprint]:
        """Return the recorded files directly in `listed` folders and anywhere under `gone`."""
        found: dict[str, Fingerprint] = {}
        for folder, whole in [*((f, False) for f in listed), *((f, True) for f in gone)]:
            if not folder:
                continue  # the vault's own folder holds no memories
            low, high = subtree(folder)
            query = "SELECT path, mtime_ns, size FROM files WHERE path >= ? AND path < ?"
            if not whole:
                # direct children only, chosen by sqlite: a workspace folder listed again
                # (a month folder made in it) would otherwise fetch its whole subtree, ~20k
                # rows at 100k memories, on every add until the folder settles
                query += " AND instr(substr(path, ?), '/') = 0"
            rows = self.query(query, [low, high] if whole else [low, high, len(low) + 1])
            found.update((path, (mtime, size)) for path, mtime, size in rows)
        return found

    def write(
        self,
        rows: list[tuple[object, ...]],
        removed: list[str],
        folders: Folders,
        meta: dict[str, str],
        *,
        racy: Iterable[str] = (),
        settled: Iterable[str] = (),
    ) -> None:
        """Record indexed files (`rows`, in the table's column order) and forget `removed`,
        with the folders listed and `meta`, in one transaction. `racy`: files of `rows`
        read within their racy window (read again by the next catch-up); `settled`: files
        read again and found as indexed, no longer racy."""
        with roomy_cache(self.db, len(rows) + len(removed)), self.transaction() as db:
            db.executemany("DELETE FROM files WHERE path = ?", [[p] for p in removed])
            if db.execute("SELECT 1 FROM racy LIMIT 1").fetchone():  # a rebuild: ~0.7 s at 1M
                done = [[p] for p in [*removed, *(row[0] for row in rows), *settled]]
                db.executemany("DELETE FROM racy WHERE path = ?", done)
            db.executemany("INSERT OR REPLACE INTO racy VALUES (?)", [[p] for p in racy])
            db.executemany(
                "INSERT OR REPLACE INTO files VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            touched = [[p] for p in [*removed, *(row[0] for row in rows)]]
            db.executemany("DELETE FROM links WHERE path = ?", touched)
            links = [(old, row[0]) for row in rows for old in str(row[8]).split()]
            db.executemany("INSERT INTO links VALUES (?, ?)", links)
            _write_folders(db, folders)
            meta = {**meta, "format": FORMAT}
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(meta.items()))


def _write_folders(db: sqlite3.Connection, folders: Folders) -> None:
    if folders.replaced == "":
        db.execute("DELETE FROM folders")
    for folder in [*folders.gone, *([folders.replaced] if folders.replaced else [])]:
        db.execute("DELETE FROM folders WHERE path = ?", [folder])
        db.execute("DELETE FROM folders WHERE path >= ? AND path < ?", list(subtree(folder)))
    db.executemany("INSERT OR REPLACE INTO folders VALUES (?, ?)", sorted(folders.mtimes.items()))


def subtree(folder: str) -> tuple[str, str]:
    """Return the bounds of the paths under a folder, for a range query ('0' follows '/')."""
    return f"{folder}/", f"{folder}0"


class OutdatedManifestError(SearchIndexError):
    """The manifest was written by another memstore version: its index is replaced, not kept
    aside as damaged (catalog/recovery.py)."""


def create_tables(db: sqlite3.Connection) -> None:
    _refuse_another_format(db)
    db.execute(
        "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER, "
        "size INTEGER, id TEXT, workspace TEXT, hash TEXT, problem TEXT, kind TEXT, "
        "supersedes TEXT, created TEXT, seen INTEGER, recalled INTEGER, "
        "last_recalled TEXT, confirmed INTEGER, archived TEXT, cites TEXT, session TEXT)"
    )
    # a session's memories in the order they were written (catalog/sessions.py)
    db.execute(
        "CREATE INDEX IF NOT EXISTS files_session ON files (session, created, path) "
        "WHERE session != ''"
    )
    db.execute("CREATE INDEX IF NOT EXISTS files_id ON files (id)")
    db.execute("CREATE TABLE IF NOT EXISTS links (old TEXT, path TEXT)")
    db.execute("CREATE INDEX IF NOT EXISTS links_old ON links (old)")
    db.execute("CREATE INDEX IF NOT EXISTS links_path ON links (path)")
    db.execute("CREATE INDEX IF NOT EXISTS files_kind ON files (kind)")
    db.execute("CREATE INDEX IF NOT EXISTS files_hash ON files (workspace, hash)")
    db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mtime_ns INTEGER)")
    # files read within their racy window (catalog/plan.py): added without a format change,
    # an older manifest gains it empty
    db.execute("CREATE TABLE IF NOT EXISTS racy (path TEXT PRIMARY KEY)")


def _refuse_another_format(db: sqlite3.Connection) -> None:
    """Raise OutdatedManifestError for a manifest another FORMAT wrote, before this schema
    meets its tables: an older one lacks columns this one indexes (format 11 had no
    `session`), which failed as "no such column" and kept the old index aside as damage."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        row = db.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
        if row is not None and row[0] != FORMAT:
            raise OutdatedManifestError(f"format {row[0]}, this memstore's is {FORMAT}")
