"""Memories one agent session wrote are each other's context (catalog/sessions.py): an add
records its agent's session in the front matter, and a hit raises the memories written just
before and after it in that session (docs/retrieval.md, "Memories of the same session")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstore.catalog import sessions
from memstore.core.codec import parse_memory, render_memory
from memstore.core.config import Settings
from memstore.core.merge import merge_memory
from memstore.core.model import Caller, Memory
from memstore.core.own_front_matter import read_own
from memstore.service.curation import Curator
from memstore.service.store import Store

CAUSE = "The nightly build broke: the cache key changed when the CI image was upgraded"
# The reply: it names nothing the question asks.
FIX = "Pinned the lockfile hash into the key; green again since"
OTHER = "Pinned dependencies are reviewed every Monday by whoever is on support"
QUESTION = "why did the nightly build break?"
START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves: each memory is written when the test says."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def agent(vault: Path, clock: Clock) -> Iterator[Store]:
    settings = Settings(vault=vault, source="claude-code", session="s1", host="test-host")
    with Store.open(settings, clock=clock) as opened:
        yield opened


def _add(store: Store, text: str, clock: Clock, minutes: float, session: str = "s1") -> str:
    clock.now = START + timedelta(minutes=minutes)
    caller = Caller("claude-code", session, "test-host")
    return store.add(text, workspace="app", caller=caller).id


def _hits(store: Store, query: str = QUESTION) -> list[tuple[str, bool, str]]:
    return [(h.id, h.weak, h.view) for h in store.search(query, workspace="app").hits]


def test_an_agents_add_records_its_session_and_a_persons_does_not(
    agent: Store, vault: Path
) -> None:
    added = agent.add(CAUSE, workspace="app")
    assert "\nsession: s1\n" in (vault / added.path).read_text(encoding="utf-8")
    person = Settings(vault=vault, source="cli", session="a1b2c3", host="test-host")
    with Store.open(person) as store:
        typed = store.add(FIX, workspace="app")
    assert "session:" not in (vault / typed.path).read_text(encoding="utf-8")


def test_the_reply_written_next_in_the_session_is_found(agent: Store, clock: Clock) -> None:
    cause = _add(agent, CAUSE, clock, 0)
    fix = _add(agent, FIX, clock, 2)
    hits = _hits(agent)
    assert [h[0] for h in hits] == [cause, fix]
    # found beside a hit, holding nothing of the question: never confident
    assert hits[1] == (fix, True, "session")


def test_without_the_boost_the_reply_is_not_found(
    agent: Store, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "SESSION_BOOST", 0.0)
    cause = _add(agent, CAUSE, clock, 0)
    _add(agent, FIX, clock, 2)
    assert [h[0] for h in _hits(agent)] == [cause]


def test_a_neighbour_joins_the_hits_of_the_question_below_its_lender(
    agent: Store, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    cause = _add(agent, CAUSE, clock, 0)
    fix = _add(agent, FIX, clock, 2)
    docs = _add(agent, "The build of the docs site runs on every push", clock, 60 * 24 * 30)
    ranked = [h[0] for h in _hits(agent)]
    assert ranked[0] == cause and set(ranked) == {cause, fix, docs}
    monkeypatch.setattr(sessions, "SESSION_BOOST", 0.0)
    assert [h[0] for h in _hits(agent)] == [cause, docs]


def test_another_sessions_memory_written_between_is_not_a_neighbour(
    agent: Store, clock: Clock
) -> None:
    cause = _add(agent, CAUSE, clock, 0)
    _add(agent, OTHER, clock, 1, session="s2")
    _add(agent, "Lunch is at noon on Fridays", clock, 3, session="s3")
    assert [h[0] for h in _hits(agent)] == [cause]


def test_memories_a_day_apart_are_not_neighbours(agent: Store, clock: Clock) -> None:
    cause = _add(agent, CAUSE, clock, 0)
    _add(agent, FIX, clock, 25 * 60)  # the same session id, a server that ran for days
    assert [h[0] for h in _hits(agent)] == [cause]


def test_a_neighbour_outside_the_searched_workspace_or_archived_stays_out(
    agent: Store, clock: Clock
) -> None:
    cause = _add(agent, CAUSE, clock, 0)
    clock.now = START + timedelta(minutes=2)
    agent.add(FIX, workspace="elsewhere", caller=Caller("claude-code", "s1", "test-host"))
    assert [h[0] for h in _hits(agent)] == [cause]
    fix = _add(agent, "Pinned the base image digest as well", clock, -2)
    assert [h[0] for h in _hits(agent)] == [cause, fix]
    Curator(agent, clock()).archive(fix)
    assert [h[0] for h in _hits(agent)] == [cause]


TEXT = (
    "---\nid: k3xq9v2m\nkind: lesson\nkeywords: []\nsource: claude-code\n"
    "{session}created: 2026-11-29T14:12:23Z\nseen: 1\n---\nbody\n"
)


def test_the_session_key_is_read_written_and_optional() -> None:
    text = TEXT.format(session="session: 4f2a\n")
    memory = parse_memory(text, path="app/2026-11/body-k3xq9v2m.md")
    assert memory.session == "4f2a" and memory.extra == ()
    assert render_memory(memory) == text
    fast = read_own(text.split("---\n")[1], "body\n", workspace="app", newline="\n")
    assert fast == memory
    older = parse_memory(TEXT.format(session=""), path="app/2026-11/body-k3xq9v2m.md")
    assert older.session == "" and older.problem == ""
    assert render_memory(older) == TEXT.format(session="")


def test_a_session_merges_like_a_scalar_whichever_side_merges() -> None:
    base = Memory(id="k3xq9v2m", workspace="app", body="body\n", session="")
    ours, theirs = replace(base, session="s1"), replace(base, session="s2")
    assert merge_memory(base, ours, base).memory.session == "s1"
    assert merge_memory(base, base, theirs).memory.session == "s2"
    both = merge_memory(None, ours, theirs).memory.session
    assert both == merge_memory(None, theirs, ours).memory.session == "s2"
