"""A question that asks when is answered by a memory that tells when: it ranks above one
that holds the same words without placing them in time (catalog/when.py, WHEN_BOOST;
docs/retrieval.md, "Questions that ask when")."""

from __future__ import annotations

import pytest

from memstore.catalog import when
from memstore.service.store import Store

UNDATED = "The nightly build broke on the lockfile"
DATED = "The nightly build broke last Friday: the runner image update dropped the lockfile cache"


def _ids(store: Store, prompt: str) -> list[str]:
    return [h.id for h in store.search(prompt, workspace="app").hits]


def test_the_memory_that_tells_when_answers_a_when_question(store: Store) -> None:
    undated = store.add(UNDATED, workspace="app").id
    dated = store.add(DATED, workspace="app").id
    assert _ids(store, "when did the nightly build break?") == [dated, undated]


def test_without_the_boost_the_shorter_memory_wins(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(when, "WHEN_BOOST", 0.0)
    undated = store.add(UNDATED, workspace="app").id
    store.add(DATED, workspace="app")
    assert _ids(store, "when did the nightly build break?")[0] == undated


@pytest.mark.parametrize(
    "prompt",
    ["why did the nightly build break?", "the nightly build breaks when the lockfile changes"],
)
def test_a_question_that_does_not_ask_when_keeps_its_order(store: Store, prompt: str) -> None:
    undated = store.add(UNDATED, workspace="app").id
    store.add(DATED, workspace="app")
    assert _ids(store, prompt)[0] == undated


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("When did Caroline go to the support group?", True),
        ("so when did the build break", True),
        ("what time does the backup job run", True),
        ("How long ago did we move to postgres 16?", True),
        ("the build fails when I run make", False),
        ("whenever I deploy, the cache is cold", False),
    ],
)
def test_which_questions_ask_when(text: str, asks: bool) -> None:
    assert bool(when._ASKS_WHEN.match(text)) is asks


@pytest.mark.parametrize(
    ("text", "tells"),
    [
        ("I went to the support group yesterday", True),
        ("we rotated the keys last Friday", True),
        ("the outage was two weeks ago", True),
        ("next month we move to the new cluster", True),
        ("a last-minute fix to the deploy script", False),
        ("the cache is rebuilt on every deploy", False),
    ],
)
def test_which_memories_tell_when(text: str, tells: bool) -> None:
    assert bool(when._TELLS_WHEN.search(text)) is tells
