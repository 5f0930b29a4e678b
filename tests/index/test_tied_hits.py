"""Hundreds of documents tied at the last place: a search returns the first keys among them,
the same hits and scores as ranking every match and cutting the list."""

from __future__ import annotations

import random

import pytest

from memstore.index import Document, SearchIndex


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """300 memories of one shape (they score alike), a few closer ones, in many segments."""
    rng = random.Random(5)
    index = SearchIndex.open(tmp_path_factory.mktemp("tied") / "ix")
    keys = list(range(300))
    rng.shuffle(keys)  # document numbers in another order than keys
    for start in range(0, 300, 30):
        docs = [
            Document(
                f"ws/{n:04d}.md",
                f"{n:08x}",
                "ws" if n % 7 else "other",
                "note",
                f"timed add {n} behaves differently after the upgrade"
                + (" kestrel" if n % 50 == 3 else ""),
            )
            for n in keys[start : start + 30]
        ]
        index.apply(docs)
    return index


@pytest.mark.parametrize("limit", [1, 3, 5, 12])
@pytest.mark.parametrize("coverage", [False, True])
@pytest.mark.parametrize("where", [None, {"ws"}])
def test_the_first_keys_among_tied_hits_come_back(
    tied: SearchIndex, limit: int, coverage: bool, where: set[str] | None
) -> None:
    query = "timed kestrel upgrade"
    hits = tied.search(query, workspaces=where, limit=limit, any_term=True, coverage=coverage)
    every = tied.search(query, workspaces=where, limit=1000, any_term=True, coverage=coverage)
    assert len(every) > 100  # most of them tie
    ranked = sorted(every, key=lambda h: (-round(h.score, 6), h.document.key))[:limit]
    assert [(h.document.key, h.score, h.coverage) for h in hits] == [
        (h.document.key, h.score, h.coverage) for h in ranked
    ]
