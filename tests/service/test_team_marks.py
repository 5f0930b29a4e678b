"""After a proposal merges on the host, the personal copy is marked `shared: [team]` (issue 40):
by id, or by the alias a fold left under the team memory's `merged:`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from memstore.core.codec import parse_memory
from memstore.service.proposals import refresh_team
from memstore.service.shared_marks import mark_shared, shared_teams
from memstore.service.store import Store
from tests.conftest import git
from tests.service.team_hosts import PROTECTED_MAIN, follow, host_merge, make_team_repo, person

DEPLOY = "Deploys of the webshop go through tools/deploy.sh, never by hand"


def _marks(store: Store, memory_id: str) -> tuple[str, ...]:
    entry = store.resolve(memory_id)
    return shared_teams(store.vault.read(entry.path).extra)


def test_a_merged_proposal_marks_the_personal_copies_once(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")], hook=PROTECTED_MAIN)
    alice = person(tmp_path, "alice", "alice@acme.com")
    clone = follow(alice, "acme", str(bare))
    new = alice.add("Product images of the webshop are resized by a lambda")
    dup = alice.add(DEPLOY, "ops")  # the team's text under another id: the share folds it
    kept = alice.add("My own reminder: the webshop's cron runs at 03:00")
    for memory_id, more in ((new, []), (dup, ["-w", "webshop"])):
        done = alice.run("share", memory_id, "--team", "acme", *more)
        assert done.returncode == 0, done.stderr

    with (
        Store.open(alice.settings) as personal,
        Store.open(dataclasses.replace(alice.settings, vault=clone)) as team,
    ):
        refresh_team(team)
        assert mark_shared(personal, {"acme": team}) == {}  # proposed, not merged yet
        commits = int(git(alice.vault, "rev-list", "--count", "HEAD"))

        for memory_id in (new, dup):
            host_merge(tmp_path, bare, f"memstore/alice/{memory_id}")
        refresh_team(team)
        marked = mark_shared(personal, {"acme": team})

        assert marked == {"acme": sorted([new, dup])}
        assert _marks(personal, new) == ("acme",) and _marks(personal, dup) == ("acme",)
        assert _marks(personal, kept) == ()
        assert int(git(alice.vault, "rev-list", "--count", "HEAD")) == commits + 1
        assert git(alice.vault, "log", "-1", "--format=%s").strip() == (
            "shared: 2 memories now in acme"
        )
        assert git(alice.vault, "status", "--porcelain") == ""
        assert mark_shared(personal, {"acme": team}) == {}  # nothing new: no commit
        assert int(git(alice.vault, "rev-list", "--count", "HEAD")) == commits + 1

    # The mark is the personal copy's alone: sharing it again does not carry it.
    path = next(alice.vault.rglob(f"*{new}.md"))
    memory = parse_memory(path.read_text(encoding="utf-8"), path="x/y.md")
    assert ("shared", "shared: [acme]") in memory.extra
    again = alice.run("share", new, "--team", "acme")
    assert again.returncode == 0, again.stderr
    assert "holds it already" in again.stdout
