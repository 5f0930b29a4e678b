"""A long-lived process's read-ahead of what first searches read, a step at a time."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from .reader import BM25_B, BM25_K1, IndexReader
from .scoring import SCORED_FIELDS, TermQuery, score

# What a long-lived process reads ahead (warm_steps): at most this many of the most frequent
# content terms, WARM_POSTINGS postings in all (1M cost 3.7 s of CPU and 48 MB at 100k).
WARM_TERMS = 200
WARM_POSTINGS = 250_000


def warm_steps(index: IndexReader, postings: int = WARM_POSTINGS) -> Iterator[None]:
    """Read, a step at a time, what first searches of `index` would: BM25's length parts of every
    segment and field, then the posting lists and scores of the most frequent content
    terms, up to `postings` postings in all (the longest lists: the costliest to read
    the first time, and the words most queries share), then the key order of each large
    segment (StoredCache.rank_steps), then each segment's terms for typo walks
    (lexicon.TermRun). Each step is short (a term, a segment's terms, or a few thousand
    terms of a table looked through); each step runs with
    other threads kept out of the index (the daemon takes the store). It stops when the
    index changes."""
    searcher = index.searcher()
    reader, stats = searcher.reader(), index._stats
    assert stats is not None  # set with the searcher
    for segment, _ in reader.leaf_readers():
        if segment.doc_count_all() and not index._postings.plain:  # arrays: a daemon's
            for fieldname in SCORED_FIELDS:
                stats.norms(segment, fieldname, index._postings, BM25_B, BM25_K1)
            index._postings.deleted(segment)
    yield
    # The largest segment's counts stand for the index's (a walk of the merged terms
    # of all segments cost several times more).
    largest = max(
        (segment for segment, _ in reader.leaf_readers()),
        key=lambda segment: segment.doc_count_all(),
    )
    frequent: list[tuple[int, str]] = []
    for done, (text, info) in enumerate(largest.iter_field("content"), 1):
        frequent.append((info.doc_frequency(), text))
        if done % 2000 == 0:
            frequent = heapq.nlargest(WARM_TERMS, frequent)
            yield
            if index._searcher is not searcher:
                return
    total = 0
    for count, text in heapq.nlargest(WARM_TERMS, frequent):
        total += count
        if total > postings or index._searcher is not searcher:
            break
        score(
            reader,
            stats,
            index._postings,
            TermQuery((text,), require_all=True),
            b=BM25_B,
            k1=BM25_K1,
            allowed=None,
            limit=1,
            held=None,
        )
        yield
    # The key order of large segments (ties at the last place are narrowed by it: 0.15 s
    # of the first such search after a merge at a million memories)
    for _ in index.stored.rank_steps(searcher):
        if index._searcher is not searcher:
            return
        yield
    # Each segment's terms for typo walks (~60 ms and ~0.5 MB a segment of 25,000)
    for _ in index.lexicon.term_runs():
        if index._searcher is not searcher:
            return
        yield
