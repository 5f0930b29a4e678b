"""A large write's roomy page cache: the same rows written, the connection's cache size back after."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memstore.index import Document, roomy_cache
from memstore.index import entity_table as entity_table_module
from memstore.index.entity_table import ROOMY_CACHE_KB, EntityTable


def _docs(count: int) -> list[Document]:
    return [
        Document(key=f"ws/m{n}.md", id=f"m{n}", workspace="ws", kind="note",
                 content=f"see https://example.com/{n} and snake_case_{n % 7} in v1.{n}.0")
        for n in range(count)
    ]  # fmt: skip


def _rows(root: Path) -> list[tuple[str, str, str]]:
    db = sqlite3.connect(root / "entities.sqlite")
    try:
        return db.execute("SELECT key, entity, kind FROM entities ORDER BY rowid").fetchall()
    finally:
        db.close()


def test_a_large_write_gets_a_roomy_cache_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _docs(40)
    (tmp_path / "small").mkdir()
    small = EntityTable.open(tmp_path / "small")
    small.write(docs, [], {}, new={d.key for d in docs})
    small.close()
    monkeypatch.setattr(entity_table_module, "ROOMY_ROWS", 10)
    (tmp_path / "roomy").mkdir()
    roomy = EntityTable.open(tmp_path / "roomy")
    before = roomy.db.execute("PRAGMA cache_size").fetchone()
    sizes: list[int] = []
    roomy.db.set_trace_callback(lambda sql: sizes.append(len(sql)) if "cache_size" in sql else None)
    roomy.write(docs, [], {}, new={d.key for d in docs})
    assert len(sizes) == 3  # asked, set roomy, set back
    assert roomy.db.execute("PRAGMA cache_size").fetchone() == before
    roomy.close()
    assert _rows(tmp_path / "roomy") == _rows(tmp_path / "small") != []


def test_the_cache_size_comes_back_when_the_write_fails(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    (before,) = db.execute("PRAGMA cache_size").fetchone()
    with pytest.raises(sqlite3.OperationalError), roomy_cache(db, 1_000_000):
        assert db.execute("PRAGMA cache_size").fetchone() == (-ROOMY_CACHE_KB,) != (before,)
        db.execute("INSERT INTO missing VALUES (1)")
    assert db.execute("PRAGMA cache_size").fetchone() == (before,)
    db.close()
