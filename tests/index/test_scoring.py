"""Term-at-a-time BM25F gives Whoosh's own scores, on an index with many segments and deletions."""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable
from math import log
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from whoosh.query import And, Or, Query, Term
from whoosh.scoring import BM25F, BM25FScorer

from memstore.index import Document, SearchIndex, scoring
from memstore.index.analysis import make_analyzer, query_terms
from memstore.index.reader import BM25_B, BM25_K1, EXPANSION_BOOST
from memstore.index.scoring import (
    SCORED_FIELDS,
    LiveStats,
    PostingCache,
    TermQuery,
    read_postings,
    score,
    segment_field_lengths,
)


def live_field_lengths(reader: Any) -> dict[str, int]:
    """Sum the field lengths of live documents, segment by segment (what the index keeps
    summed: IndexReader._live_lengths; Whoosh's own totals keep merged-away ones)."""
    totals = dict.fromkeys(SCORED_FIELDS, 0)
    for segment, _ in reader.leaf_readers():
        if segment.doc_count_all():
            for fieldname, length in segment_field_lengths(segment).items():
                totals[fieldname] += length
    return totals


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
        self.lengths = _live_lengths_one_by_one(reader)

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


def _live_lengths_one_by_one(reader: Any) -> dict[str, int]:
    """Each scored field's length summed over live documents, one document at a time."""
    return {
        field: sum(reader.doc_field_length(n, field) or 0 for n in reader.all_doc_ids())
        for field in ("content", "keywords")
    }


def _doc(rng: random.Random, n: int) -> Document:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
    keywords = tuple(sorted({rng.choice(WORDS) for _ in range(rng.randint(0, 4))}))
    workspace = rng.choice(WORKSPACES)
    return Document(f"{workspace}/{n}.md", f"{n:08x}", workspace, "note", body, keywords)


