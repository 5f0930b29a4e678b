"""Recall with the concept thesaurus (index/concepts.py): a word a memory writes another way
still finds it, below the query's own words, and never makes a hit confident by itself."""

from __future__ import annotations

import pytest

from memstore.catalog import retrieval
from memstore.core import ranking
from memstore.service.store import Store

NOTES = {
    "darwin": "On darwin the file watcher needs fsevents; chokidar falls back to polling without it.",
    "ignore": "The file watcher ignores node_modules, dist and coverage folders.",
    "rollback": "To undo a bad api release run helm rollback api 0; the previous revision returns.",
    "notes": "The api release notes are kept in CHANGELOG.md, one entry per release.",
}


@pytest.fixture
def ids(store: Store) -> dict[str, str]:
    return {name: store.add(text, workspace="app").id for name, text in NOTES.items()}


def first(store: Store, prompt: str) -> str:
    return store.search(prompt, workspace="app").hits[0].id


@pytest.mark.parametrize(
    ("prompt", "want"),
    [
        ("the file watcher is slow on my mac", "darwin"),
        ("how do I revert the api release?", "rollback"),
    ],
)
def test_a_memory_that_writes_the_concept_another_way_ranks_first(
    store: Store, ids: dict[str, str], prompt: str, want: str
) -> None:
    assert first(store, prompt) == ids[want]


def test_without_concepts_the_other_memory_would_win(
    store: Store, ids: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "CONCEPT_BOOST", 0.0)
    assert first(store, "the file watcher is slow on my mac") != ids["darwin"]
    assert first(store, "how do I revert the api release?") != ids["rollback"]


def test_a_word_the_memory_holds_outranks_its_concepts(store: Store, ids: dict[str, str]) -> None:
    assert first(store, "rollback the api") == ids["rollback"]
    assert first(store, "api release notes") == ids["notes"]


def test_a_concept_alone_is_never_a_confident_hit(store: Store, ids: dict[str, str]) -> None:
    result = store.search("macbook", workspace="app")  # the vault says darwin, never mac
    assert [hit.id for hit in result.hits] == [ids["darwin"]]
    assert result.hits[0].weak


def test_concept_credit_when_turned_on_counts_a_share_of_the_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    weights = {"revert": 1.0, "prod": 1.0}
    assert ranking.evidence(weights, {"prod"}, (), related={"revert"}) == ranking.Evidence(0.5, 1.0)
    monkeypatch.setattr(ranking, "CONCEPT_CREDIT", 0.5)
    assert ranking.evidence(weights, {"prod"}, (), related={"revert"}) == ranking.Evidence(
        0.75, 1.5
    )
    # a word the memory holds itself is never also credited through its concept
    assert ranking.evidence(weights, {"prod", "revert"}, (), related={"revert"}).share == 1.0
