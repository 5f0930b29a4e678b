"""What a search after an add reads afresh (each add is a new index version): a posting
list straight from where its term's entry points, and BM25's length part for the postings
only. The same arrays and floats as through Whoosh's matcher and a whole segment's lengths
(tests/index/test_scoring.py compares every list and score with Whoosh's own)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from memstore.index import Document, SearchIndex, scoring
from memstore.index.reader import BM25_B, BM25_K1
from memstore.index.scoring import SCORED_FIELDS, LiveStats, PostingCache, read_postings

WORDS = [
    "nginx",
    "upload",
    "limit",
    "deploy",
    "staging",
    "cache",
    "redis",
    "worker",
    "queue",
    "token",
    "retry",
    "build",
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """400 memories merged whole by Whoosh's own writer, then 40 more in a segment of
    memstore's: lists of one block and of several, from either writer."""
    rng = random.Random(3)
    built = SearchIndex.open(tmp_path_factory.mktemp("reads") / "ix")
    for start in range(0, 400, 100):
        built.apply(
            Document(
                f"ws/{n:04d}.md",
                f"{n:08x}",
                "ws",
                "note",
                " ".join(rng.choices(WORDS, k=6)) + f" rare{n}",
                ("ops",) if n % 3 else (),
            )
            for n in range(start, start + 100)
        )
    built.compact()
    built.apply(
        Document(f"ws/x{n}.md", f"{n:08x}", "ws", "note", f"{WORDS[n % 12]} after {n}")
        for n in range(500, 540)
    )
    return built


def _lists(index: SearchIndex) -> list[tuple[Any, str, str]]:
    reader = index.reader.searcher().reader()
    return [
        (segment, field, raw.decode() if isinstance(raw, bytes) else raw)
        for segment, _ in reader.leaf_readers()
        for field in SCORED_FIELDS
        for raw in segment.lexicon(field)
    ]


def test_a_posting_list_is_read_without_a_matcher_unless_inlined(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    seen = {True: 0, False: 0}  # inlined lists (neither writer makes one here), lists
    for segment, field, text in _lists(index):
        terms = segment._terms
        matcher = terms.matcher
        monkeypatch.setattr(terms, "matcher", lambda *a, m=matcher: made.append(a[1]) or m(*a))
        info = terms.term_info(field, segment._text_to_bytes(field, text))
        ids, weights = read_postings(segment, field, text)
        assert len(ids) == info.doc_frequency()
        assert len(weights) in (1, len(ids))  # one weight: every posting's is the same
        assert bool(made) == info.is_inlined(), (field, text)
        seen[info.is_inlined()] += 1
        made.clear()
        monkeypatch.undo()
    assert seen[False] > 400, seen


def test_length_parts_of_postings_equal_the_whole_segments(index: SearchIndex) -> None:
    index.reader.searcher()
    reader = index.reader._stats.reader  # type: ignore[union-attr]
    lengths = index.reader._stats.lengths  # type: ignore[union-attr]
    cache = PostingCache()
    lean, warm = LiveStats(reader, lengths), LiveStats(reader, lengths)
    segments = [s for s, _ in reader.leaf_readers()]
    for segment in segments:  # as warm_steps does: whole segments' length parts first
        for field in SCORED_FIELDS:
            warm.norms(segment, field, cache, BM25_B, BM25_K1)
    compared = 0
    for segment, field, text in _lists(index):
        postings = cache.postings(segment, field, text)
        ids = np.frombuffer(postings[0], np.int32)
        got = lean.field_values(segment, field, text, postings, cache, BM25_B, BM25_K1)
        whole = warm.field_values(segment, field, text, postings, cache, BM25_B, BM25_K1)
        table = lean.norm_table(field, BM25_B, BM25_K1)
        per_document = table[scoring.field_codes(segment, field)]
        assert np.array_equal(per_document[ids], table[cache.codes(segment, field)[ids]])
        assert got.tolist() == whole.tolist()
        compared += len(ids)
    assert compared > 1000
    assert not lean._norms  # no whole segment's length part was made for a search
