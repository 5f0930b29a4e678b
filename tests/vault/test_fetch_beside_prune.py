"""A purge's prune (`git gc --prune=now`) never runs beside a fetch: a fetch writes objects
before the ref that makes them reachable, and a prune then deletes them, leaving
refs/remotes/origin/* naming a commit the clone lacks. The fetch holds the prunes' lock
shared (as the counter flush's build does), the prune waits for it and refuses past its
bound; a fetch waits for a prune under way."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.core.errors import SyncError
from memstore.vault import remote
from memstore.vault.locks import held_within
from tests.conftest import git, wait_until

BOUND_S = 60.0


@pytest.fixture
def behind(tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """A clone one commit behind its bare remote, whose upload-pack waits for a file
    `release` (touching `started` first): a fetch held in the middle, for real."""
    bare, other, clone = tmp_path / "remote.git", tmp_path / "other", tmp_path / "clone"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(tmp_path, "clone", "-q", str(bare), str(other))
    (other / "a.md").write_text("one\n", encoding="utf-8")
    git(other, "add", "a.md")
    git(other, "commit", "-qm", "one")
    git(other, "push", "-q", "origin", "HEAD:main")
    git(tmp_path, "clone", "-q", "-b", "main", str(bare), str(clone))
    (other / "b.md").write_text("two, only on the remote yet\n", encoding="utf-8")
    git(other, "add", "b.md")
    git(other, "commit", "-qm", "two")
    git(other, "push", "-q", "origin", "HEAD:main")
    theirs = git(other, "rev-parse", "HEAD").strip()
    held = tmp_path / "upload-pack"
    held.write_text(
        "#!/bin/sh\n"
        f"touch {tmp_path / 'started'}\n"
        "n=0\n"
        f"while [ ! -e {tmp_path / 'release'} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done\n"
        'exec git-upload-pack "$@"\n',
        encoding="utf-8",
    )
    held.chmod(0o755)
    git(clone, "config", "remote.origin.uploadpack", str(held))
    yield clone, tmp_path, theirs
    (tmp_path / "release").touch()  # a test that failed midway lets its git go


def test_a_prune_never_runs_beside_a_fetch_under_way(
    behind: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clone, folder, theirs = behind
    env = dict(os.environ)
    fetching = remote.start_fetch(clone, "origin", env)
    try:
        wait_until(lambda: (folder / "started").exists(), BOUND_S, "the fetch never started")
        monkeypatch.setattr(remote, "OBJECTS_WAIT_S", 0.2)
        with pytest.raises(SyncError, match=r"gc --prune=now' and 'memstore reindex'"):
            remote.prune_unreachable(clone, env)  # before: it ran, beside the fetch
        assert remote.prunes_run(clone) == 0
        monkeypatch.setattr(remote, "OBJECTS_WAIT_S", BOUND_S)
        pruned: list[BaseException | None] = []

        def prune() -> None:
            try:
                remote.prune_unreachable(clone, env)
                pruned.append(None)
            except BaseException as err:  # reported below, not lost in the thread
                pruned.append(err)

        waiting = threading.Thread(target=prune, daemon=True)
        waiting.start()
        (folder / "release").touch()
        fetching.wait()
        waiting.join(BOUND_S)
        assert pruned == [None] and remote.prunes_run(clone) == 1
    finally:
        fetching.stop()
    assert git(clone, "rev-parse", "refs/remotes/origin/main").strip() == theirs
    assert git(clone, "cat-file", "-t", theirs).strip() == "commit"
    git(clone, "fsck", "--no-progress")


def test_a_fetch_waits_for_a_prune_under_way_and_says_so_past_its_bound(
    behind: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clone, folder, theirs = behind
    (folder / "release").touch()
    env = dict(os.environ)
    monkeypatch.setattr(remote, "OBJECTS_WAIT_S", 0.2)
    with held_within(clone / ".git" / f"{remote.PRUNES}.lock", True, 0) as pruning:
        assert pruning
        with pytest.raises(SyncError, match="a purge has been pruning git's objects"):
            remote.fetch(clone, "origin", env)
        early = remote.start_fetch(clone, "origin", env)  # started later, by its wait
        assert early.process is None
        with pytest.raises(SyncError, match="run 'memstore sync' again when it ends"):
            early.wait()
    assert not (folder / "started").exists()  # no fetch ran beside the prune
    later = remote.start_fetch(clone, "origin", env)
    later.wait()
    assert git(clone, "rev-parse", "refs/remotes/origin/main").strip() == theirs


def test_a_fetchs_hold_on_git_objects_ends_with_its_git_not_with_its_wait(
    behind: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a sync's early fetch is waited for only after the sync takes the vault lock; a purge
    # holding that lock waits for the fetch's hold to end: it must end when git does
    clone, folder, theirs = behind
    (folder / "release").touch()
    fetching = remote.start_fetch(clone, "origin", dict(os.environ))
    assert fetching.process is not None
    wait_until(lambda: fetching.process.poll() is not None, BOUND_S, "git fetch never ended")  # type: ignore[union-attr]
    monkeypatch.setattr(remote, "OBJECTS_WAIT_S", 5.0)
    remote.prune_unreachable(clone, dict(os.environ))  # before: refused after 5 s
    assert remote.prunes_run(clone) == 1
    fetching.wait()
    assert git(clone, "rev-parse", "refs/remotes/origin/main").strip() == theirs
    git(clone, "fsck", "--no-progress")


def test_a_team_clones_fetches_wait_for_a_prune_as_a_sync_does(
    behind: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by review13: a team clone's pull (`following.pull_team`), a proposal's fetch and
    `team_remote.fetch_branch` ran `git fetch` without the prunes' lock, so a purge in that
    clone could prune what they had written before their refs moved."""
    from memstore.vault import team_remote

    clone, folder, theirs = behind
    (folder / "release").touch()
    env = dict(os.environ)
    monkeypatch.setattr(remote, "OBJECTS_WAIT_S", 0.2)
    with held_within(clone / ".git" / f"{remote.PRUNES}.lock", True, 0) as pruning:
        assert pruning
        with pytest.raises(SyncError, match="a purge has been pruning git's objects"):
            remote.fetch_git(clone, ["--no-tags", "origin"], env)
        assert team_remote.fetch_branch(clone, "origin", "main", env) == ""
    assert not (folder / "started").exists()  # no fetch ran beside the prune
    assert team_remote.fetch_branch(clone, "origin", "main", env) == theirs


