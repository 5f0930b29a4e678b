"""`memstore show` and `confirm` of a team memory: `TEAM:ID`, or an id only a team tier holds."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git
from tests.service.team_hosts import follow, make_team_repo, person

DEPLOY = "Deploys of the webshop go through tools/deploy.sh, never by hand"


def _team_id(clone: Path) -> str:
    [path] = [p for p in clone.rglob("*.md") if "deploys" in p.name]
    return path.stem.rsplit("-", 1)[1]


def test_show_takes_a_team_id_labelled_or_bare(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")])
    alice = person(tmp_path, "alice", "alice@acme.com")
    clone = follow(alice, "acme", str(bare))
    memory_id = _team_id(clone)

    for ref in (f"acme:{memory_id}", memory_id, f"acme:{memory_id[:4]}"):
        done = alice.run("show", ref)
        assert done.returncode == 0, done.stderr
        assert DEPLOY in done.stdout
        assert done.stderr.startswith("# acme:webshop/")
    data = json.loads(alice.run("show", memory_id, "--json").stdout)
    assert (data["id"], data["tier"]) == (memory_id, "acme")
    mine = alice.add("The webshop's invoices are rendered by services/pdf")
    assert json.loads(alice.run("show", mine, "--json").stdout)["tier"] is None

    missing = alice.run("show", "acme:zzzzzzzz")
    assert missing.returncode == 1 and "no memory with id" in missing.stderr
    unknown = alice.run("show", f"infra:{memory_id}")
    assert unknown.returncode == 1 and "no team vault named 'infra'" in unknown.stderr


def test_confirm_of_a_team_memory_explains_and_changes_nothing(tmp_path: Path) -> None:
    bare = make_team_repo(tmp_path, [(DEPLOY, "webshop")])
    alice = person(tmp_path, "alice", "alice@acme.com")
    clone = follow(alice, "acme", str(bare))
    memory_id = _team_id(clone)
    heads = (git(clone, "rev-parse", "HEAD"), git(alice.vault, "rev-parse", "HEAD"))

    done = alice.run("confirm", f"acme:{memory_id}")

    assert done.returncode == 1
    assert f"memory {memory_id} is team acme's" in done.stderr
    assert "counted on this machine alone" in done.stderr
    assert alice.run("confirm", memory_id).returncode == 1
    assert (git(clone, "rev-parse", "HEAD"), git(alice.vault, "rev-parse", "HEAD")) == heads
    assert git(clone, "status", "--porcelain") == ""
    mine = alice.add("The webshop's invoices are rendered by services/pdf")
    assert alice.run("confirm", mine).returncode == 0
