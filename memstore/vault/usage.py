"""Usage counters between syncs: recalls counted locally, written to the files in batches.

Recall is read-only with respect to git: each recall adds a row here (sqlite under
.memstore/, outside git), and a flush turns the pending counts into `recalled` /
`last_recalled` in the memory files with one commit. The periodic flush runs at most once
per flush interval and skips a file written within one (by sync), so each file is written
at most once per interval (`due`).
A flush marks what it is about to write (`mark`: each memory's share before and the count
it adds) before it touches a file, so a flush killed anywhere neither loses a count nor
counts one twice (`settle`). Deleting .memstore/ loses only counts not yet flushed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path

from memstore.core.errors import VaultError

# A file's counters reach it at most once an hour (docs/benchmarks.md, "Recall counters"):
# ranking reads them on a scale of days (stability 60 days × …), git keeps every version.
FLUSH_EVERY_S = 3600.0


class Usage:
    """Pending recall counts per memory id, and when each file was last written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                db = sqlite3.connect(
                    self.path, timeout=10, isolation_level=None, check_same_thread=False
                )
                db.execute("PRAGMA journal_mode=WAL")
                # Counters, not text: skipping the fsync per recall keeps recall fast; a power
                # cut can lose the last few counts, never a memory (a killed process loses none).
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS pending (id TEXT PRIMARY KEY, count INTEGER, last TEXT)"
                )
                # When each file was last written by a flush ('': the last periodic flush);
                # tables of their own, so an older memstore records into `pending` as it did.
                db.execute("CREATE TABLE IF NOT EXISTS written (id TEXT PRIMARY KEY, at TEXT)")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS marked (id TEXT PRIMARY KEY, share INTEGER, "
                    "count INTEGER)"
                )
            except (OSError, sqlite3.Error) as err:
                raise VaultError(f"cannot open usage counters at {self.path}: {err}") from err
            self._db = db
        return self._db

    def record(self, ids: Iterable[str], when: str) -> None:
        """Count one recall of each id at time `when` (an ISO timestamp)."""
        rows = [(memory_id, when) for memory_id in ids]
        if not rows:
            return
        try:
            db = self._connect()
            # One transaction for the recall's hits: in autocommit mode each row would be
            # its own write to the log (a recall's fifth of a millisecond, five times).
            with db:
                db.execute("BEGIN")
                db.executemany(
                    "INSERT INTO pending VALUES (?, 1, ?) ON CONFLICT(id) DO UPDATE SET "
                    "count = count + 1, last = max(last, excluded.last)",
                    rows,
                )
        except sqlite3.Error as err:
            raise VaultError(f"cannot record usage in {self.path}: {err}") from err

    def pending(self) -> dict[str, tuple[int, str]]:
        """Return id → (recalls not yet written to the file, latest recall time)."""
        if not self.path.exists():
            return {}
        rows = self._connect().execute("SELECT id, count, last FROM pending ORDER BY id")
        return {memory_id: (count, last) for memory_id, count, last in rows}

    def due(self, before: str | None) -> dict[str, tuple[int, str]]:
        """Return the pending counts a periodic flush writes now: none if the last one ran
        after `before` (an ISO timestamp), else those whose file was not written after it.
        None: every pending count (sync's flush)."""
        if before is None:
            return self.pending()
        if not self.path.exists():
            return {}
        db = self._connect()
        if db.execute("SELECT 1 FROM written WHERE id = '' AND at > ?", [before]).fetchone():
            return {}
        rows = db.execute(
            "SELECT p.id, p.count, p.last FROM pending p LEFT JOIN written w ON w.id = p.id "
            "WHERE coalesce(w.at, '') <= ? ORDER BY p.id",
            [before],
        )
        return {memory_id: (count, last) for memory_id, count, last in rows}

    def mark(self, shares: dict[str, tuple[int, int]]) -> None:
        """Note, durably, what a flush is about to write: id → (this clone's share in the
        file before, the count it adds). `settle` reads it back after a crash."""
        db = self._connect()
        db.execute("PRAGMA synchronous=FULL")
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute("DELETE FROM marked")
                db.executemany(
                    "INSERT INTO marked VALUES (?, ?, ?)",
                    [(memory_id, share, count) for memory_id, (share, count) in shares.items()],
                )
        finally:
            db.execute("PRAGMA synchronous=NORMAL")

    def is_marked(self) -> bool:
        """Say whether a flush's marks are there (one under way elsewhere, or killed)."""
        if not self.path.exists():
            return False
        return self._connect().execute("SELECT 1 FROM marked LIMIT 1").fetchone() is not None

    def settle(self, share_now: Callable[[str], int | None]) -> int:
        """Finish a flush that was killed: a marked count whose file holds it (this clone's
        share reached before + count) is taken off pending; one whose write did not land
        stays pending. `share_now(id)` reads the file's share (None: gone). Return how many
        counts were found written."""
        if not self.path.exists():
            return 0
        marked = list(self._connect().execute("SELECT id, share, count FROM marked"))
        landed = {}
        for memory_id, share, count in marked:
            now = share_now(memory_id)
            if now is not None and now >= share + count:
                landed[memory_id] = (count, "")
        self.clear(landed, "")
        return len(landed)

    def clear(self, counts: dict[str, tuple[int, str]], when: str, periodic: bool = False) -> None:
        """Subtract flushed counts written at `when` (recalls recorded meanwhile stay
        pending) and forget the flush's marks, in one transaction (`periodic`: note `when`
        as the last periodic flush)."""
        db = self._connect()
        db.execute("PRAGMA synchronous=FULL")
        try:
            db.execute("BEGIN IMMEDIATE")
            for memory_id, (count, _) in counts.items():
                db.execute("UPDATE pending SET count = count - ? WHERE id = ?", [count, memory_id])
            db.execute("DELETE FROM pending WHERE count <= 0")
            if when:
                written = [*counts, *([""] if periodic else [])]
                db.executemany(
                    "INSERT OR REPLACE INTO written VALUES (?, ?)", [(i, when) for i in written]
                )
                db.execute("DELETE FROM written WHERE id != '' AND at < ?", [_day_before(when)])
            db.execute("DELETE FROM marked")
            db.execute("COMMIT")
        finally:
            db.execute("PRAGMA synchronous=NORMAL")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _day_before(when: str) -> str:
    """Return a timestamp a day before `when` (rows older than any interval are pruned)."""
    try:
        stamp = datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return ""
    return (stamp - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
