"""A part is written with Python's cyclic collector paused, and leaves no cyclic garbage behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

from memstore.index import Document, write_part


def _documents(count: int, seen: list[bool]) -> Iterator[Document]:
    for n in range(count):
        seen.append(gc.isenabled())
        yield Document(
            key=f"ws/m{n}.md", id=f"m{n}", workspace="ws", kind="note",
            content=f"deploy step {n} of the release_{n % 13} with nginx v1.{n}.2",
            keywords=("deploy", f"k{n % 5}"),
        )  # fmt: skip


def test_the_collector_is_paused_while_a_part_is_written_and_restored(tmp_path: Path) -> None:
    assert gc.isenabled()
    seen: list[bool] = []
    gc.collect()
    assert write_part(tmp_path / "part", _documents(400, seen)) is not None
    assert seen == [False] * 400 and gc.isenabled()
    # what the collector would have found: nothing that grows with the documents
    assert gc.collect() < 40


def test_a_collector_paused_before_stays_paused(tmp_path: Path) -> None:
    gc.disable()
    try:
        write_part(tmp_path / "part", _documents(3, []))
        assert not gc.isenabled()
    finally:
        gc.enable()
