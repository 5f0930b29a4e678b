"""A team tier's pull at sync: nothing new costs a fetch, a fast-forward indexes only what
changed, errors name the team, a re-join pulls a kept clone, a leave on another machine is
said and its clone goes, and the sync record outlives the clone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from memstore.core.config import Settings
from memstore.service.following import join, leave, pull_teams, record_path, states
from memstore.service.store import Store
from memstore.service.teams import find_team
from tests.conftest import invoke_memstore
from tests.service.test_team_tiers import bare, git, machine, team_remote


def maintainer_adds(tmp_path: Path, name: str, text: str) -> None:
    """A maintainer of team `name` (its clone from team_remote) adds and pushes a memory."""
    settings = Settings(
        vault=tmp_path / f"{name}-maintainer", source="test", session="m", host="m", env=os.environ
    )
    with Store.open(settings) as store:
        store.add(text, workspace="webshop")
        store.sync()


def test_a_pull_with_nothing_new_leaves_the_clone_as_it_is(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        team, _ = join(person, "acme", str(acme))
        # a file edited by hand in the clone: the old pull ran a whole sync of the clone,
        # which committed it there (a commit the team never sees); a pull only fetches
        note = next(team.path.glob("webshop/**/*.md"))
        note.write_text(note.read_text(encoding="utf-8") + "\nmy note\n", encoding="utf-8")
        head = git(team.path, "rev-parse", "HEAD")
        [pull] = pull_teams(person)
        assert (pull.result, pull.indexed, pull.error) == ("up to date", 0, "")
        assert git(team.path, "rev-parse", "HEAD") == head
        assert git(team.path, "status", "--porcelain") != ""  # left for the person to see


def test_a_fast_forward_indexes_only_the_memories_it_brought(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        team, _ = join(person, "acme", str(acme))
        maintainer_adds(tmp_path, "acme", "the redis eviction policy is allkeys-lru")
        maintainer_adds(tmp_path, "acme", "the redis maxmemory is 2gb on staging")
        [pull] = pull_teams(person)
        assert (pull.result, pull.indexed) == ("fast-forward", 2)
        assert git(team.path, "rev-parse", "HEAD") == git(acme, "rev-parse", "main")
        assert git(team.path, "status", "--porcelain") == ""
        hits = person.search("redis maxmemory staging", tiers=True).hits
        assert hits and hits[0].tier == "acme"
        assert [p.result for p in pull_teams(person)] == ["up to date"]


def test_a_fetch_error_names_the_team_and_its_url_not_origin(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        join(person, "acme", str(acme))
        acme.rename(tmp_path / "moved.git")
        [pull] = pull_teams(person)
    assert pull.result == "failed"
    assert "team vault 'acme'" in pull.error and str(acme) in pull.error
    assert "origin" not in pull.error


def test_a_rejoin_pulls_the_clone_a_leave_kept(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        team, _ = join(person, "acme", str(acme))
        (team.path / "draft.md").write_text("not pushed\n", encoding="utf-8")
        assert not leave(person, "acme").removed_clone  # kept: it holds a file not pushed
        maintainer_adds(tmp_path, "acme", "the redis eviction policy is allkeys-lru")
        join(person, "acme", str(acme))
        assert git(team.path, "rev-parse", "HEAD") == git(acme, "rev-parse", "main")
        assert person.search("redis eviction", tiers=True).hits[0].tier == "acme"
        assert (team.path / "draft.md").exists()


def test_a_leave_on_another_machine_is_said_at_sync_and_its_clone_removed(
    tmp_path: Path,
) -> None:
    acme = team_remote(tmp_path, "acme")
    personal = bare(tmp_path / "personal.git")
    a_settings = machine(tmp_path, "a")
    with Store.open(a_settings) as a:
        a.set_remote(str(personal))
        join(a, "acme", str(acme))
        a.sync()
    b_settings = machine(tmp_path, "b", create=False)
    git(tmp_path, "clone", "-q", str(personal), str(b_settings.vault))
    b_env: dict[str, str | None] = {"HOME": b_settings.env["HOME"], "XDG_DATA_HOME": None}
    done = invoke_memstore("sync", vault=b_settings.vault, env=b_env)
    assert done.returncode == 0, done.stderr
    clone_b = find_team(b_settings, "acme").path
    assert clone_b.exists()
    with Store.open(a_settings) as a:
        leave(a, "acme")
        a.sync()
    done = invoke_memstore("sync", vault=b_settings.vault, env=b_env)
    assert done.returncode == 0, done.stderr
    assert "team acme: left on another machine" in done.stdout
    assert "removed its clone" in done.stdout
    assert not clone_b.exists() and not record_path(clone_b).exists()


def test_the_sync_record_outlives_a_lost_clone(tmp_path: Path) -> None:
    acme = team_remote(tmp_path, "acme")
    with Store.open(machine(tmp_path, "a")) as person:
        team, _ = join(person, "acme", str(acme))
        acme.rename(tmp_path / "moved.git")
        pull_teams(person)  # fails: recorded
        [before] = states(person)
        assert before.last_sync and "cannot fetch" in before.last_error
        shutil.rmtree(team.path)  # the clone is lost (a cleanup, a new disk)
        [after] = states(person)
        assert not after.cloned
        assert (after.last_sync, after.last_error) == (before.last_sync, before.last_error)


def test_sync_says_how_many_memories_a_pull_changed_not_how_many_the_team_holds(
    tmp_path: Path,
) -> None:
    acme = team_remote(tmp_path, "acme")
    settings = machine(tmp_path, "a")
    with Store.open(settings) as person:
        join(person, "acme", str(acme))
    maintainer_adds(tmp_path, "acme", "the redis eviction policy is allkeys-lru")
    env: dict[str, str | None] = {"HOME": settings.env["HOME"], "XDG_DATA_HOME": None}
    done = invoke_memstore("sync", vault=settings.vault, env=env)
    assert done.returncode == 0, done.stderr
    assert "team acme: pulled: 1 memory new or changed" in done.stdout
    assert "indexed" not in done.stdout.split("team acme")[1]
