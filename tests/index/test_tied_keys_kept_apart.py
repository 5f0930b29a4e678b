"""Documents tied at the last place are read for their keys only: their keys are kept apart
from the documents hits were built from, so ties never push hits out (issue 39: the daemon's
memory), and the hits are the same with either cache cold, small or warm."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memstore.index import Document, SearchIndex


def _tied_index(root: Path) -> SearchIndex:
    rng = random.Random(8)
    index = SearchIndex.open(root)
    numbers = list(range(240))
    rng.shuffle(numbers)  # document numbers in another order than keys
    for start in range(0, 240, 40):
        index.apply(
            [
                Document(
                    f"ws/{n:04d}.md",
                    f"{n:08x}",
                    "ws",
                    "note",
                    f"the retry budget resets after deploys {n}"
                    + (" rarely" if n % 60 == 7 else ""),
                )
                for n in numbers[start : start + 40]
            ]
        )
    return index


QUERIES = ["retry budget", "rarely retry", "deploys resets budget", "budget"]


def test_tied_documents_leave_only_their_keys(tmp_path: Path) -> None:
    index = _tied_index(tmp_path / "ix")
    reader = index.reader
    hits = index.search("retry budget", limit=3, any_term=True)
    assert len(hits) == 3
    built = {h.document.key for h in hits}
    kept = {d.key for d in reader.stored.documents.values()}
    assert kept == built  # the tied ones were not kept as documents …
    # … only their keys: of each segment's, as many as there are places (test_tied_ranks.py)
    assert 3 <= len(reader.stored.keys) <= 6 * 3
    index.close()


@pytest.mark.parametrize("documents, keys", [(1, 1), (2, 5), (4_000, 16_000)])
def test_hits_are_the_same_whatever_the_caches_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, documents: int, keys: int
) -> None:
    monkeypatch.setattr("memstore.index.stored.CACHE_DOCUMENTS", documents)
    monkeypatch.setattr("memstore.index.stored.CACHE_KEYS", keys)
    index = _tied_index(tmp_path / "ix")
    for _ in range(2):  # the second time from whatever was kept
        for text in QUERIES:
            for limit in (1, 4, 10):
                got = index.search(text, limit=limit, any_term=True)
                every = index.search(text, limit=1000, any_term=True)
                ranked = sorted(every, key=lambda h: (-round(h.score, 6), h.document.key))
                assert [(h.document.key, h.score) for h in got] == [
                    (h.document.key, h.score) for h in ranked[:limit]
                ]
    assert len(index.reader.stored.documents) <= documents
    assert len(index.reader.stored.keys) <= keys
    index.close()


def test_keys_of_merged_away_segments_are_forgotten(tmp_path: Path) -> None:
    index = _tied_index(tmp_path / "ix")
    index.search("budget", limit=2, any_term=True)
    before = {segment for segment, _ in index.reader.stored.keys}
    index.compact()  # one segment: the old ones are gone
    index.search("budget", limit=2, any_term=True)
    assert before and not before & {segment for segment, _ in index.reader.stored.keys}
    index.close()
