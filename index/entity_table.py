"""The sqlite table beside the Whoosh index: entities per document, metadata, segment checksums."""

from __future__ import annotations

import contextlib
import heapq
import os
import sqlite3
import zlib
from collections import Counter, OrderedDict
from collections.abc import Collection, Iterable, Iterator, Mapping
from itertools import chain, islice
from pathlib import Path

from .damage import SearchIndexError, describe, guard
from .entities import extract_entities
from .schema import Document

# Entity rows' keys kept across look-ups (~2.5 MB at most; 200,000 held 10 MB after 200
# recalls at 100k, issue 39)
CACHE_ENTITY_ROWS = 50_000
# A write of more rows than this has sqlite keep up to ROOMY_CACHE_KB of pages while it
# runs (its default 2 MB re-reads index pages from the OS at every turn: ~0.7 s of system
# time inserting a 100k rebuild's 173,000 entity rows), then goes back to the default.
ROOMY_ROWS = 10_000
ROOMY_CACHE_KB = 65_536
# An entity with more rows than this is not read whole to rank the keys sharing a memory's
# entities (EntityTable.shared_with): at a million memories that was ~30% of a recall's CPU.
LONG_LIST = 2_000


class EntityTable:
    """The entities each document mentions (for look-ups by entity), the index's metadata
    and its segment files' checksums, in one sqlite file under the index folder."""

    def __init__(self, root: Path, db: sqlite3.Connection) -> None:
        self.root = root
        self.db = db
        self.keeps_entities = True  # an index nobody asks for entities skips extracting them
        self._cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._sets: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._cache_size = 0
        self._version: tuple[int, int] | None = None

    @classmethod
    def open(cls, root: Path) -> EntityTable:
        """Open (creating) the table of the index under `root`; read-only where the folder
        cannot be written (a read-only vault can still be searched)."""
        path = root / "entities.sqlite"
        if path.is_file() and not os.access(root, os.W_OK):
            return cls(root, connect_read_only(path))
        db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
        try:
            _create_tables(db)
        except sqlite3.Error:
            db.close()
            raise
        return cls(root, db)

    def close(self) -> None:
        self.db.close()

    # --- reading --------------------------------------------------------------------

    def entity_keys(self, entities: Iterable[str]) -> dict[str, int]:
        """Return, per document key, how many of `entities` it mentions."""
        wanted = sorted({e.lower() for e in entities})
        if not wanted:
            return {}
        with guard(self.root, "read"):
            keys_of = self._rows(wanted)
        # Counter counts in C: an entity such as a person's @name has thousands of rows
        return dict(Counter(chain.from_iterable(keys_of[e] for e in wanted)))

    def shared_with(
        self,
        entities: Iterable[str],
        limit: int,
        exclude: Collection[str],
        common: int | None = None,
    ) -> list[str]:
        """Return the `limit` keys, none of `exclude`, that mention the most of `entities`,
        ties by key: sorted(entity_keys(...), key=(-count, key))[:limit], without counting
        each of the thousands of keys a common entity (a person's @name) has. With `common`,
        an entity with more than `common` rows is left out of `entities`.

        A key mentioning two or more of them is in the intersection of two entities' key
        sets; the rest come in key order from the entities' sorted key lists. The longest
        list (at a million memories a person's @name has ~31,000 keys) is not read whole:
        the other lists' keys are looked up in it, and its own keys are read in order only
        as far as the answer needs.
        """
        wanted = sorted({e.lower() for e in entities})
        if not wanted or limit < 1:
            return []
        with guard(self.root, "read"):
            sizes = self._sizes(wanted, max(LONG_LIST, common or 0))
            if common is not None:
                wanted = [e for e in wanted if sizes[e] <= common]
                if not wanted:
                    return []
            longest = max(wanted, key=lambda e: (sizes[e], e))
            longest = longest if sizes[longest] > LONG_LIST else ""
            read = [e for e in wanted if e != longest]
            rows = self._rows(read) if read else {}
            sets = [self._key_set(e, keys) for e, keys in rows.items()]
            lists: list[Iterable[str]] = list(rows.values())
            if longest:  # its keys that matter for the pairs: those in another list
                sets.append(self._holding(longest, frozenset().union(*sets)))
            # A key in c of the sets is in c(c-1)/2 of their pairwise intersections:
            # counting those (in C) ranks the keys as counting every row would.
            pairs = Counter(
                chain.from_iterable(a & b for i, a in enumerate(sets) for b in sets[i + 1 :])
            )
            for key in exclude:
                pairs.pop(key, None)
            ranked = most_shared(pairs, limit)
            if len(ranked) < limit:
                # Each remaining key is in one list only, and every list is sorted.
                if longest:
                    lists.append(self._keys_in_order(longest))
                once = (k for k in heapq.merge(*lists) if k not in pairs and k not in exclude)
                ranked += islice(once, limit - len(ranked))
        return ranked

    def _sizes(self, wanted: list[str], cap: int) -> dict[str, int]:
        """Return each entity's row count, counted up to `cap` + 1 (the longest of more than
        LONG_LIST rows is not read whole: its keys are probed; the others are read and kept)."""
        query = "SELECT COUNT(*) FROM (SELECT 1 FROM entities WHERE entity = ? LIMIT ?)"
        return {e: self.db.execute(query, [e, cap + 1]).fetchone()[0] for e in wanted}

    def _holding(self, entity: str, keys: Collection[str]) -> frozenset[str]:
        """Return those of `keys` that have a row of `entity`."""
        found: set[str] = set()
        listed = sorted(keys)
        for start in range(0, len(listed), 500):
            chunk = listed[start : start + 500]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key FROM entities WHERE entity = ? AND key IN ({marks})"
            found.update(key for (key,) in self.db.execute(query, [entity, *chunk]))
        return frozenset(found)

    def _keys_in_order(self, entity: str) -> Iterator[str]:
        """Yield the keys of `entity`'s rows in key order, read as they are asked for (the
        (entity, key) index holds them in that order)."""
        query = "SELECT key FROM entities WHERE entity = ? ORDER BY key"
        for (key,) in self.db.execute(query, [entity]):
            yield key

    def _key_set(self, entity: str, keys: tuple[str, ...]) -> frozenset[str]:
        """Return the set of an entity's keys (kept while its row list stays cached)."""
        found = self._sets.get(entity)
        if found is None or found[0] is not keys:
            found = (keys, frozenset(keys))
            self._sets[entity] = found
        return found[1]

    def _rows(self, wanted: list[str]) -> dict[str, tuple[str, ...]]:
        """Return the keys of each entity's rows in key order, from the table or the cache."""
        # The cache holds while no connection changes the table: data_version counts the
        # others' commits, total_changes this one's.
        version = (self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes)
        cache = self._cache
        if version != self._version:
            cache.clear()
            self._sets.clear()
            self._cache_size = 0
            self._version = version
        missing = [e for e in wanted if e not in cache]
        if missing:
            rows: dict[str, list[str]] = {e: [] for e in missing}
            marks = ",".join("?" * len(missing))
            query = f"SELECT entity, key FROM entities WHERE entity IN ({marks}) ORDER BY key"
            for entity, key in self.db.execute(query, missing):
                rows[entity].append(key)
            for entity, keys in rows.items():
                cache[entity] = tuple(keys)
                self._cache_size += len(keys) + 1
        found = {e: cache[e] for e in wanted}
        for entity in wanted:
            cache.move_to_end(entity)
        while self._cache_size > CACHE_ENTITY_ROWS and len(cache) > len(wanted):
            gone, evicted = cache.popitem(last=False)
            self._sets.pop(gone, None)
            self._cache_size -= len(evicted) + 1
        return found

    def entities_of(self, key: str) -> list[tuple[str, str]]:
        """Return the (entity, kind) pairs recorded for one document."""
        with guard(self.root, "read"):
            rows = self.db.execute(
                "SELECT entity, kind FROM entities WHERE key = ? ORDER BY 1", [key]
            ).fetchall()
        return [(entity, kind) for entity, kind in rows]

    def get_meta(self, name: str) -> str | None:
        """Return a stored metadata value."""
        with guard(self.root, "read"):
            row = self.db.execute("SELECT value FROM meta WHERE name = ?", [name]).fetchone()
        return None if row is None else str(row[0])

    def replace_meta(self, *entries: tuple[str, str, str]) -> None:
        """Store each (prefix, name, value), `name` = `value` in place of every value named
        `prefix`…, in one transaction: a cache, so a table that cannot be written (a
        read-only vault) is left as it is."""
        db = self.db
        with contextlib.suppress(sqlite3.OperationalError):
            try:
                db.execute("BEGIN IMMEDIATE")
                for prefix, name, value in entries:
                    db.execute("DELETE FROM meta WHERE name LIKE ?", [f"{prefix}%"])
                    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [name, value])
                db.execute("COMMIT")
            finally:
                if db.in_transaction:
                    db.execute("ROLLBACK")

    def verify(self) -> None:
        """Check the table itself and each segment file against its recorded checksum.

        Raises SearchIndexError naming the damage.
        """
        check = self.db.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise SearchIndexError(f"entity table is damaged ({' '.join(check.split())})")
        # Stray bytes in a posting list may still decode: the checksums tell.
        for name, size, crc in self.db.execute("SELECT name, size, crc FROM segments"):
            path = self.root / "whoosh" / name
            if path.exists() and _checksum(path) != (size, crc):
                raise SearchIndexError(f"segment {name} does not match its checksum")

    # --- writing --------------------------------------------------------------------

    def write(
        self,
        upserts: list[Document],
        deletes: list[str],
        meta: dict[str, str],
        new: Collection[str] = (),
        found: Mapping[str, list[tuple[str, str]]] | None = None,
        adopted: Iterable[str] = (),
    ) -> None:
        """Record what one index commit changed: entity rows, metadata, segment checksums.

        `found` holds entities already extracted for some keys (all of `adopted`'s).
        """
        db = self.db
        found = found or {}
        try:
            with roomy_cache(db, len(upserts) + len(deletes) + len(found)):
                self._write(upserts, deletes, meta, new, found, adopted)
        except sqlite3.Error as err:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            raise SearchIndexError(
                f"entity table at {self.root} cannot be written ({describe(err)})"
            ) from err

    def _write(
        self,
        upserts: list[Document],
        deletes: list[str],
        meta: dict[str, str],
        new: Collection[str],
        found: Mapping[str, list[tuple[str, str]]],
        adopted: Iterable[str],
    ) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        stale = [*deletes, *(d.key for d in upserts if d.key not in new)]
        db.executemany("DELETE FROM entities WHERE key = ?", [[key] for key in stale])
        rows = [
            (doc.key, entity, kind)
            for doc in (upserts if self.keeps_entities else ())
            for entity, kind in (found[doc.key] if doc.key in found else document_entities(doc))
        ]
        if self.keeps_entities:
            rows += [(key, entity, kind) for key in adopted for entity, kind in found[key]]
        db.executemany("INSERT INTO entities (key, entity, kind) VALUES (?, ?, ?)", rows)
        db.executemany(
            "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", sorted(meta.items())
        )
        self._record_checksums()
        db.execute("COMMIT")

    def _record_checksums(self) -> None:
        """Checksum each segment file new since the last commit (Whoosh never changes one)."""
        on_disk = {path.name: path for path in (self.root / "whoosh").glob("*.seg")}
        known = {name for (name,) in self.db.execute("SELECT name FROM segments")}
        gone = [[name] for name in known - set(on_disk)]
        self.db.executemany("DELETE FROM segments WHERE name = ?", gone)
        for name in sorted(set(on_disk) - known):
            with contextlib.suppress(FileNotFoundError):  # merged away meanwhile
                size, crc = _checksum(on_disk[name])
                self.db.execute("INSERT INTO segments VALUES (?, ?, ?)", [name, size, crc])


