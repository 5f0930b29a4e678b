"""Defects a new user's trial found in `memstore view` (issue 41), each pinned by a test:
undo offered beside sync merges, the contradictions queue against audit's, ids of
hand-written files, an early --since, one secret item per finding, the growth chart."""

from __future__ import annotations

from memstore.service.store import Store
from tests.service import test_view_data as base

world = base.world  # the two-machine vault of test_view_data
view_of = base.view_of
World = base.World


def test_no_undo_is_offered_for_a_session_holding_a_sync_merge(world: World) -> None:
    with Store.open(base.machine(world.a, "host-a", "claude-code", "s-later")) as store:
        store.add("the later session adds without syncing", workspace="infra")
    data = view_of(world.a, vault_option=str(world.a))
    merged = {c["session"] for c in data["changes"] if c["kind"] in ("merge", "conflict")}
    assert merged - {""}, "the fixture's syncs merge inside a session"
    for session in data["sessions"]:
        if session["session"] in merged:
            assert session["undo"] == "", session
            assert session["no_undo"] == "sync merges are not undone by revert"
        else:
            undo = f"memstore revert --session {session['session']} --vault {world.a}"
            assert session["undo"] == undo
            assert session["no_undo"] == ""
    assert {s["session"] for s in data["sessions"]} - merged == {"s-later"}
