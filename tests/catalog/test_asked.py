"""A memory that holds a prompt's words only in its own questions asks what the prompt asks:
it ranks below one that answers (catalog/retrieval.py, ASKED_DISCOUNT; docs/retrieval.md,
"Questions are not answers")."""

from __future__ import annotations

import pytest

from memstore.catalog import retrieval
from memstore.catalog.retrieval import _asked
from memstore.index import terms
from memstore.service.store import Store

QUESTION = "Has anyone looked at the flaky payments e2e test?"
ANSWER = "The payments e2e test is flaky: the stripe mock container starts after the suite"
PROMPT = "why is the payments e2e test flaky"


def test_a_memory_that_answers_ranks_above_one_that_asks_the_same(store: Store) -> None:
    asked = store.add(QUESTION, workspace="app").id
    answer = store.add(ANSWER, workspace="app").id
    assert [h.id for h in store.search(PROMPT, workspace="app").hits] == [answer, asked]


def test_without_the_discount_the_shorter_question_wins(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retrieval, "ASKED_DISCOUNT", 0.0)
    asked = store.add(QUESTION, workspace="app").id
    store.add(ANSWER, workspace="app")
    assert store.search(PROMPT, workspace="app").hits[0].id == asked


def test_the_asked_share_counts_words_held_only_in_questions_by_weight() -> None:
    wanted = frozenset(terms("stripe webhook retries"))
    weights = dict.fromkeys(wanted, 1.0)
    assert _asked("Do stripe webhook retries back off?", wanted, weights) == 1.0
    assert _asked("Stripe webhook retries back off. Why?", wanted, weights) == 0.0
    # "stripe" is told, "webhook" and "retries" only asked
    mixed = _asked("Stripe is live.\nAre webhook retries on?", wanted, weights)
    assert mixed == pytest.approx(2 / 3)
    rare = {**weights, next(iter(terms("webhook"))): 4.0}
    assert _asked("Stripe is live. Are webhooks on?", wanted, rare) == pytest.approx(4 / 5)
    assert _asked("no words of the prompt here?", wanted, weights) == 0.0
    # a question mark inside a word (a URL's query string) ends no sentence
    assert _asked("GET /stripe/webhook?retries=3 lists retries", wanted, weights) == 0.0


def test_a_statement_without_a_question_mark_is_never_discounted(store: Store) -> None:
    first = store.add("payments e2e test flaky", workspace="app").id
    store.add(ANSWER, workspace="app")
    assert store.search(PROMPT, workspace="app").hits[0].id == first
