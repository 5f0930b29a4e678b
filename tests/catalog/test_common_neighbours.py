"""A recall's neighbours leave out entities very many memories mention (catalog/retrieval.py
`with_neighbors`, index/entity_table.py COMMON_ENTITY): a person's @name held by thousands of
memories says nothing about which belong together, and probing its holders was ~37% of a
recall at a million memories."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.catalog import retrieval
from memstore.core.config import Settings
from memstore.service.store import Store

HIT = "The payment webhook retries come from src/billing/webhook_retry.py, says @ana"
SAME_FILE = "Raised the backoff in src/billing/webhook_retry.py to thirty seconds"
ANA = [
    "@ana prefers squash merges on the docs repository",
    "@ana owns the staging cluster upgrade this quarter",
    "@ana wrote the onboarding checklist for new hires",
]


def _neighbours(vault: Path) -> tuple[str, list[str], list[str]]:
    settings = Settings(vault=vault, source="test", session="s", host="test-host")
    with Store.open(settings) as store:
        others = [store.add(text, workspace="app").id for text in ANA]
        same = store.add(SAME_FILE, workspace="app").id
        hit = store.add(HIT, workspace="app").id
        result = store.recall("payment webhook retries", workspace="app", k=1)
    assert [h.id for h in result.hits] == [hit]
    assert set(others).isdisjoint({same, hit})
    return same, list(result.hits[0].neighbors), others


def test_an_entity_few_memories_mention_makes_neighbours(vault: Path) -> None:
    same, neighbours, ana = _neighbours(vault)
    # @ana is held by 4, not common here: two of the four sharing one entity (recall shows two)
    assert len(neighbours) == 2 and set(neighbours) <= {same, *ana}


def test_an_entity_more_memories_mention_than_the_bound_makes_none(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "COMMON_ENTITY", 3, raising=False)  # @ana: 4 holders
    same, neighbours, _ = _neighbours(vault)
    assert neighbours == [same]  # the file is shared by two; @ana says nothing
