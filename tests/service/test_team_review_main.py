"""`memstore review` reads a proposal against the team's main as the host has it, not the
reviewer's clone as its work tree stands (a hand edit there, a commit of its own)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git
from tests.service.team_hosts import follow, make_team_repo, person

PORT = "The staging server of the webshop listens on port 8080"


def test_review_compares_with_the_remote_main_not_the_clones_work_tree(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(PORT, "webshop")])
    alice = person(tmp_path, "alice", "alice@acme.com")
    follow(alice, "acme", str(bare))
    bob = person(tmp_path, "bob", "bob@acme.com")
    clone = follow(bob, "acme", str(bare))
    # bob's clone holds a hand edit the team never saw: port 8443
    [team_file] = clone.rglob("*.md")
    text = team_file.read_text(encoding="utf-8")
    team_file.write_text(text.replace("8080", "8443"), encoding="utf-8")
    assert bob.run("search", "staging port", "--all").returncode == 0  # indexed as it stands
    memory_id = alice.add("The webshop's staging server listens on port 8443")
    assert alice.run("share", memory_id, "--team", "acme").returncode == 0

    done = bob.run("review", f"memstore/alice/{memory_id}", "--json")

    assert done.returncode == 0, done.stderr
    [memory] = json.loads(done.stdout)["memories"]
    # main says 8080: the proposal contradicts it (the clone's 8443 would read as the same)
    assert [c["detail"] for c in memory["contradictions"]] != []
    assert "8080" in memory["contradictions"][0]["text"]
    assert memory["duplicates"] == []
    assert git(clone, "status", "--porcelain") != ""  # the review left bob's edit alone