def most_shared(counts: Mapping[str, int], limit: int) -> list[str]:
    """Return the `limit` keys with the highest counts, ties by key: sorted(counts, key=
    (-count, key))[:limit] without a Python key call for each of thousands of keys."""
    ranked: list[str] = []
    for count in sorted(set(counts.values()), reverse=True):
        if len(ranked) >= limit:
            break
        level = [key for key, n in counts.items() if n == count]
        ranked += heapq.nsmallest(limit - len(ranked), level)
    return ranked


def document_entities(doc: Document) -> list[tuple[str, str]]:
    """Return the (entity, kind) pairs the entity table records for a document."""
    return extract_entities(f"{doc.content}\n{' '.join(doc.keywords)}")


@contextlib.contextmanager
def roomy_cache(db: sqlite3.Connection, rows: int) -> Iterator[None]:
    """Let sqlite keep more pages in memory for a write of many `rows` (ROOMY_ROWS), then
    set its page cache back to what it was (the pages beyond it are given back)."""
    if rows <= ROOMY_ROWS:
        yield
        return
    (before,) = db.execute("PRAGMA cache_size").fetchone()
    db.execute(f"PRAGMA cache_size = -{ROOMY_CACHE_KB}")
    try:
        yield
    finally:
        db.execute(f"PRAGMA cache_size = {int(before)}")


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open an sqlite file in a folder that cannot be written (no WAL, no journal)."""
    uri = f"{path.resolve().as_uri()}?immutable=1"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _checksum(path: Path) -> tuple[int, int]:
    """Return a file's size and CRC-32."""
    crc = size = 0
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return size, crc


def _create_tables(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode=WAL")
    # A cache: a power cut may lose the last commit (the count check then rebuilds),
    # never corrupt it; a killed process loses nothing. Saves an fsync per write.
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS entities (key TEXT, entity TEXT, kind TEXT)")
    db.execute("CREATE INDEX IF NOT EXISTS entities_entity ON entities (entity)")
    # An entity's keys in key order, from the index alone (shared_with reads the longest
    # list only as far as it needs). The index above stays for memstore before it.
    db.execute("CREATE INDEX IF NOT EXISTS entities_entity_key ON entities (entity, key)")
    db.execute("CREATE INDEX IF NOT EXISTS entities_key ON entities (key)")
    db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE IF NOT EXISTS segments (name TEXT PRIMARY KEY, size INT, crc INT)")
