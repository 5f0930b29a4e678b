"""A long-running shell's tidy compacts an index of many segments a bounded step at a time.

At a million memories the bulk catch-up leaves 40 segments of 25,000; the tidy (every five
minutes in the daemon and `serve`) merged them all under the vault lock, for many minutes,
while every add and sync waited. Here the same shape in miniature: a catch-up in chunks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.index import SearchIndex
from memstore.index.scoring import segment_id
from memstore.service import maintenance
from memstore.service.store import Store
from tests.conftest import LARGE_SEGMENTS_NOW, settings_at


def _segments(index: SearchIndex) -> dict[str, int]:
    leaves = index.reader.searcher().reader().leaf_readers()
    return {segment_id(reader): reader.doc_count_all() for reader, _ in leaves}


def _ranked(store: Store, query: str) -> list[tuple[str, float]]:
    result = store.search(query, workspace=None, k=10, catch_up=False)
    return [(hit.id, round(hit.score, 6)) for hit in result.hits]


@pytest.fixture
def chunked(large_segments: Path) -> Store:
    """The large-segment vault (tests/conftest.py), its index to be built in chunks of 6."""
    return Store.open(settings_at(large_segments), clock=lambda: LARGE_SEGMENTS_NOW)


def test_a_tidy_merges_only_the_smallest_segments_its_bound_allows(
    chunked: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two segments of 6 fit, not three (raising=False: the code before had no bound)
    monkeypatch.setattr(maintenance, "COMPACT_MAX_DOCS", 13, raising=False)
    with chunked as store:
        assert store.search("kafka", workspace=None, k=5).hits  # the catch-up, in chunks
        index = store.indexer.search
        before = _segments(index)
        assert len(before) == 10 and set(before.values()) == {6}
        assert index.needs_compacting()  # ten large segments, over COMPACT_SEGMENTS
        ranked = {q: _ranked(store, q) for q in ("kafka lag", "redis", "vacuum host7")}
        store.tidy()
        store.shared.follow_index()
        after = _segments(store.indexer.search)
        kept = set(before) & set(after)
        # two of the 6-document segments merged into one of 12; the other eight untouched
        assert len(kept) == 8 and sorted(after.values()) == [6] * 8 + [12]
        assert {q: _ranked(store, q) for q in ranked} == ranked


def test_a_tidy_leaves_segments_no_two_of_which_fit_its_bound(
    chunked: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # not even two segments of 6 fit
    monkeypatch.setattr(maintenance, "COMPACT_MAX_DOCS", 11, raising=False)
    with chunked as store:
        store.search("kafka", workspace=None, k=5)
        index = store.indexer.search
        before = _segments(index)
        assert index.needs_compacting()
        store.tidy()
        store.shared.follow_index()
        assert _segments(store.indexer.search) == before


def test_gc_still_merges_every_segment(chunked: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maintenance, "COMPACT_MAX_DOCS", 11, raising=False)
    with chunked as store:
        store.search("kafka", workspace=None, k=5)
        ranked = _ranked(store, "postgres vacuum")
        assert store.compact_index() == 10
        store.shared.follow_index()
        assert store.indexer.search.segment_count() == 1
        assert _ranked(store, "postgres vacuum") == ranked


def test_a_tidy_merges_large_segments_by_tiers_in_a_thread(
    chunked: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two 6-document segments fit no compaction step: the tiers of large segments merge
    monkeypatch.setattr(maintenance, "COMPACT_MAX_DOCS", 11, raising=False)
    with chunked as store:
        store.search("kafka", workspace=None, k=5)
        before = _segments(store.indexer.search)
        ranked = {q: _ranked(store, q) for q in ("kafka lag", "redis", "vacuum host7")}
        store.tidy()
        thread = store.maintenance.merges.thread
        assert thread is not None
        thread.join(timeout=120)
        assert not thread.is_alive()
        store.shared.follow_index()
        after = _segments(store.indexer.search)
        # six of the ten 6-document segments (one tier) became one of 36; four untouched
        assert sorted(after.values()) == [6] * 4 + [36]
        assert len(set(before) & set(after)) == 4
        assert {q: _ranked(store, q) for q in ranked} == ranked
        assert store.maintenance.merge_segments() == 0  # nothing left due
