"""A posting list whose weights are all equal keeps one weight (issue 39: the daemon's memory;
about half of a 100k index's lists), and scores the same as Whoosh's matchers (the equality
tests of tests/index/test_scoring.py run over such lists too)."""

from __future__ import annotations

from array import array
from pathlib import Path

from memstore.index import Document, SearchIndex
from memstore.index.reader import BM25_B, BM25_K1
from memstore.index.scoring import LiveStats, PostingCache, read_postings


def test_equal_weights_are_kept_once_and_widened_when_scored(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    index.apply(
        [
            Document(f"w/{n}.md", f"{n:08x}", "w", "note", f"kestrel {'gale ' * (n % 3 + 1)}")
            for n in range(300)  # more than two of whoosh3's blocks of 128
        ]
    )
    reader = index.reader.searcher().reader()
    (segment, _), *_ = reader.leaf_readers()
    once = read_postings(segment, "content", "kestrel")  # once in every document
    varied = read_postings(segment, "content", "gale")  # 1, 2 or 3 times
    assert len(once[0]) == 300 and list(once[1]) == [1.0]
    assert len(varied[0]) == len(varied[1]) == 300 and set(varied[1]) == {1.0, 2.0, 3.0}
    stats, cache = index.reader._stats, PostingCache()
    assert isinstance(stats, LiveStats)
    values = stats.field_values(segment, "content", "kestrel", once, cache, BM25_B, BM25_K1)
    spelled = (once[0], array("f", [1.0] * 300))  # the weights written out
    longhand = stats.field_values(segment, "content", "kestrel", spelled, cache, BM25_B, BM25_K1)
    assert values.shape == (300,) and values.tolist() == longhand.tolist()
    index.close()