def test_a_prunes_lock_that_cannot_be_made_holds_no_fetch_off(
    behind: tuple[Path, Path, str],
) -> None:
    """A lock file that cannot be opened is no prune under way: every fetch said 'a purge
    has been pruning git's objects … for over 60 s' at once, and fetched nothing (review14).
    A prune cannot take that lock either: it refuses, naming the file."""
    clone, folder, theirs = behind
    (folder / "release").touch()
    (clone / ".git" / f"{remote.PRUNES}.lock").mkdir()  # in the way of the lock file
    env = dict(os.environ)
    remote.fetch(clone, "origin", env)
    assert git(clone, "rev-parse", "origin/main").strip() == theirs
    fetching = remote.start_fetch(clone, "origin", env)
    fetching.wait()
    with remote.writing_objects(clone, 0) as may:
        assert may
    with pytest.raises(SyncError, match=r"cannot open .*memstore-prunes\.lock"):
        remote.prune_unreachable(clone, env)
    assert remote.prunes_run(clone) == 0


def test_a_child_git_leaves_running_does_not_keep_the_fetchs_hold(
    behind: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """git's children outlive it at times: a credential cache daemon, ssh's ControlPersist
    master. The prunes' lock was handed to git as a descriptor, which they inherited: the
    hold lasted their life (15 minutes for git's credential cache), and each purge's prune
    in that clone refused. Now memstore holds it, and lets go when git ends."""
    clone, folder, theirs = behind
    pidfile = folder / "lingering.pid"
    lingering = folder / "upload-pack-leaves-a-child"
    lingering.write_text(
        "#!/bin/sh\n"  # a daemon's manner: its own output closed, every other descriptor kept
        f"sleep 600 </dev/null >/dev/null 2>&1 &\necho $! > {pidfile}\n"
        'exec git-upload-pack "$@"\n',
        encoding="utf-8",
    )
    lingering.chmod(0o755)
    git(clone, "config", "remote.origin.uploadpack", str(lingering))
    try:
        remote.start_fetch(clone, "origin", dict(os.environ)).wait()
        assert git(clone, "rev-parse", "refs/remotes/origin/main").strip() == theirs
        pid = int(pidfile.read_text(encoding="utf-8"))
        assert os.path.exists(f"/proc/{pid}")  # git's child still runs
        monkeypatch.setattr(remote, "OBJECTS_WAIT_S", 5.0)
        remote.prune_unreachable(clone, dict(os.environ))  # before: refused after 5 s
        assert remote.prunes_run(clone) == 1
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text(encoding="utf-8")), 9)  # the child this test started
