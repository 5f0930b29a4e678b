"""Team tiers: following team vaults (bare repositories on disk stand in for the git host),
recall across tiers, pulls at sync, and counters that stay local."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError, NotFoundError, SyncError
from memstore.core.vault_config import VAULT_CONFIG_NAME, read_vault_config
from memstore.ops import tools
from memstore.ops.hooks import prompt_hook
from memstore.ops.output import context_lines, search_lines
from memstore.service.following import join, leave, pull_teams, states
from memstore.service.store import Store, init_vault
from memstore.service.teams import find_team, followed, team_of
from tests.conftest import EXE
from tests.conftest import git as run_git

TEAM_TEXTS = (
    "webshop checkout fails with 413 when nginx client_max_body_size is 1m; raise it to 10m",
    "the staging database is reset every night at 02:00 UTC; do not keep test data there",
    "use pnpm, never npm, in the webshop repository: the lockfile is pnpm-lock.yaml",
)


def machine(tmp_path: Path, name: str, *, create: bool = True) -> Settings:
    """A person's machine: its own HOME (team clones live under it) and personal vault."""
    home = tmp_path / f"home-{name}"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{EXE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("XDG_DATA_HOME", None)
    vault = home / "memstore"
    settings = Settings(vault=vault, source="test", session=f"s-{name}", host=name, env=env)
    if create and not vault.exists():
        init_vault(vault, settings)
    return settings


def git(cwd: Path, *args: str) -> str:
    return run_git(cwd, *args).strip()


def bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def team_remote(tmp_path: Path, name: str, texts: tuple[str, ...] = TEAM_TEXTS) -> Path:
    """A team vault on 'the host': a bare repository a maintainer pushed memories to."""
    remote = bare(tmp_path / f"{name}.git")
    source = tmp_path / f"{name}-maintainer"
    settings = Settings(vault=source, source="test", session="m", host="maintainer", env=os.environ)
    init_vault(source, settings)
    with Store.open(settings) as store:
        for text in texts:
            store.add(text, workspace="webshop", keywords=("webshop",))
        store.set_remote(str(remote))
        store.sync()
    return remote


@pytest.fixture
def acme(tmp_path: Path) -> Path:
    return team_remote(tmp_path, "acme")


@pytest.fixture
def person(tmp_path: Path) -> Iterator[Store]:
    with Store.open(machine(tmp_path, "a")) as store:
        yield store


def test_join_clones_outside_the_vault_indexes_and_commits_the_entry(
    person: Store, acme: Path
) -> None:
    team, commit = join(person, "acme", str(acme))
    assert commit and git(person.vault.root, "log", "-1", "--format=%s") == "team: join acme"
    assert read_vault_config(person.vault.root).teams == {"acme": str(acme)}
    home = Path(person.settings.env["HOME"])
    assert team.path.parent == home / ".local" / "share" / "memstore" / "teams"
    assert not team.path.is_relative_to(person.vault.root)
    assert team_of(team.path) == "acme" and team_of(person.vault.root) == ""
    assert git(person.vault.root, "status", "--porcelain") == ""
    [state] = states(person)
    assert (state.name, state.cloned, state.memories, state.can_push) == (
        "acme",
        True,
        3,
        "unknown",
    )
    assert state.last_sync and not state.last_error
    assert join(person, "acme", str(acme)) == (team, "")  # again: nothing new


def test_a_url_that_is_not_a_memstore_vault_is_refused_and_nothing_is_left(
    person: Store, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "main.py").write_text("print('hi')\n", encoding="utf-8")
    git(project, "add", "main.py")
    git(project, "commit", "-q", "-m", "code")
    before = git(person.vault.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidInputError, match="is not a memstore vault"):
        join(person, "proj", str(project))
    with pytest.raises(SyncError, match="cannot clone"):
        join(person, "gone", str(tmp_path / "nowhere.git"))
    assert git(person.vault.root, "rev-parse", "HEAD") == before
    assert not (person.vault.root / VAULT_CONFIG_NAME).exists()
    teams = Path(person.settings.env["HOME"]) / ".local" / "share" / "memstore" / "teams"
    assert list(teams.iterdir()) == []
    with pytest.raises(InvalidInputError, match="invalid team name"):
        join(person, "Acme Corp", str(project))


def test_leave_removes_the_entry_and_the_clone_unless_it_holds_unpushed_work(
    person: Store, acme: Path, tmp_path: Path
) -> None:
    team, _ = join(person, "acme", str(acme))
    other = team_remote(tmp_path, "infra", ("terraform state lives in the infra bucket",))
    infra, _ = join(person, "infra", str(other))
    (infra.path / "webshop" / "draft.md").write_text("not pushed\n", encoding="utf-8")
    left = leave(person, "acme")
    assert left.removed_clone and not team.path.exists()
    kept = leave(person, "infra")
    assert not kept.removed_clone and infra.path.exists()
    assert any("draft.md" in line for line in kept.unpushed)
    assert followed(person.settings) == []
    assert git(person.vault.root, "log", "-1", "--format=%s") == "team: leave infra"
    with pytest.raises(NotFoundError, match="memstore team list"):
        find_team(person.settings, "acme")


def test_recall_reads_every_tier_labelled_with_the_same_memory_once(
    person: Store, acme: Path
) -> None:
    shared = TEAM_TEXTS[0]  # a shared copy: the same text in the same workspace, the same id
    mine = person.add(shared, workspace="webshop", keywords=("webshop",))
    person.add("nginx on my laptop listens on 8080", workspace="webshop")
    join(person, "acme", str(acme))
    result = person.search("nginx 413 client_max_body_size", workspace="webshop", tiers=True)
    ids = [hit.id for hit in result.hits]
    assert ids.count(mine.id) == 1
    first = result.hits[0]
    assert (first.id, first.tier) == (mine.id, "acme")  # the team's copy won
    assert "acme:webshop" in search_lines(result, "nginx", "webshop")[0]
    assert "[acme:webshop/" in "\n".join(context_lines(result))
    assert person.search("nginx 413", workspace="webshop").hits[0].tier == ""  # personal only
    # the personal memory is still found beside the team's
    mixed = person.search("nginx", workspace="webshop", k=10, tiers=True)
    assert {hit.tier for hit in mixed.hits} == {"", "acme"}
    # MCP memory_recall and the prompt hook read the tiers too
    out = tools.recall(person, {"query": "staging database reset"}, workspace=None, live=False)
    assert out["results"][0].get("tier") == "acme"
    lines = prompt_hook(person, {"prompt": "is the staging database reset every night?"}, "")
    assert any("[acme:webshop/" in line for line in lines)


def test_core_memories_of_a_team_come_labelled(person: Store, tmp_path: Path) -> None:
    remote = bare(tmp_path / "core.git")
    source = tmp_path / "core-maintainer"
    settings = Settings(vault=source, source="test", session="m", host="m", env=os.environ)
    init_vault(source, settings)
    with Store.open(settings) as store:
        store.add("every change to webshop needs a ticket number", workspace="webshop", kind="core")
        store.set_remote(str(remote))
        store.sync()
    join(person, "rules", str(remote))
    found = person.recall("ticket", workspace="webshop", tiers=True)
    assert [(c.tier, c.workspace) for c in found.core] == [("rules", "webshop")]


def test_two_machines_follow_the_same_teams_through_memstore_toml(
    tmp_path: Path, acme: Path
) -> None:
    personal = bare(tmp_path / "personal.git")
    infra = team_remote(tmp_path, "infra", ("terraform state lives in the infra bucket",))
    with Store.open(machine(tmp_path, "a")) as a:
        a.set_remote(str(personal))
        a.sync()
    b_settings = machine(tmp_path, "b", create=False)
    subprocess.run(["git", "clone", "-q", str(personal), str(b_settings.vault)], check=True)
    init_vault(b_settings.vault, b_settings)
    with Store.open(machine(tmp_path, "a")) as a, Store.open(b_settings) as b:
        join(a, "acme", str(acme))  # each machine joins another team before syncing
        join(b, "infra", str(infra))
        a.sync()
        b.sync()  # memstore.toml merges by key: both teams
        assert read_vault_config(b.vault.root).teams == {"acme": str(acme), "infra": str(infra)}
        assert not b.search("nginx 413", tiers=True).hits  # followed, not cloned here yet
        with Store.open(b_settings) as other:  # another process's sync clones it
            pulls = pull_teams(other)
        assert {(p.name, p.result) for p in pulls} == {("acme", "cloned"), ("infra", "up to date")}
        a.sync()
        assert [p.name for p in pull_teams(a) if p.result == "cloned"] == ["infra"]
        hits = b.search("nginx 413", tiers=True).hits
        assert hits[0].tier == "acme"
        assert a.search("terraform state", tiers=True).hits[0].tier == "infra"
    # the two clones of a team on two machines live under each machine's own HOME
    assert find_team(b_settings, "acme").path != find_team(machine(tmp_path, "a"), "acme").path


def test_a_team_sync_pulls_what_the_host_merged(person: Store, acme: Path, tmp_path: Path) -> None:
    join(person, "acme", str(acme))
    assert not person.search("redis eviction policy", tiers=True).hits
    maintainer = Settings(
        vault=tmp_path / "acme-maintainer", source="test", session="m2", host="m", env=os.environ
    )
    with Store.open(maintainer) as store:
        store.add("the redis eviction policy is allkeys-lru in production", workspace="webshop")
        store.sync()
    with Store.open(person.settings) as other:  # another process syncs (a daemon holds `person`)
        [pull] = pull_teams(other)
    assert (pull.result, pull.indexed) == ("fast-forward", 1)
    assert person.search("redis eviction policy", tiers=True).hits[0].tier == "acme"
    assert git(acme, "rev-parse", "main") == git(maintainer.vault, "rev-parse", "HEAD")


def test_an_unreachable_team_remote_blocks_neither_recall_nor_sync(
    person: Store, acme: Path, tmp_path: Path
) -> None:
    personal = bare(tmp_path / "personal.git")
    person.set_remote(str(personal))
    join(person, "acme", str(acme))
    acme.rename(tmp_path / "moved.git")  # the host is gone
    outcome, _, _ = person.sync()
    assert outcome.pushed
    [pull] = pull_teams(person)
    assert pull.result == "failed" and "\n" not in pull.error and pull.error
    [state] = states(person)
    assert state.last_error == pull.error and state.last_sync  # the earlier good sync stays
    assert person.search("staging database", tiers=True).hits[0].tier == "acme"


def test_recall_counters_of_team_memories_are_never_committed_to_the_team_vault(
    person: Store, acme: Path
) -> None:
    team, _ = join(person, "acme", str(acme))
    before = git(team.path, "rev-parse", "HEAD")
    mine = person.add("staging database backups are in the vault bucket", workspace="webshop")
    for _ in range(3):
        tools.recall(person, {"query": "staging database"}, workspace=None, live=False)
    assert person.flush_usage() == 1  # the personal memory's counts reach its file
    assert "recalled: 3" in (person.vault.root / person.resolve(mine.id).path).read_text("utf-8")
    pull_teams(person)  # a team sync flushes nothing either
    assert git(team.path, "rev-parse", "HEAD") == before
    assert git(team.path, "status", "--porcelain") == ""
    with Store.open(dataclasses.replace(person.settings, vault=team.path)) as clone:
        assert clone.usage.pending()  # the counts stay in the clone's local journal
        assert clone.flush_usage() == 0
    assert git(team.path, "rev-parse", "HEAD") == before