@pytest.fixture(scope="module")
def layered(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """An index written in many small commits, with replacements and deletions."""
    index = SearchIndex.open(tmp_path_factory.mktemp("layered") / "ix")
    write_layers(index, random.Random(7), _doc, batches=12, size=40, replace=5, delete=4)
    return index


def write_layers(
    index: SearchIndex,
    rng: random.Random,
    doc: Callable[[random.Random, int], Document],
    *,
    batches: int,
    size: int,
    replace: int,
    delete: int,
) -> None:
    """Write `batches` commits of `size` new documents into `index`, each also replacing
    up to `replace` earlier ones and deleting up to `delete`."""
    keys: list[str] = []
    for batch in range(batches):
        docs = [doc(rng, batch * size + i) for i in range(size)]
        replaced = [
            doc(rng, int(k.split("/")[1][:-3])) for k in rng.sample(keys, min(replace, len(keys)))
        ]
        # a replaced memory keeps its key but may move workspace: drop the old key first
        gone = rng.sample(keys, min(delete, len(keys)))
        index.apply([*docs, *[d for d in replaced if d.key not in gone]], gone)
        keys = [k for k in keys if k not in gone] + [d.key for d in docs]


def _stats(index: SearchIndex) -> LiveStats:
    index.reader.searcher()
    assert index.reader._stats is not None
    return index.reader._stats


def _reference(index: SearchIndex, query: TermQuery, allowed: list[str] | None) -> dict[int, float]:
    searcher = index.reader.searcher()
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
    assert len(layered.reader.searcher().reader().leaf_readers()) > 1  # the layout under test
    query = TermQuery(
        tuple(terms),
        require_all=require_all,
        extra=tuple(t for t in extra if t not in terms),
        extra_boost=EXPANSION_BOOST,
    )
    expected = _reference(layered, query, allowed)
    got = score(
        layered.reader.searcher().reader(),
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


def _score_all(index: SearchIndex, query: TermQuery, allowed: list[str] | None) -> dict[int, float]:
    got = score(
        index.reader.searcher().reader(),
        _stats(index),
        PostingCache(limit=50),
        query,
        b=BM25_B,
        k1=BM25_K1,
        allowed=allowed,
        limit=10_000,
    )
    return {n: value for value, n in got}


def _term_in_python(
    segment: Any,
    stats: LiveStats,
    cache: PostingCache,
    text: str,
    fields: tuple[str, ...],
    boost: float,
) -> dict[int, float]:
    out: dict[int, float] = {}
    for field in fields:
        postings = cache.postings(segment, field, text)
        values = stats.field_values(segment, field, text, postings, cache, BM25_B, BM25_K1)
        for n, value in zip(postings[0], values, strict=True):
            value = value * boost if boost != 1.0 else value
            out[n] = out[n] + value if n in out else value
    return out


def _summed_in_python(
    index: SearchIndex, query: TermQuery, allowed: list[str] | None
) -> dict[int, float]:
    """Each live document's score as plain Python adds it: per term, its fields' values in
    field order; then the terms in the query's order, then the extra terms (boosted)."""
    reader = index.reader.searcher().reader()
    stats, cache = _stats(index), PostingCache()
    found: dict[int, float] = {}
    for segment, base in reader.leaf_readers():
        if not segment.doc_count_all():
            continue

        def term(text: str, fields: tuple[str, ...], boost: float) -> dict[int, float]:
            return _term_in_python(segment, stats, cache, text, fields, boost)  # noqa: B023

        per_term = [term(t, ("content", "keywords"), 1.0) for t in query.terms]
        held = [set(scores) for scores in per_term]
        docs = set.intersection(*held) if query.require_all else set().union(*held)
        sums = {n: 0.0 for n in docs}
        for scores in per_term:
            for n in docs:
                sums[n] = sums[n] + scores[n] if n in scores else sums[n]
        for text in query.extra:
            if text not in query.terms:
                for n, value in term(text, ("content",), query.extra_boost).items():
                    sums[n] = sums.get(n, 0.0) + value
        deleted = segment.deleted_docs_set if segment.has_deletions() else set()
        for n, value in sums.items():
            workspace = segment.stored_fields(n)["workspace"]
            if n not in deleted and (allowed is None or workspace in allowed):
                found[base + n] = value
    return found


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=4),  # repeats count twice
    require_all=st.booleans(),
    extra=st.lists(st.sampled_from(TERMS), max_size=3, unique=True),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
)
def test_scores_are_the_floats_of_adding_term_by_term(
    layered: SearchIndex,
    terms: list[str],
    require_all: bool,
    extra: list[str],
    allowed: list[str] | None,
) -> None:
    # equal, not near: a rebuilt index, a daemon and an in-process search agree exactly
    query = TermQuery(
        tuple(terms),
        require_all=require_all,
        extra=tuple(t for t in extra if t not in terms),
        extra_boost=EXPANSION_BOOST,
    )
    assert _score_all(layered, query, allowed) == _summed_in_python(layered, query, allowed)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=4),
    any_term=st.booleans(),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
)
def test_coverage_counted_from_postings_equals_reading_the_text(
    layered: SearchIndex, terms: list[str], any_term: bool, allowed: list[str] | None
) -> None:
    text = " ".join(terms)  # a word twice counts once, as `coverage` counts it
    hits = layered.search(text, workspaces=allowed, limit=30, any_term=any_term, coverage=True)
    plain = layered.search(text, workspaces=allowed, limit=30, any_term=any_term)
    assert [(h.document.key, h.score) for h in hits] == [(h.document.key, h.score) for h in plain]
    assert [h.coverage for h in hits] == [layered.coverage(h.document, text) for h in hits]
    assert all(h.coverage is None for h in plain)


def test_live_field_lengths_leave_deleted_documents_out(layered: SearchIndex) -> None:
    reader = layered.reader.searcher().reader()
    assert reader.doc_count_all() > reader.doc_count()  # deleted documents are there
    expected = _live_lengths_one_by_one(reader)
    assert live_field_lengths(reader) == expected
    assert all(expected.values())
    whoosh_totals = {f: reader.field_length(f) for f in expected}
    assert whoosh_totals != expected  # Whoosh's own totals still count the deleted ones


