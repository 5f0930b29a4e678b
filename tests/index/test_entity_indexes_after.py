"""A large write into a table no larger than it builds the entity table's indexes after its
rows (index/entity_table.py, `_indexes_built_after`): the same rows, indexes and answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memstore.index import Document, SearchIndexError
from memstore.index import entity_table as entity_table_module
from memstore.index.entity_table import EntityTable


def _docs(start: int, count: int) -> list[Document]:
    return [
        Document(key=f"ws/m{n}.md", id=f"m{n}", workspace="ws", kind="note",
                 content=f"see https://example.com/{n % 13} and snake_case_{n % 7} in v1.{n}.0")
        for n in range(start, start + count)
    ]  # fmt: skip


def _state(root: Path) -> tuple[object, ...]:
    db = sqlite3.connect(root / "entities.sqlite")
    try:
        return (
            db.execute("SELECT key, entity, kind FROM entities ORDER BY rowid").fetchall(),
            db.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
            ).fetchall(),
            db.execute("PRAGMA integrity_check").fetchall(),
            db.execute(
                "SELECT key FROM entities WHERE entity = 'snake_case_3' ORDER BY key"
            ).fetchall(),
        )
    finally:
        db.close()


def _write_all(root: Path, writes: list[list[Document]], dropped: list[str]) -> EntityTable:
    root.mkdir()
    table = EntityTable.open(root)
    table.db.set_trace_callback(lambda sql: dropped.append(sql) if "DROP INDEX" in sql else None)
    for docs in writes:
        table.write(docs, [], {}, new={d.key for d in docs})
    return table


def test_indexes_made_after_a_large_write_hold_what_row_by_row_inserts_make(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an empty table's first 30 rows' worth, then as many again, then a few more
    writes = [_docs(0, 12), _docs(12, 12), _docs(24, 3)]
    plain: list[str] = []
    _write_all(tmp_path / "plain", writes, plain).close()
    monkeypatch.setattr(entity_table_module, "ROOMY_ROWS", 10)
    dropped: list[str] = []
    table = _write_all(tmp_path / "after", writes, dropped)
    assert plain == [] and len(dropped) == 6  # three indexes, twice: not for the last write
    assert table.entity_keys(["snake_case_3", "https://example.com/5"]) == EntityTable.open(
        tmp_path / "plain"
    ).entity_keys(["snake_case_3", "https://example.com/5"])
    table.close()
    assert _state(tmp_path / "after") == _state(tmp_path / "plain")
    assert _state(tmp_path / "after")[0] != [] and _state(tmp_path / "after")[2] == [("ok",)]


def test_a_failed_large_write_leaves_the_table_and_its_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entity_table_module, "ROOMY_ROWS", 10)
    root = tmp_path / "t"
    table = _write_all(root, [_docs(0, 5)], [])
    before = _state(root)
    # sqlite refuses the last row, after the indexes were dropped and most rows inserted
    table.db.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON entities WHEN NEW.entity = 'boom_here' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    bad = [*_docs(5, 20), Document("ws/x.md", "x", "ws", "note", "boom_here")]
    with pytest.raises(SearchIndexError, match="refused"):
        table.write(bad, [], {}, new={d.key for d in bad})
    table.db.execute("DROP TRIGGER refuse")
    table.close()
    assert _state(root) == before
