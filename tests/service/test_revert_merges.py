"""`revert --session` undoes a session's own writes and never a sync's merge: a merge brings
in what other machines wrote, and undoing it deleted their memories here and, at the next
sync, everywhere (found by a new user through the view's undo command)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memstore.core.errors import InvalidInputError
from memstore.service.history import History
from memstore.service.store import Store
from tests.service.test_sync import machines, remote  # noqa: F401 (fixtures)


def holds(store: Store, memory_id: str) -> bool:
    return any(store.vault.root.rglob(f"*-{memory_id}.md"))


def both_moved(machines: list[Store]) -> tuple[str, str]:  # noqa: F811
    """A and B each add a memory; B syncs first, so A's next sync makes a merge."""
    a, b, _ = machines
    own = a.add("Deploys are frozen on Fridays after noon", workspace="global").id
    theirs = b.add("Redis runs on port 6380 in staging", workspace="global").id
    b.sync()
    return own, theirs


def test_reverting_a_session_keeps_what_its_sync_merged_in(
    machines: list[Store],  # noqa: F811
) -> None:
    a, b, _ = machines
    own, theirs = both_moved(machines)
    a.sync()  # a merge commit, in the same session as A's add
    assert any(c.merge and c.trailer("Session") == "s-host-a" for c in a.git.history())

    History(a).revert_session("s-host-a")

    assert holds(a, theirs)  # B's memory, merged in by A's sync, stays
    assert not holds(a, own)  # A's own add is undone
    a.sync()
    b.sync()
    assert holds(b, theirs)


def test_a_session_that_only_merged_is_refused_and_changes_nothing(
    machines: list[Store],  # noqa: F811
) -> None:
    a, _, _ = machines
    own, theirs = both_moved(machines)
    with a.serving(replace(a.settings, session="s-sync")) as syncing:
        syncing.sync()
    head = a.git.head()
    with pytest.raises(InvalidInputError, match="only merged other machines' memories"):
        History(a).revert_session("s-sync")
    assert a.git.head() == head
    assert holds(a, theirs) and holds(a, own)
