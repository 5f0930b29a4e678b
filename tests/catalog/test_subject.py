"""A memory's leading label names its subject: a query naming it ranks the labelled memory
above one that holds the same words elsewhere (catalog/subject.py, SUBJECT_BOOST;
docs/retrieval.md, "A memory's subject")."""

from __future__ import annotations

import pytest

from memstore.catalog import subject
from memstore.index import terms
from memstore.service.store import Store

ELSEWHERE = "Staging replicas listen on the postgres port 5432"
LABELLED = "Postgres: locally it listens on port 5433, since 5432 is taken by the system install"
PROMPT = "which port does postgres listen on?"


def _ids(store: Store, prompt: str) -> list[str]:
    return [h.id for h in store.search(prompt, workspace="app").hits]


def test_the_memory_labelled_with_the_subject_comes_first(store: Store) -> None:
    elsewhere = store.add(ELSEWHERE, workspace="app").id
    labelled = store.add(LABELLED, workspace="app").id
    assert _ids(store, PROMPT) == [labelled, elsewhere]


def test_without_the_boost_the_shorter_memory_wins(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subject, "SUBJECT_BOOST", 0.0)
    elsewhere = store.add(ELSEWHERE, workspace="app").id
    labelled = store.add(LABELLED, workspace="app").id
    assert _ids(store, PROMPT) == [elsewhere, labelled]


def test_a_query_not_naming_the_label_keeps_its_order(store: Store) -> None:
    elsewhere = store.add(ELSEWHERE, workspace="app").id
    store.add(LABELLED, workspace="app")
    assert _ids(store, "which port do the replicas listen on?")[0] == elsewhere


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Nate: I'm playing Xenoblade Chronicles", "nate"),
        ("## Decision: the pricing service uses FastAPI", "decision"),
        ("Kafka topic naming: <domain>.<entity>.<event>", "kafka topic naming"),
        ("https://example.com/docs: the API reference", ""),
        ("When the deploy script runs with force it does: a reset", ""),
        ("No label here, just a note", ""),
        ("\nNate: the label is on the first line only", ""),
    ],
)
def test_which_text_is_a_label(text: str, label: str) -> None:
    assert subject.label_terms(text) == terms(label)
