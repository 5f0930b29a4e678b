"""One transaction per write: the lock held, the index caught up, one commit; who writes is a value."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memstore.core.model import Caller
from memstore.service.store import Store
from tests.conftest import commit_count, git, settings_at


def test_a_transaction_catches_up_before_its_body_runs(vault: Path) -> None:
    (vault / "global").mkdir(exist_ok=True)
    (vault / "global" / "by-hand.md").write_text("deploys need approval\n", encoding="utf-8")
    with Store.open(settings_at(vault)) as store, store.transaction() as tx:
        assert [e.path for e in tx.indexer.entries()] == ["global/by-hand.md"]


def test_a_transaction_makes_one_commit_and_refuses_a_second(vault: Path) -> None:
    (vault / "global").mkdir(exist_ok=True)
    before = commit_count(vault)
    store = Store.open(settings_at(vault))
    with store, pytest.raises(RuntimeError, match="commits once"), store.transaction() as tx:
        (vault / "global" / "one.md").write_text("one\n", encoding="utf-8")
        tx.commit("add(global): one", add=("global/one.md",))
        (vault / "global" / "two.md").write_text("two\n", encoding="utf-8")
        tx.commit("add(global): two", add=("global/two.md",))
    assert commit_count(vault) == before + 1


def test_a_caller_passed_in_signs_the_commit_and_changes_nothing_of_the_store(
    vault: Path,
) -> None:
    with Store.open(settings_at(vault)) as store:
        someone = Caller("other-agent", "session-42", "laptop")
        store.add("the staging deploy needs an approval", workspace="global", caller=someone)
        assert store.caller == Caller("test", "test-session", "test-host")
    trailers = git(vault, "log", "-1", "--format=%(trailers)")
    assert "Memstore-Source: other-agent" in trailers
    assert "Memstore-Session: session-42" in trailers
    assert "Memstore-Host: laptop" in trailers


def test_serving_a_request_is_a_view_sharing_the_index_not_a_swap(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        theirs = replace(store.settings, session="their-session", source="their-agent")
        with store.serving(theirs) as view:
            view.add("prices are cached for an hour", workspace="global")
            assert view.indexer is store.indexer
            assert view.caller.session == "their-session"
        assert store.settings.session == "test-session"  # never swapped
        assert store.caller.session == "test-session"
        assert len(store.search("prices cached").hits) == 1
    assert "Memstore-Session: their-session" in git(vault, "log", "-1", "--format=%(trailers)")
