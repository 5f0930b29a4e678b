"""A new memory whose rarest words are all its own (a ticket, a build id, a host) still gets
its contradiction hint in a large vault, where an any-word search keeps only a query's few
rarest terms: those words match nothing, and no memory used to be compared at all."""

from __future__ import annotations

import random
from typing import Any

import pytest

from memstore.core.model import AddResult
from memstore.index import reader as index_reader
from memstore.service import hints
from memstore.service.store import Store
from tests.index.test_posting_reads import WORDS as FILLER

STORED = "The dev server listens on port 8080; change it in vite.config.ts."
CHANGED = "The dev server listens on port 3000; change it in vite.config.ts."
OWN_WORDS = " Seen in ticket OPS-48213 on build 7f3a9c1e, host web-12ab."


def _fill(store: Store, count: int) -> None:
    """Other memories of the workspace, none about the dev server."""
    rng = random.Random(4)
    for n in range(count):
        store.add(f"{' '.join(rng.sample(FILLER, 5))} note {n}", workspace="webshop")


@pytest.mark.parametrize("large", [True, False])
def test_a_text_of_its_own_words_is_compared_in_a_large_vault(
    store: Store, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    stored = store.add(STORED, workspace="webshop")
    _fill(store, 24)
    if large:  # 26 memories count as a large index: the query keeps its 3 rarest terms
        monkeypatch.setattr(index_reader, "COMMON_TERM_MIN", 20)
    plain = hinted_add(store, CHANGED, workspace="webshop").contradicts
    own = hinted_add(store, CHANGED + OWN_WORDS, workspace="webshop").contradicts
    assert [c.id for c in plain] == [stored.id]
    assert [(c.id, c.kind, c.detail) for c in own] == [(c.id, c.kind, c.detail) for c in plain]


def test_the_query_is_the_text_when_a_rare_word_is_held(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where one of its rarest words is held by another memory, the hint searches the text
    as before (the same candidates), and with none held at all nothing is searched. It is
    asked after the add: the new memory's own holding of its words is not counted."""
    store.add(STORED, workspace="webshop")
    _fill(store, 24)
    monkeypatch.setattr(index_reader, "COMMON_TERM_MIN", 20)
    search = store.indexer.search
    store.add(CHANGED + OWN_WORDS, workspace="webshop")
    own = hints._candidate_query(search, CHANGED + OWN_WORDS)
    assert "7f3a9c1e" not in own.terms and "8080" not in own.terms and "3000" not in own.terms
    assert set(own.terms) < set(search_terms(CHANGED + OWN_WORDS))
    text = "The vite.config.ts port, build 7f3a9c1e"
    store.add(text, workspace="webshop")
    assert hints._candidate_query(search, text).terms == search_terms(text)
    alone = "zzqx 7f3a9c1f qwv-991"
    assert hinted_add(store, alone, workspace="webshop").contradicts == ()
    assert hints._candidate_query(search, alone).terms == ()


def hinted_add(store: Store, text: str, **options: Any) -> AddResult:
    return store.hint(store.add(text, **options), text)


def search_terms(text: str) -> tuple[str, ...]:
    from memstore.index import Query

    return Query.of(text).terms
