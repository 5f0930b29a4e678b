"""Top-k BM25 that reads only the blocks of long posting lists a query's best can be in
(index/pruning.py) returns what scoring every posting returns: the same documents, in the
same order, the very same doubles (compared as hex) and the same term counts, over generated
indexes with lists of many blocks, several segments, replacements, deletions and workspaces."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstore.index import Document, SearchIndex, postings, pruning
from memstore.index.analysis import make_analyzer, query_terms
from memstore.index.reader import BM25_B, BM25_K1, EXACT_BOOST, EXPANSION_BOOST
from memstore.index.scoring import LiveStats, PostingCache, TermQuery, score
from tests.index.test_scoring import write_layers

# Zipf-like: the first words in most documents (lists of several 128-posting blocks), the
# last in a few; repeated words give weights above 1 and ties.
WORDS = [
    *("deploy", "cache", "timeout", "retry", "queue", "worker", "billing", "invoice"),
    *("token", "session", "cluster", "ingress", "schema", "migration", "rollback", "replica"),
    *("kafka", "nginx", "redis", "postgres", "terraform", "once", "rare"),
]
WORKSPACES = ("webshop", "infra", "billing")
TERMS = sorted({t for w in WORDS for t in query_terms(make_analyzer(), w)} | {"absent"})


def _doc(rng: random.Random, n: int) -> Document:
    common = WORDS[:-2]  # Zipf-like over these; "once" in ~3% of documents, "rare" in the
    size = rng.randint(1, 30)  # first 40 (the first blocks of the first segment)
    words = [common[min(int(rng.paretovariate(0.9)) - 1, len(common) - 1)] for _ in range(size)]
    words += ["once"] if rng.random() < 0.03 else []
    words += ["rare"] if n < 40 and rng.random() < 0.3 else []
    keywords = tuple(sorted({rng.choice(WORDS[:12]) for _ in range(rng.randint(0, 3))}))
    workspace = rng.choice(WORKSPACES)
    return Document(f"{workspace}/{n}.md", f"{n:08x}", workspace, "note", " ".join(words), keywords)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """Four segments of ~500 documents, then small ones with replacements and deletions."""
    index = SearchIndex.open(tmp_path_factory.mktemp("pruning") / "ix")
    rng = random.Random(5)
    write_layers(index, rng, _doc, batches=4, size=500, replace=0, delete=0)
    write_layers(index, rng, _doc, batches=3, size=20, replace=30, delete=25)
    return index


def _run(index: SearchIndex, query: TermQuery, allowed: Any, limit: int, count: bool) -> Any:
    reader = index.reader.searcher().reader()
    stats = index.reader._stats
    assert stats is not None
    fresh, cache = LiveStats(reader, stats.lengths), PostingCache()
    out = []
    for _ in range(2):  # the second time with the first one's vectors and headers kept
        held: dict[int, int] | None = {} if count else None
        got = score(
            reader,
            fresh,
            cache,
            query,
            b=BM25_B,
            k1=BM25_K1,
            allowed=allowed,
            limit=limit,
            held=held,
        )
        out.append(([(v.hex(), n) for v, n in got], held))
    assert out[0] == out[1]
    return out[0]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=5),
    require_all=st.booleans(),
    extra=st.lists(st.sampled_from(TERMS), max_size=3, unique=True),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
    limit=st.integers(1, 45),
    count=st.booleans(),
)
def test_pruned_scoring_returns_what_scoring_every_posting_returns(
    big: SearchIndex,
    monkeypatch: pytest.MonkeyPatch,
    terms: list[str],
    require_all: bool,
    extra: list[str],
    allowed: list[str] | None,
    limit: int,
    count: bool,
) -> None:
    query = TermQuery(
        tuple(terms),
        require_all=require_all,
        extra=tuple(t for t in extra if t not in terms),
        extra_boost=EXPANSION_BOOST,
    )
    with monkeypatch.context() as patch:
        patch.setattr(pruning, "LONG_POSTINGS", 10**9)  # never pruned: every posting scored
        expected = _run(big, query, allowed, limit, count)
    monkeypatch.setattr(pruning, "LONG_POSTINGS", 0)  # always pruned
    assert _run(big, query, allowed, limit, count) == expected


def test_the_index_under_test_has_long_lists_and_pruning_reads_fewer_blocks(
    big: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = big.reader.searcher().reader()
    segment = max((s for s, _ in reader.leaf_readers()), key=lambda s: s.doc_count_all())
    blocks = postings.read_blocks(segment, "content", "deploy")
    assert blocks is not None and len(blocks.spans) >= 3
    read: list[int] = []
    decode = postings._decode

    def counted(*args: Any) -> None:
        read.append(1)
        decode(*args)

    monkeypatch.setattr(postings, "_decode", counted)
    # "deploy" is in most documents, "rare" in few: deploy's blocks are read where rare is
    query = TermQuery(("deploy", "rare"), require_all=True)
    reader, stats = big.reader.searcher().reader(), big.reader._stats
    assert stats is not None
    for long_postings in (0, 10**9):
        monkeypatch.setattr(pruning, "LONG_POSTINGS", long_postings)
        fresh, cache = LiveStats(reader, stats.lengths), PostingCache()
        for fieldname in ("content", "keywords"):  # the idf (read alike both ways) first
            fresh.idf(fieldname, "deploy", cache), fresh.idf(fieldname, "rare", cache)
        read.append(-1)
        score(reader, fresh, cache, query, b=BM25_B, k1=BM25_K1, limit=5)
        read.append(-1)
    marks = [i for i, n in enumerate(read) if n < 0]
    pruned, whole = marks[1] - marks[0] - 1, marks[3] - marks[2] - 1
    assert 0 < pruned < whole, (pruned, whole)


def test_exact_words_are_scored_the_whole_way(big: SearchIndex) -> None:
    query = TermQuery(("deploy",), require_all=False, exact=("café",), exact_boost=EXACT_BOOST)
    reader = big.reader.searcher().reader()
    segment = next(s for s, _ in reader.leaf_readers() if s.doc_count_all())
    stats = big.reader._stats
    cache = PostingCache()
    got = pruning.segment_best(segment, stats, cache, query, BM25_B, BM25_K1, 5, None, count=False)
    assert got is None


def test_blocks_read_from_their_headers_are_the_posting_lists(big: SearchIndex) -> None:
    reader = big.reader.searcher().reader()
    compared = 0
    for segment, _ in reader.leaf_readers():
        for fieldname in ("content", "keywords"):
            for text in TERMS:
                blocks = postings.read_blocks(segment, fieldname, text)
                if blocks is None:  # absent, or inlined in its term's entry
                    continue
                ids, weights = postings.read_postings(segment, fieldname, text)
                every = list(weights) if len(weights) == len(ids) else list(weights) * len(ids)
                got = blocks.read(range(len(blocks.spans)))
                assert list(got[0]) == list(ids) and list(got[1]) == every
                assert blocks.postings == len(ids) and blocks.last[-1] == ids[-1]
                # what a block's header bounds: its documents and their weights
                starts = [0, *(n + 1 for n in blocks.last[:-1])]
                for n, (first, last) in enumerate(zip(starts, blocks.last, strict=True)):
                    held = [w for i, w in zip(ids, every, strict=True) if first <= i <= last]
                    assert held and max(held) <= blocks.heaviest[n] * 1.000001
                compared += 1
    assert compared > 20
