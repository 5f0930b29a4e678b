"""The daemon warms again after a background merge swapped in a large segment: the first search
with many ties after it does not read the merged segment's key order itself (at a million
memories 0.15-0.9 s of CPU for a segment of 143,000), and answers what it answered before."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore.daemon.server import Daemon
from memstore.index import stored
from memstore.index.scoring import segment_id
from memstore.service.store import Store
from tests.conftest import LARGE_SEGMENTS_NOW, settings_at, wait_until


@pytest.fixture
def chunked(large_segments: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """The large-segment vault (tests/conftest.py): ten segments whose key ranks a warm-up
    reads, and a tier of six the merge takes."""
    monkeypatch.setattr(stored, "RANKS_AHEAD_MIN", 5, raising=False)
    monkeypatch.setattr(stored, "RANKED_TIES", 2)  # "note" ties dozens at the last place
    with Store.open(settings_at(large_segments), clock=lambda: LARGE_SEGMENTS_NOW) as store:
        yield store


def _leaves(store: Store) -> dict[str, int]:
    searcher = store.indexer.search.reader.searcher()
    return {segment_id(r): r.doc_count_all() for r, _ in searcher.reader().leaf_readers()}


def _ranked(store: Store) -> list[tuple[str, float]]:
    found = store.search("note", workspace=None, k=3, catch_up=False)
    return [(hit.id, round(hit.score, 6)) for hit in found.hits]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each segment whose key ranks are read whole (a search's own read)."""
    read: list[str] = []
    whole = stored.key_ranks

    def counted(segment: Any) -> Any:
        read.append(segment_id(segment))
        return whole(segment)

    monkeypatch.setattr(stored, "key_ranks", counted)
    return read


def test_the_first_search_after_a_merge_finds_the_key_ranks_read(
    chunked: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = chunked
    store.search("kafka", workspace=None, k=5)  # catch up: the ten segments
    assert sorted(_leaves(store).values()) == [6] * 10
    before = _ranked(store)
    daemon = Daemon(store, idle_exit=0)
    monkeypatch.setattr("memstore.daemon.server.SETTLE_AFTER_S", 0.01)
    serving = threading.Thread(target=daemon.run, args=(lambda _line: None,), daemon=True)
    serving.start()
    try:
        ranks = store.indexer.search.reader.stored.ranks
        wait_until(lambda: len(ranks) == 10, 60, "the warm-up's key ranks of ten segments")
        assert store.maintenance.merge_segments() == 6  # one tier: six into one of 36
        wait_until(  # what the daemon's idle loop does once it sees the merged segment
            lambda: 36 in _leaves(store).values() and len(ranks) == 5,
            60,
            "the daemon warming again after the merge",
        )
    finally:
        daemon.stop("test")
        serving.join(timeout=60)
    assert not serving.is_alive()
    read = _counting(monkeypatch)
    with store.shared.mutex:
        after = _ranked(store)
    assert read == []  # old code: the merged segment's ranks read by this search
    assert after == before
    store.indexer.search.reader.stored.ranks.clear()  # the search needs them: it reads them
    assert _ranked(store) == before
    assert len(read) >= 1
