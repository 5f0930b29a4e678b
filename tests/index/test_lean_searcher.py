"""A one-shot search's searcher (index/lean_searcher.py) answers as Whoosh's Searcher over the
same index: the same hits, counts, stored fields and freshness; whatever else is asked of it
goes through a Searcher it builds once."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from whoosh.query import Term

from memstore.index import Document, SearchIndex, scoring
from memstore.index.lean_searcher import ReaderSearcher

WORDS = ["retry", "budget", "deploy", "cache", "kestrel", "ñandú", "façade", "queue", "pool"]
QUERIES = ["retry", "budget deploy", "kestrel pool", "cache queue façade", "ñandú", "deploying"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six segments of documents, then updates and deletions (old copies stay, deleted)."""
    rng = random.Random(5)
    root = tmp_path_factory.mktemp("lean-searcher") / "ix"
    index = SearchIndex.open(root)
    keys = []
    for start in range(0, 600, 100):
        batch = [
            Document(
                f"ws/{n:04d}.md",
                f"{n:08x}",
                "ws" if n % 4 else "other",
                "note",
                " ".join(rng.sample(WORDS, 3)) + f" note {n % 7}",
            )
            for n in range(start, start + 100)
        ]
        index.apply(batch)
        keys += [d.key for d in batch]
    index.apply([Document(k, "0", "ws", "note", "retry budget pool") for k in keys[::11]])
    index.apply([], deletes=keys[3::17])
    index.close()
    return root


@pytest.fixture
def plain() -> Iterator[None]:
    before = scoring.PLAIN
    scoring.use_plain_scoring()
    yield
    scoring.use_plain_scoring(before)


@pytest.mark.parametrize("any_term", [False, True])
@pytest.mark.parametrize("text", QUERIES)
def test_a_one_shot_search_gives_the_hits_of_whooshs_searcher(
    folder: Path, text: str, any_term: bool
) -> None:
    before = scoring.PLAIN
    found = []
    for one_shot in (True, False):
        scoring.use_plain_scoring(one_shot)
        index = SearchIndex.open(folder, create=False)
        try:
            hits = index.search(text, limit=20, any_term=any_term)
            kind = type(index.reader.searcher()).__name__
        finally:
            index.close()
            scoring.use_plain_scoring(before)
        found.append(([(h.document, h.score.hex(), h.coverage) for h in hits], kind))
    (lean, lean_kind), (whoosh, whoosh_kind) = found
    assert (lean_kind, whoosh_kind) == ("ReaderSearcher", "Searcher")
    assert lean == whoosh and lean


def test_it_answers_counts_stored_fields_and_freshness_as_the_searcher_does(
    folder: Path, plain: None
) -> None:
    index = SearchIndex.open(folder, create=False)
    ix = index._ix
    lean, whoosh = ReaderSearcher(ix.reader(), ix), ix.searcher()
    try:
        assert (lean.doc_count(), lean.doc_count_all()) == (
            whoosh.doc_count(),
            whoosh.doc_count_all(),
        )
        numbers = range(whoosh.doc_count_all())
        assert [lean.stored_fields(n) for n in numbers] == [
            whoosh.stored_fields(n) for n in numbers
        ]
        assert list(lean.all_stored_fields()) == list(whoosh.all_stored_fields())
        assert lean.frequency("content", "retri") == whoosh.frequency("content", "retri")
        assert lean.up_to_date() and whoosh.up_to_date()
        index.apply([Document("ws/new.md", "1", "ws", "note", "a new deploy")])
        assert not lean.up_to_date() and not whoosh.up_to_date()  # the index moved on
        # what only Whoosh's Searcher has: through one built over the same reader
        assert _others(lean) == _others(whoosh) != []
        assert lean.reader() is lean._searcher.reader()
    finally:
        lean.close()
        whoosh.close()
        index.close()
    assert lean.reader().is_closed  # closed once, through the searcher it built


def _others(searcher: object) -> list[int]:
    hits = searcher.search(Term("workspace", "other"), limit=None)  # type: ignore[attr-defined]
    return sorted(hit.docnum for hit in hits)


def test_a_reader_searcher_never_asked_for_more_closes_its_reader(folder: Path) -> None:
    index = SearchIndex.open(folder, create=False)
    try:
        lean = ReaderSearcher(index._ix.reader(), index._ix)
        with lean:
            assert lean.doc_count() > 0
        assert lean.reader().is_closed and lean._searcher is None
    finally:
        index.close()
