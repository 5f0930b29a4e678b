"""Memories one agent session wrote are each other's context (catalog/sessions.py): an add
records its agent's session in the front matter, and a hit raises the memories written just
before and after it in that session (docs/retrieval.md, "Memories of the same session")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memstore.catalog import sessions
from memstore.core.codec import parse_memory, render_memory
from memstore.core.config import Settings
from memstore.core.merge import merge_memory
from memstore.core.model import Caller, Memory
from memstore.core.own_front_matter import read_own
from memstore.mcp.server import build_server
from memstore.service.store import Store

CAUSE = "The nightly build broke: the cache key changed when the CI image was upgraded"
# The reply: of the question it holds only "build", which every memory here holds.
FIX = "Pinned the lockfile hash into the cache key, and the build is green again since"
DOCS = "The build of the docs site runs on every push"
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


def _story(store: Store, clock: Clock, fix_at: float, fix_session: str = "s1") -> list[str]:
    """The cause, its reply at `fix_at` minutes, and a memory of another session a month on."""
    cause = _add(store, CAUSE, clock, 0)
    fix = _add(store, FIX, clock, fix_at, session=fix_session)
    docs = _add(store, DOCS, clock, 60 * 24 * 30, session="s9")
    return [cause, fix, docs]


def test_the_reply_written_next_in_the_session_ranks_above_another_weak_hit(
    agent: Store, clock: Clock
) -> None:
    cause, fix, docs = _story(agent, clock, 2)
    assert _hits(agent) == [
        (cause, False, "lexical"),
        (fix, True, "any-word"),  # raised, never made confident
        (docs, True, "any-word"),
    ]


def test_without_the_boost_the_shorter_weak_hit_comes_first(
    agent: Store, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "SESSION_BOOST", 0.0)
    cause, fix, docs = _story(agent, clock, 2)
    assert [h[0] for h in _hits(agent)] == [cause, docs, fix]


def test_another_sessions_memory_written_next_is_not_a_neighbour(
    agent: Store, clock: Clock
) -> None:
    cause, fix, docs = _story(agent, clock, 1, fix_session="s2")
    assert [h[0] for h in _hits(agent)] == [cause, docs, fix]


def test_a_memory_written_between_them_in_the_session_is_the_neighbour(
    agent: Store, clock: Clock
) -> None:
    cause, fix, docs = _story(agent, clock, 2)
    _add(agent, "Lunch is at noon on Fridays", clock, 1)
    assert [h[0] for h in _hits(agent)] == [cause, docs, fix]


def test_memories_a_day_apart_are_not_neighbours(agent: Store, clock: Clock) -> None:
    # the same session id, a server that ran for days
    cause, fix, docs = _story(agent, clock, 25 * 60)
    assert [h[0] for h in _hits(agent)] == [cause, docs, fix]


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


def test_an_add_over_mcp_records_the_servers_session(store: Store, vault: Path) -> None:
    """The product path, not the benchmark's: memory_add through the real MCP client."""
    server = build_server(store, workspace="webshop", source="claude-code")

    async def add() -> Any:
        async with Client(server) as client:
            return await client.call_tool("memory_add", {"content": CAUSE, "keywords": ["ci"]})

    added = asyncio.run(add()).structured_content
    entry, memory = store.show(added["id"])
    assert memory.session == "test-session"
    text = (vault / entry.path).read_text(encoding="utf-8")
    assert "\nsource: claude-code\nsession: test-session\n" in text
