"""Usage counters between syncs: recalls counted locally, written to the files in batches.

Recall is read-only with respect to git: each recall adds a row here (sqlite under
.memstore/), and a flush turns the pending counts into `recalled` / `last_recalled` in the
memory files with one commit. Deleting .memstore/ loses only counts not yet flushed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from memstore.core.errors import VaultError


class Usage:
    """Pending recall counts per memory id."""

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
                # cut can lose the last few counts, never a memory.
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS pending (id TEXT PRIMARY KEY, count INTEGER, last TEXT)"
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

    def clear(self, counts: dict[str, tuple[int, str]]) -> None:
        """Subtract flushed counts (recalls recorded meanwhile stay pending)."""
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        for memory_id, (count, _) in counts.items():
            db.execute("UPDATE pending SET count = count - ? WHERE id = ?", [count, memory_id])
        db.execute("DELETE FROM pending WHERE count <= 0")
        db.execute("COMMIT")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
