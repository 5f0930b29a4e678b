"""A long-running shell's tidy gives an index older than flat posting lists (index/flat.py)
its sidecars, in its merge thread, after merging: the same rankings before and after."""

from __future__ import annotations

import pytest

from memstore.index import flat, merging
from memstore.service import maintenance
from memstore.service.store import Store
from tests.service.test_tidy_compaction import _ranked, _segments, chunked  # noqa: F401


def test_a_tidy_writes_the_sidecars_an_older_index_lacks(
    chunked: Store,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(maintenance, "COMPACT_MAX_DOCS", 11, raising=False)
    monkeypatch.setattr(merging, "MERGE_MAX_DOCS", 5)
    monkeypatch.setattr(flat, "MIN_DOCS", 6)  # every segment of the catch-up counts as large
    monkeypatch.setattr(flat, "MIN_POSTINGS", 2)
    monkeypatch.setattr(flat, "RECHECK_S", 0.0)  # a reader kept looks again at once
    with chunked as store:
        store.search("kafka", workspace=None, k=5)  # the catch-up, in chunks: no sidecars
        whoosh_dir = store.indexer.search.root / "whoosh"
        assert not list(whoosh_dir.glob(f"*{flat.SUFFIX}"))
        ranked = {q: _ranked(store, q) for q in ("kafka lag", "redis", "vacuum host7")}
        store.tidy()
        thread = store.maintenance.merges.thread
        assert thread is not None
        thread.join(timeout=120)
        assert not thread.is_alive()
        store.shared.follow_index()
        segments = _segments(store.indexer.search)
        assert sorted(segments.values()) == [6] * 4 + [36]  # merged, then completed
        having = {p.name.removesuffix(flat.SUFFIX) for p in whoosh_dir.glob(f"*{flat.SUFFIX}")}
        assert having == set(segments)
        reader = store.indexer.search.reader.searcher().reader()
        assert all(flat.of(s) is not None for s, _ in reader.leaf_readers())
        assert {q: _ranked(store, q) for q in ranked} == ranked
        assert store.indexer.search.complete_flat() == []  # nothing left to write