def test_posting_lists_read_from_the_map_equal_whoosh_matchers(layered: SearchIndex) -> None:
    blocks = 0
    for segment, _ in layered.reader.searcher().reader().leaf_readers():
        for field in ("content", "keywords", "workspace"):
            for raw in segment.lexicon(field):
                text = raw.decode() if isinstance(raw, bytes) else raw
                # Whoosh's own matcher, one posting a call (deleted documents included)
                matcher = segment._terms.matcher(
                    field, segment._text_to_bytes(field, text), segment.schema[field].format
                )
                ids, weights = [], []
                while matcher.is_active():
                    ids.append(matcher.id())
                    weights.append(matcher.weight())
                    matcher.next()
                got_ids, got_weights = read_postings(segment, field, text)
                if len(got_weights) == 1:  # one weight for all of them, kept once
                    got_weights *= len(got_ids)
                assert (list(got_ids), list(got_weights)) == (ids, weights), (field, text)
                if len(ids) > 128:  # more than one block (whoosh3 writes 128 a block) …
                    fresh = segment._terms.matcher(
                        field, segment._text_to_bytes(field, text), segment.schema[field].format
                    )
                    assert scoring._read_blocks(fresh, array("i"), array("d"))  # … from the map
                    blocks += 1
    assert blocks  # the multi-block case was read


def test_posting_cache_serves_a_second_query_without_reading(layered: SearchIndex) -> None:
    cache = PostingCache()
    reader = layered.reader.searcher().reader()
    query = TermQuery(("nginx", "kafka"), require_all=False)
    # fresh statistics each time: their own cache of term scores would hide the postings'
    stats = [LiveStats(reader, _stats(layered).lengths) for _ in range(2)]
    first = score(reader, stats[0], cache, query, b=BM25_B, k1=BM25_K1, limit=50)
    cached = dict(cache._lists)
    assert cached
    second = score(reader, stats[1], cache, query, b=BM25_B, k1=BM25_K1, limit=50)
    assert second == first
    assert all(cache._lists[key] is value for key, value in cached.items())


@pytest.mark.parametrize("plain", [False, True])
def test_a_limit_of_zero_returns_nothing(layered: SearchIndex, plain: bool) -> None:
    cache = PostingCache()
    cache.plain = plain  # index/plain.py's path as well as numpy's
    reader = layered.reader.searcher().reader()
    query = TermQuery(("nginx", "kafka"), require_all=False)
    held: dict[int, int] = {}
    for limit in (0, -1):
        got = score(reader, _stats(layered), cache, query, b=BM25_B, k1=BM25_K1, limit=limit)
        assert got == []
        kept = score(
            reader, _stats(layered), cache, query, b=BM25_B, k1=BM25_K1, limit=limit, held=held
        )
        assert kept == [] and held == {}
    assert score(reader, _stats(layered), cache, query, b=BM25_B, k1=BM25_K1, limit=1)


