"""The pack after a sync is housekeeping (issue 39 part 5): at 1,000,000 memories on a
loaded machine `git gc --auto` ran past memstore's 120 s git timeout after the sync had
merged, pushed and indexed, and the sync failed with "git -c took over 120 s; check the
network". A pack that fails is now one warning naming git's command, the sync's outcome
stands, and the next sync packs again."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import stat
from pathlib import Path

import pygit2
import pytest

from memstore.service.store import Store
from memstore.vault.remote import GC_AUTO, _command, needs_packing
from tests.service.test_sync import machines, remote  # noqa: F401 (fixtures)


def _loose_objects_past_gits_threshold(root: Path) -> None:
    """Reachable loose objects, as libgit2 leaves them, until git's gc --auto would pack."""
    repo = pygit2.Repository(str(root))
    objects = repo.path.rstrip("/") + "/objects/17"
    tree = repo.TreeBuilder()
    n = 0
    while not os.path.isdir(objects) or len(os.listdir(objects)) <= -(-GC_AUTO // 256):
        blob = repo.create_blob(f"loose object {n}".encode())
        tree.insert(f"f{n}", blob, pygit2.GIT_FILEMODE_BLOB)
        n += 1
    who = pygit2.Signature("test", "test@example.com")
    repo.create_commit("refs/test/loose", who, who, "loose objects", tree.write(), [])


def _git_whose_gc_fails(folder: Path) -> str:
    """A `git` that runs the real one, except `gc`, which fails as a broken one would."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = gc ] && { echo "fatal: cannot pack" >&2; exit 128; }; done\n'
        f'exec {real} "$@"\n',
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_a_pack_that_fails_after_a_sync_is_one_warning_and_the_sync_stands(
    machines: list[Store],  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    laptop, desktop, _ = machines
    root = laptop.vault.root
    _loose_objects_past_gits_threshold(root)
    assert needs_packing(root)
    settings = laptop.settings
    path = f"{_git_whose_gc_fails(tmp_path / 'bin')}{os.pathsep}{settings.env.get('PATH', '')}"
    broken = dataclasses.replace(settings, env={**settings.env, "PATH": path})
    laptop.close()
    with Store.open(broken) as store:
        memory = store.add("Packing is housekeeping after a sync", workspace="global")
        with caplog.at_level(logging.WARNING):
            outcome, _, _ = store.sync()  # the code before raised SyncError here
    assert outcome.pushed
    assert "git gc failed" in caplog.text and "the next one packs again" in caplog.text
    assert needs_packing(root)  # left to the next sync
    desktop.sync()
    assert (desktop.vault.root / memory.path).is_file()


def test_a_timed_out_git_is_named_by_its_command_not_its_options() -> None:
    assert _command(["-c", "gc.autoDetach=false", "gc", "--quiet", "--auto"]) == "gc"
    assert _command(["-C", "/tmp/x", "-c", "a=b", "fetch", "--quiet", "origin"]) == "fetch"
    assert _command(["push", "origin"]) == "push"
