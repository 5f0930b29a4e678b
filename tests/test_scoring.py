"""Term-at-a-time BM25F gives Whoosh's own scores, on an index with many segments and deletions."""

from __future__ import annotations

import random
from math import log
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from whoosh.query import And, Or, Query, Term
from whoosh.scoring import BM25F, BM25FScorer

from index import Document, SearchIndex
from index.analysis import make_analyzer, query_terms
from index.engine import BM25_B, BM25_K1, EXPANSION_BOOST
from index.scoring import LiveStats, PostingCache, TermQuery, live_field_lengths, score

WORDS = [
    "nginx",
    "upload",
    "deploy",
    "kafka",
    "redis",
    "postgres",
    "terraform",
    "cache",
    "timeout",
    "retry",
    "queue",
    "worker",
    "billing",
    "invoice",
    "token",
    "session",
    "cluster",
    "ingress",
    "schema",
    "migration",
    "rollback",
    "replica",
]
WORKSPACES = ("webshop", "infra", "billing")
TERMS = sorted({t for w in WORDS for t in query_terms(make_analyzer(), w)})  # as indexed


class ReferenceBM25F(BM25F):
    """Whoosh's BM25F matchers, with statistics over live documents counted the slow way."""

    def __init__(self, reader: Any) -> None:
        super().__init__(B=BM25_B, K1=BM25_K1)
        self.reader = reader
        self.lengths = live_field_lengths(reader)

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: int = 1) -> Any:
        reader, lengths = self.reader, self.lengths
        if fieldname not in lengths:  # the workspace filter
            return super().scorer(searcher, fieldname, text, qf)
        live = reader.doc_count()
        # postings() leaves deleted documents out
        df = sum(1 for _ in reader.postings(fieldname, text).all_ids())

        class Scorer(BM25FScorer):
            def __init__(self) -> None:
                self.idf = log(live / (df + 1)) + 1
                self.avgfl = lengths[fieldname] / live
                self.B, self.K1, self.qf = BM25_B, BM25_K1, qf
                self.setup(searcher, fieldname, text)

        return Scorer()


def _doc(rng: random.Random, n: int) -> Document:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
    keywords = tuple(sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 4))}))
    workspace = rng.choice(WORKSPACES)
    return Document(f"{workspace}/{n}.md", f"{n:08x}", workspace, "note", body, keywords)


@pytest.fixture(scope="module")
def layered(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """An index written in many small commits, with replacements and deletions."""
    rng = random.Random(7)
    index = SearchIndex.open(tmp_path_factory.mktemp("layered") / "ix")
    keys: list[str] = []
    for batch in range(12):
        docs = [_doc(rng, batch * 40 + i) for i in range(40)]
        replaced = [
            _doc(rng, int(k.split("/")[1][:-3])) for k in rng.sample(keys, min(5, len(keys)))
        ]
        # a replaced memory keeps its key but may move workspace: drop the old key first
        gone = rng.sample(keys, min(4, len(keys)))
        index.apply([*docs, *[d for d in replaced if d.key not in gone]], gone)
        keys = [k for k in keys if k not in gone] + [d.key for d in docs]
    return index


def _stats(index: SearchIndex) -> LiveStats:
    index._reader()
    assert index._stats is not None
    return index._stats


def _reference(index: SearchIndex, query: TermQuery, allowed: list[str] | None) -> dict[int, float]:
    searcher = index._reader()
    reference = searcher.__class__(searcher.reader(), weighting=ReferenceBM25F(searcher.reader()))
    per_term = [Or([Term("content", t), Term("keywords", t)]) for t in query.terms]
    whoosh_query: Query = And(per_term) if query.require_all else Or(per_term)
    if query.extra:
        extra = [Term("content", t, boost=query.extra_boost) for t in query.extra]
        whoosh_query = Or([whoosh_query, *extra])
    where = Or([Term("workspace", w) for w in allowed]) if allowed else None
    results = reference.search(whoosh_query, limit=None, filter=where)
    return {r.docnum: r.score for r in results}


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=4, unique=True),
    require_all=st.booleans(),
    extra=st.lists(st.sampled_from(TERMS), max_size=3, unique=True),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
)
def test_scores_equal_whoosh_matchers(
    layered: SearchIndex,
    terms: list[str],
    require_all: bool,
    extra: list[str],
    allowed: list[str] | None,
) -> None:
    assert len(layered._reader().reader().leaf_readers()) > 1  # the layout under test
    query = TermQuery(
        tuple(terms),
        require_all=require_all,
        extra=tuple(t for t in extra if t not in terms),
        extra_boost=EXPANSION_BOOST,
    )
    expected = _reference(layered, query, allowed)
    got = score(
        layered._reader().reader(),
        _stats(layered),
        PostingCache(limit=50),  # small: entries are evicted and read again mid-query
        query,
        b=BM25_B,
        k1=BM25_K1,
        allowed=allowed,
        limit=10_000,
    )
    assert {n for _, n in got} == set(expected)
    assert got or not expected
    for value, n in got:
        assert value == pytest.approx(expected[n], rel=1e-12)


def test_posting_cache_serves_a_second_query_without_reading(layered: SearchIndex) -> None:
    cache = PostingCache()
    reader = layered._reader().reader()
    query = TermQuery(("nginx", "kafka"), require_all=False)
    # fresh statistics each time: their own cache of term scores would hide the postings'
    stats = [LiveStats(reader, _stats(layered).lengths) for _ in range(2)]
    first = score(reader, stats[0], cache, query, b=BM25_B, k1=BM25_K1, limit=50)
    cached = dict(cache._lists)
    assert cached
    second = score(reader, stats[1], cache, query, b=BM25_B, k1=BM25_K1, limit=50)
    assert second == first
    assert all(cache._lists[key] is value for key, value in cached.items())


def test_search_after_a_merge_forgets_merged_segments(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    rng = random.Random(3)
    for batch in range(3):
        index.apply([_doc(rng, batch * 10 + i) for i in range(10)])
        index.search("nginx", limit=5, any_term=True)
    before = {key[0] for key in index._postings._lists}
    index._ix.optimize()  # one segment replaces the three
    hits = index.search("nginx", limit=50, any_term=True)
    after = {key[0] for key in index._postings._lists}
    assert len(after) == 1 and not after & before
    assert {h.document.key for h in hits} == {
        d.key for d in index.documents() if "nginx" in d.content.split() or "nginx" in d.keywords
    }
    index.close()


def test_an_empty_index_finds_nothing(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    assert index.search("nginx", limit=5) == []
    assert index.search("nginx", limit=5, any_term=True, expansion=["kafka"]) == []
    index.close()