def test_search_after_a_merge_forgets_merged_segments(tmp_path: Path) -> None:
    index = SearchIndex.open(tmp_path / "ix")
    rng = random.Random(3)
    for batch in range(3):
        index.apply([_doc(rng, batch * 10 + i) for i in range(10)])
        index.search("nginx", limit=5, any_term=True)
    before = {key[0] for key in index.reader._postings._lists}
    index._ix.optimize()  # one segment replaces the three
    hits = index.search("nginx", limit=50, any_term=True)
    after = {key[0] for key in index.reader._postings._lists}
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


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=3, unique=True),
    require_all=st.booleans(),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
    limit=st.integers(min_value=1, max_value=12),
)
def test_the_best_and_those_tied_with_the_last_equal_a_full_sort(
    layered: SearchIndex,
    terms: list[str],
    require_all: bool,
    allowed: list[str] | None,
    limit: int,
) -> None:
    # equal documents score equal: ties at the cut are common here, across segments
    query = TermQuery(tuple(terms), require_all=require_all)
    ranked = sorted(_reference(layered, query, allowed).items(), key=lambda p: (-p[1], p[0]))
    wanted = {n for n, _ in ranked[:limit]}
    if len(ranked) > limit:
        last = round(ranked[limit - 1][1], 6)
        wanted |= {n for n, value in ranked if round(value, 6) == last}
    reader = layered.reader.searcher().reader()
    got = score(
        reader,
        _stats(layered),
        layered.reader._postings,
        query,
        b=BM25_B,
        k1=BM25_K1,
        allowed=allowed,
        limit=limit,
    )
    assert {n for _, n in got} == wanted


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=4),
    require_all=st.booleans(),
    extra=st.lists(st.sampled_from(TERMS), max_size=3, unique=True),
    allowed=st.one_of(st.none(), st.lists(st.sampled_from(WORKSPACES), min_size=1, unique=True)),
    limit=st.integers(1, 40),
)
def test_a_limited_query_keeps_exactly_the_best_of_all_and_their_ties(
    layered: SearchIndex,
    terms: list[str],
    require_all: bool,
    extra: list[str],
    allowed: list[str] | None,
    limit: int,
) -> None:
    query = TermQuery(
        tuple(terms),
        require_all=require_all,
        extra=tuple(t for t in extra if t not in terms),
        extra_boost=EXPANSION_BOOST,
    )
    every = sorted(_score_all(layered, query, allowed).items(), key=lambda p: (-p[1], p[0]))
    wanted = {(value, n) for n, value in every[:limit]}
    if len(every) > limit:
        last = round(every[limit - 1][1], 6)
        wanted |= {(value, n) for n, value in every if round(value, 6) == last}
    got = score(
        layered.reader.searcher().reader(),
        _stats(layered),
        layered.reader._postings,
        query,
        b=BM25_B,
        k1=BM25_K1,
        allowed=allowed,
        limit=limit,
    )
    assert set(got) == wanted and len(got) == len(wanted)


def test_cached_scores_follow_the_index_and_stay_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstore.index.scoring.CACHE_VECTORS", 40)  # evicted mid-query
    rng = random.Random(11)
    index = SearchIndex.open(tmp_path / "ix")
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(30)]
    for batch in range(4):
        index.apply([_doc(rng, batch * 30 + i) for i in range(30)])
        fresh = SearchIndex.open(tmp_path / "ix")  # nothing cached
        for text in queries * 2:  # the second time from the cache
            for any_term in (False, True):
                got = index.search(text, limit=8, any_term=any_term)
                want = fresh.search(text, limit=8, any_term=any_term)
                assert [(h.document.key, h.score) for h in got] == [
                    (h.document.key, h.score) for h in want
                ]
        fresh.close()
        assert index.reader._stats is not None and index.reader._stats.vectors
        longest = max(len(ids) for ids, _ in index.reader._stats.vectors.values())
        assert index.reader._stats.vectors_size <= 40 + longest
    index.close()


def test_entity_look_ups_see_writes_of_this_and_other_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "memstore.index.entity_table.CACHE_ENTITY_ROWS", 2
    )  # evicted between look-ups
    reader = SearchIndex.open(tmp_path / "ix")
    writer = SearchIndex.open(tmp_path / "ix")  # another process's connection, in effect
    first = Document("w/a.md", "aaaaaaaa", "w", "note", "ask @maria about tmp_path")
    assert reader.entity_keys(["@maria", "tmp_path"]) == {}
    writer.apply([first])
    assert reader.entity_keys(["@Maria", "tmp_path"]) == {"w/a.md": 2}
    second = Document("w/b.md", "bbbbbbbb", "w", "note", "@maria again")
    reader.apply([second])
    assert reader.entity_keys(["@maria"]) == {"w/a.md": 1, "w/b.md": 1}
    writer.apply([], ["w/a.md"])
    assert reader.entity_keys(["@maria", "tmp_path"]) == {"w/b.md": 1}
    assert reader.entity_keys(["tmp_path", "@maria"]) == {"w/b.md": 1}
    writer.close()
    reader.close()
