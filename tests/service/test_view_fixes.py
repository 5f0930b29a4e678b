"""Defects a new user's trial found in `memstore view` (issue 41), each pinned by a test:
undo offered beside sync merges, the contradictions queue against audit's, ids of
hand-written files, an early --since, one secret item per finding, the growth chart."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstore.core.codec import path_id
from memstore.core.secrets import find_secrets
from memstore.ops.output import supersede_command
from memstore.service.curation import Curator
from memstore.service.store import Store, init_vault
from memstore.vault.git_walk import walk_history
from tests.conftest import git
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


def port(number: int) -> str:
    return f"the api service listens on port {number}; set in deploy/api_gateway.yaml"


def test_the_contradictions_queue_is_audits_with_audits_command(tmp_path: Path) -> None:
    """A supersede chain settles its pairs: 9091 supersedes 9090 supersedes 8080, so only
    9091 vs 3000 is left, and the newer text is the one the command adds."""
    settings = base.machine(tmp_path / "v", "host-a", "claude-code", "s-one")
    init_vault(settings.vault, settings)
    with Store.open(settings) as store:
        first = store.add(port(8080), workspace="webshop").id
        other = store.add(port(3000), workspace="webshop").id
        middle = store.add(port(9090), workspace="webshop", supersedes=(first,)).id
        last = store.add(port(9091), workspace="webshop", supersedes=(middle,)).id
        store.add(base.RETRY_THREE, workspace="billing")
        store.add(base.RETRY_FIVE, workspace="billing")
        curator = Curator(store, datetime.now(UTC))
        report = curator.audit()
        texts = curator.bodies(pair.new for pair in report.contradictions)
    expected = [
        ([c.new, c.old], supersede_command(texts[c.new], c.workspace, c.old))
        for c in report.contradictions
    ]
    assert [last, other] in [ids for ids, _ in expected]  # the fixture's own check
    assert len(expected) == 2  # and the billing pair
    queue = view_of(settings.vault)["queues"]["contradictions"]
    assert [(item["ids"], item["command"]) for item in queue] == expected
    assert not any({first, middle} & set(item["ids"]) for item in queue)


def test_a_hand_written_file_has_the_index_id_in_the_timeline(world: World) -> None:
    notes = world.a / "webshop" / "runbook-notes.md"
    notes.write_text("restart the api with systemctl restart api\n", encoding="utf-8")
    gone = world.a / "webshop" / "scratch-notes.md"
    gone.write_text("a scratch note deleted later\n", encoding="utf-8")
    git(world.a, "add", "-A")
    git(world.a, "commit", "-qm", "runbook notes by hand")
    gone.unlink()
    git(world.a, "commit", "-qam", "drop the scratch note")
    data = view_of(world.a)
    (memory,) = [m for m in data["memories"] if m["path"] == "webshop/runbook-notes.md"]
    assert memory["id"] == path_id("webshop/runbook-notes.md") != "notes"
    added = next(c for c in data["changes"] if c["subject"] == "runbook notes by hand")
    dropped = next(c for c in data["changes"] if c["subject"] == "drop the scratch note")
    assert memory["id"] in added["ids"] and "notes" not in added["ids"]
    assert dropped["ids"] == [path_id("webshop/scratch-notes.md")]  # gone: the id it had
    assert [data["changes"][i]["subject"] for i in memory["history"]] == ["runbook notes by hand"]
    # memstore's own files keep the id their name ends with
    assert all(m["id"] in data["changes"][m["history"][-1]]["ids"] for m in data["memories"])


@pytest.mark.parametrize("since", ["1970-01-01", "1969-07-20", "1900-01-01", "2001-09-09"])
def test_a_date_before_the_first_commit_keeps_every_change(world: World, since: str) -> None:
    everything = view_of(world.a)
    data = view_of(world.a, since=since)
    assert data["changes"] == everything["changes"] and len(data["changes"]) > 10
    assert len(data["memories"]) == len(everything["memories"])


def test_the_walk_keeps_commits_since_any_time_git_could_misread(world: World) -> None:
    every = list(walk_history(world.a))
    newest = max(w.time for w in every)
    for since in (-86400 * 365, 0, 1, 100, 99_999_999, every[-1].time):
        assert [w.id for w in walk_history(world.a, since=since)] == [w.id for w in every]
    assert {w.id for w in walk_history(world.a, since=newest)} == {
        w.id for w in every if w.time == newest
    }
    assert list(walk_history(world.a, since=newest + 1)) == []


SLACK = "xoxb-" + "4821930475-7719302846-Hq8ZtWm3Rk5Lp2Nv7Xc9Bd4F"  # a Slack bot token's shape


def test_the_secrets_queue_has_one_item_per_finding_on_its_line(world: World) -> None:
    notes = world.a / "webshop" / "two-credentials.md"
    notes.write_text(
        f"deploy notes\n\nuse {base.TOKEN} for the registry\nnothing here\nbot: {SLACK}\n",
        encoding="utf-8",
    )
    git(world.a, "add", "-A")
    git(world.a, "commit", "-qm", "two credentials by hand")
    settings = base.machine(world.a, "host-a", "test", "s-audit")
    with Store.open(settings) as store:
        audit = Curator(store, datetime.now(UTC)).audit()
        path_of = {e.id: e.path for e in store.indexer.entries()}
    queue = view_of(world.a)["queues"]["secrets"]
    assert sorted((path_of[i], kind) for i, kind in audit.secrets) == sorted(
        (item["path"], item["kind"]) for item in queue
    )
    lines = notes.read_text(encoding="utf-8").split("\n")
    found = [
        (item["line"], item["kind"])
        for item in queue
        if item["path"].endswith("two-credentials.md")
    ]
    assert len(found) == 2 and {line for line, _ in found} == {3, 5}
    for line, kind in found:
        assert kind in find_secrets(lines[line - 1])


def test_growth_counts_a_hand_written_file_by_its_first_commit(world: World) -> None:
    notes = world.a / "webshop" / "runbook-notes.md"
    notes.write_text("restart the api with systemctl restart api\n", encoding="utf-8")
    git(world.a, "add", "-A")
    git(world.a, "commit", "-qm", "runbook notes by hand")
    data = view_of(world.a)
    memory = next(m for m in data["memories"] if m["path"] == "webshop/runbook-notes.md")
    assert memory["created"] == ""  # no front matter: only git knows when it came
    growth = data["stats"]["growth"]
    assert growth[-1][2] == len(data["memories"])  # every memory counted
    month = data["changes"][memory["history"][-1]]["time"][:7]
    assert next(g for g in growth if g[0] == month)[1] >= 1
