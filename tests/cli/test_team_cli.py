"""`memstore team join/list/leave`, and search and sync reading every tier, at the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memstore.core.config import Settings
from memstore.service.store import Store, init_vault
from tests.conftest import invoke_memstore

MEMORIES = (
    "webshop checkout fails with 413 when nginx client_max_body_size is 1m; raise it to 10m",
    "the staging database is reset every night at 02:00 UTC; do not keep test data there",
)


def team_remote(tmp_path: Path, name: str, texts: tuple[str, ...] = MEMORIES) -> Path:
    remote = tmp_path / f"{name}.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    source = tmp_path / f"{name}-maintainer"
    settings = Settings(vault=source, source="test", session="m", host="m", env=os.environ)
    init_vault(source, settings)
    with Store.open(settings) as store:
        for text in texts:
            store.add(text, workspace="webshop")
        store.set_remote(str(remote))
        store.sync()
    return remote


def test_join_list_search_and_leave(tmp_path: Path, hermetic: Path) -> None:
    vault = tmp_path / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    remote = team_remote(tmp_path, "acme")
    joined = invoke_memstore("team", "join", "acme", str(remote), vault=vault)
    assert joined.returncode == 0, joined.stderr
    assert "following acme" in joined.stdout and "memstore sync" in joined.stdout
    listed = invoke_memstore("team", "list", vault=vault)
    assert listed.stdout.startswith("acme  team · 2 memories · synced ")
    assert "can push: unknown" in listed.stdout and str(remote) in listed.stdout
    [row] = json.loads(invoke_memstore("team", "list", "--json", vault=vault).stdout)
    assert row["name"] == "acme" and row["memories"] == 2 and row["can_push"] == "unknown"
    assert Path(row["path"]).is_relative_to(hermetic / ".local" / "share" / "memstore" / "teams")

    found = invoke_memstore("search", "nginx 413", "--all", vault=vault)
    assert " acme:webshop · note · " in found.stdout.splitlines()[0], found.stdout
    data = json.loads(invoke_memstore("search", "nginx 413", "--all", "--json", vault=vault).stdout)
    assert data["results"][0]["tier"] == "acme"
    context = invoke_memstore("search", "staging database reset", "--context", vault=vault)
    assert "- [acme:webshop/" in context.stdout

    refused = invoke_memstore("team", "join", "other", str(tmp_path / "nothing"), vault=vault)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    left = invoke_memstore("team", "leave", "acme", vault=vault)
    assert left.returncode == 0 and "removed its clone" in left.stdout
    assert not Path(row["path"]).exists()
    assert "no team vaults followed" in invoke_memstore("team", vault=vault).stdout
    gone = invoke_memstore("team", "leave", "acme", vault=vault)
    assert gone.returncode == 1 and "memstore team list" in gone.stderr


def test_join_takes_the_branch_of_a_remote_whose_head_names_none(tmp_path: Path) -> None:
    # `git init --bare` (HEAD: master) and the team's main pushed by hand: git's clone checks
    # out nothing, and join said "not a memstore vault (its .gitattributes …)"
    remote = team_remote(tmp_path, "acme")
    subprocess.run(["git", "--git-dir", str(remote), "symbolic-ref", "HEAD", "refs/heads/master"])
    vault = tmp_path / "vault"
    assert invoke_memstore("init", str(vault)).returncode == 0
    joined = invoke_memstore("team", "join", "acme", str(remote), vault=vault)
    assert joined.returncode == 0, joined.stderr
    found = invoke_memstore("search", "nginx 413", "--all", vault=vault)
    assert " acme:webshop · note · " in found.stdout, found.stdout
    [row] = json.loads(invoke_memstore("team", "list", "--json", vault=vault).stdout)
    assert row["memories"] == 2
    git = ["git", "-C", row["path"]]
    assert (
        subprocess.run(
            [*git, "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True
        ).stdout
        == "main\n"
    )


def test_sync_pulls_each_team_and_an_unreachable_one_is_one_line(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    invoke_memstore("init", str(vault))
    acme = team_remote(tmp_path, "acme")
    infra = team_remote(tmp_path, "infra", ("terraform state lives in the infra bucket",))
    invoke_memstore("team", "join", "acme", str(acme), vault=vault)
    invoke_memstore("team", "join", "infra", str(infra), vault=vault)
    synced = invoke_memstore("sync", vault=vault)  # no personal remote: the teams still pull
    assert synced.returncode == 0, synced.stderr
    assert "team acme: nothing new" in synced.stdout
    assert "team infra: nothing new" in synced.stdout
    infra.rename(tmp_path / "moved.git")
    synced = invoke_memstore("sync", vault=vault)
    assert synced.returncode == 0, synced.stderr
    [line] = [line for line in synced.stdout.splitlines() if line.startswith("team infra")]
    assert "not synced" in line
    assert "team acme: nothing new" in synced.stdout
    found = invoke_memstore("search", "terraform state", "--all", vault=vault)
    assert found.returncode == 0 and "infra:webshop" in found.stdout
    data = json.loads(invoke_memstore("sync", "--json", vault=vault).stdout)
    assert [t["result"] for t in data["teams"]] == ["up to date", "failed"]
    # the vault's own remote unreachable: the teams' lines came on stdout before the error,
    # so `sync --json` printed text where a script reads JSON; now stdout stays empty
    invoke_memstore("remote", "add", str(acme), vault=vault)
    acme.rename(tmp_path / "acme-moved.git")
    failed = invoke_memstore("sync", "--json", vault=vault)
    assert failed.returncode == 1 and failed.stdout == "", failed.stdout
    assert failed.stderr.startswith("Error: cannot fetch from remote 'origin'")
