"""Scoring without numpy (index/plain.py) gives scoring.py's numpy results: the same pairs,
the same floats, the same counts, on an index with many segments, replacements, deletions,
accented words and workspaces."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.index import Document, SearchIndex, bulk, plain, scoring
from memstore.index.analysis import make_analyzer, query_terms
from memstore.index.reader import BM25_B, BM25_K1, EXACT_BOOST, EXPANSION_BOOST
from memstore.index.scoring import LiveStats, PostingCache, TermQuery, score
from tests.index.test_scoring import write_layers

WORDS = [
    *("nginx", "upload", "deploy", "kafka", "redis", "postgres", "terraform", "cache"),
    *("timeout", "retry", "queue", "worker", "billing", "invoice", "token", "session"),
    *("café", "résumé", "naïve", "crème", "rare1", "rare2", "once"),
]
WORKSPACES = ("webshop", "infra", "billing", "global")
TERMS = sorted({t for w in WORDS for t in query_terms(make_analyzer(), w)} | {"absent"})
EXACT = ["café", "résumé", "naïve", "crème", "cafe"]


def _doc(rng: random.Random, n: int) -> Document:
    # common words often, the rare ones seldom: long and short posting lists, ties
    common = WORDS[:16]
    body = " ".join(
        rng.choice(WORDS) if rng.random() < 0.2 else rng.choice(common)
        for _ in range(rng.randint(1, 60))
    )
    keywords = tuple(sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 4))}))
    workspace = rng.choice(WORKSPACES)
    return Document(f"{workspace}/{n}.md", f"{n:08x}", workspace, "note", body, keywords)


@pytest.fixture(scope="module")
def layered(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """An index written in many commits, with replacements and deletions."""
    index = SearchIndex.open(tmp_path_factory.mktemp("plain") / "ix")
    write_layers(index, random.Random(11), _doc, batches=10, size=60, replace=8, delete=6)
    return index


def _both(index: SearchIndex) -> tuple[tuple[LiveStats, PostingCache], ...]:
    reader = index.reader.searcher().reader()
    stats = index.reader._stats
    assert stats is not None
    return tuple(
        (LiveStats(reader, stats.lengths), PostingCache(plain=mode)) for mode in (False, True)
    )


def test_plain_is_not_the_default_and_imports_no_numpy_itself() -> None:
    assert PostingCache().plain is scoring.PLAIN is False
    assert "numpy" not in plain.__dict__ and "np" not in plain.__dict__


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=5),
    require_all=st.booleans(),
    extra=st.lists(st.sampled_from(TERMS), max_size=4, unique=True),
    exact=st.lists(st.sampled_from(EXACT), max_size=2, unique=True),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
    limit=st.integers(1, 60),
    count=st.booleans(),
)
def test_plain_scores_equal_numpy_scores(
    layered: SearchIndex,
    terms: list[str],
    require_all: bool,
    extra: list[str],
    exact: list[str],
    allowed: list[str] | None,
    limit: int,
    count: bool,
) -> None:
    query = TermQuery(
        tuple(terms),
        require_all=require_all,
        extra=tuple(t for t in extra if t not in terms),
        extra_boost=EXPANSION_BOOST,
        exact=tuple(exact),
        exact_boost=EXACT_BOOST,
    )
    results = []
    reader = layered.reader.searcher().reader()
    for stats, cache in _both(layered):
        for _ in range(2):  # the second time from the kept vectors
            held: dict[int, int] | None = {} if count else None
            got = score(
                reader,
                stats,
                cache,
                query,
                b=BM25_B,
                k1=BM25_K1,
                allowed=allowed,
                limit=limit,
                held=held,
            )
            results.append((got, held))
    assert results[0] == results[1] == results[2] == results[3]
    # the very same doubles, not merely equal to six places
    assert [v.hex() for v, _ in results[0][0]] == [v.hex() for v, _ in results[2][0]]


def test_plain_live_lengths_equal_numpy_lengths(layered: SearchIndex) -> None:
    reader = layered.reader.searcher().reader()
    segments = [s for s, _ in reader.leaf_readers() if s.doc_count_all()]
    assert len(segments) > 1 and any(s.has_deletions() for s in segments)
    for segment in segments:
        arrays = scoring.segment_field_lengths(segment)
        assert scoring.segment_field_lengths(segment, arrays=False) == arrays
        for field in scoring.SCORED_FIELDS:
            assert bytes(scoring.field_codes(segment, field)) == scoring.field_bytes(segment, field)


def test_plain_workspace_filter_and_deleted_documents_equal_numpy_masks(
    layered: SearchIndex,
) -> None:
    reader = layered.reader.searcher().reader()
    for segment, _ in reader.leaf_readers():
        if not segment.doc_count_all():
            continue
        mask = PostingCache(plain=False).holding(segment, "workspace", ["webshop", "global"])
        found = PostingCache(plain=True).holding(segment, "workspace", ["webshop", "global"])
        assert found == {int(n) for n in mask.nonzero()[0]}
        deleted = PostingCache(plain=False).deleted(segment)
        assert set(PostingCache(plain=True).deleted(segment)) == {int(n) for n in deleted}


@pytest.mark.parametrize("size", [0, 1, 500, 30_000])
def test_a_small_pool_groups_its_postings_as_numpy_does(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(size)
    runs = bulk.Counted(1.0)
    for docnum in range(size // 10):
        runs.add(docnum, Counter({rng.choice(TERMS): rng.randint(1, 5) for _ in range(10)}))
    monkeypatch.setattr(bulk, "PLAIN_POSTINGS", 0)
    by_numpy = list(runs.by_term())
    monkeypatch.setattr(bulk, "PLAIN_POSTINGS", 10**9)
    assert list(runs.by_term()) == by_numpy
