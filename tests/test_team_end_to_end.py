"""Team memory end to end (issue 40): two people, two HOMEs, one team repository on a host
that protects main. A shares, a reviewer merges on the host, B syncs and recalls it labelled
with the team tier, and A's personal copy shows once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git
from tests.service.team_hosts import (
    PROTECTED_MAIN,
    Person,
    follow,
    host_merge,
    make_team_repo,
    person,
    refs,
)

DEPLOY = "Deploys of the webshop go through tools/deploy.sh, never by hand"


def _team_id(bare: Path) -> str:
    paths = git(bare, "ls-tree", "-r", "--name-only", "main").split()
    [path] = [p for p in paths if "deploy" in p]
    return path.removesuffix(".md").rsplit("-", 1)[1]


def _hits(member: Person, query: str, *scope: str) -> list[dict[str, object]]:
    done = member.run("search", query, *(scope or ("-w", "webshop")), "--json")
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout)["results"])


def test_a_shared_memory_reaches_the_team_after_review_and_shows_once(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")], hook=PROTECTED_MAIN)
    alice = person(tmp_path, "alice", "alice@acme.com")
    bob = person(tmp_path, "bob", "bob@acme.com")
    follow(alice, "acme", str(bare))
    follow(bob, "acme", str(bare))
    memory_id = alice.add("Product images of the webshop are resized by the thumbor service")
    # The team says this already (alice wrote it in another workspace): the share folds it.
    folded = alice.add(DEPLOY, "ops")

    for shared, more in ((memory_id, []), (folded, ["-w", "webshop"])):
        done = alice.run("share", shared, "--team", "acme", *more)
        assert done.returncode == 0, done.stderr
        assert f"pushed branch memstore/alice/{shared}" in done.stdout
    assert bob.run("search", "thumbor resized", "-w", "webshop", "--json").returncode == 0
    assert not [h for h in _hits(bob, "thumbor resized") if h["id"] == memory_id]

    for shared in (memory_id, folded):
        host_merge(tmp_path, bare, f"memstore/alice/{shared}")
    assert set(refs(bare)) >= {"refs/heads/main"}

    synced = bob.run("sync")
    assert synced.returncode == 0, synced.stderr
    [hit] = [h for h in _hits(bob, "thumbor resized") if h["id"] == memory_id]
    assert hit["tier"] == "acme"
    text = bob.run("search", "thumbor resized", "-w", "webshop")
    assert "acme:webshop" in text.stdout, text.stdout

    synced = alice.run("sync")
    assert synced.returncode == 0, synced.stderr
    assert "marked 2 memories shared with acme" in synced.stdout, synced.stdout
    hits = [h for h in _hits(alice, "thumbor resized") if h["id"] == memory_id]
    assert [h["tier"] for h in hits] == ["acme"]  # the team's copy, once
    deploys = [
        h
        for h in _hits(alice, "deploys tools/deploy.sh by hand", "--all")
        if "deploy.sh" in str(h["content"])
    ]
    # the fold: the team's memory speaks for alice's, which had another id
    assert [(h["tier"], h["id"]) for h in deploys] == [("acme", _team_id(bare))]
