"""The watcher where a person lives: a `git checkout` of 1,000 files, an editor's save
dance, the vault folder renamed or removed while it runs. Each ends with the files, the
index and git agreeing: git's status clean, no commit of the watcher's own for what git
wrote, the index holding what the files say."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memstore.catalog.indexer import Indexer
from memstore.daemon.watcher import Watcher
from memstore.service.store import Store
from memstore.vault.files import Vault
from tests.conftest import git, settings_at, wait_until
from tests.daemon.test_watcher import TIMEOUT, Live, memory_text, write


def hits(vault: Path, query: str, limit: int = 2000) -> list[str]:
    probe = Indexer.open(Vault(vault))
    try:
        return [h.document.id for h in probe.search.search(query, limit=limit)]
    finally:
        probe.close()


@pytest.mark.parametrize("count", [100, pytest.param(1000, marks=pytest.mark.long)])
def test_a_checkout_of_1000_files_is_followed_and_never_committed_as_an_edit(
    vault: Path, count: int
) -> None:
    """git writes the files one by one (a second or more under load): a settle in the
    middle must not commit the half-written tree as a person's edit. (1,000 files: ~7 s
    of CPU, most of it git's setup; -m long.)"""
    folder = vault / "burst"
    folder.mkdir()
    for n in range(count):
        write(folder / f"m-{n:08d}.md", memory_text(f"{n:08d}", f"item {n} walrus"))
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "walrus")
    git(vault, "checkout", "-qb", "other")
    for n in range(count):
        write(folder / f"m-{n:08d}.md", memory_text(f"{n:08d}", f"item {n} narwhal"))
    git(vault, "commit", "-qam", "narwhal")
    other = git(vault, "rev-parse", "HEAD").strip()
    git(vault, "checkout", "-q", "main")
    with Store.open(settings_at(vault)) as store:
        watcher = Watcher(store, reconcile_every=3600).start()
        try:
            assert len(hits(vault, "walrus")) == count
            git(vault, "checkout", "-q", "other")
            wait_until(
                lambda: len(hits(vault, "narwhal")) == count and not hits(vault, "walrus"),
                TIMEOUT,
                "the checkout's 1,000 files indexed",
            )
            write(vault / "global" / "after.txt", "a person's file, after the checkout\n")
            wait_until(
                lambda: "global/after.txt" in git(vault, "ls-files"),
                TIMEOUT,
                "the edit after the checkout committed",
            )
        finally:
            watcher.stop()
    assert git(vault, "log", "--format=%s", f"{other}..HEAD").splitlines() == [
        "edit(global): global/after.txt"
    ]
    assert git(vault, "diff", "--stat", other, "HEAD", "--", "burst") == ""
    assert git(vault, "status", "--porcelain") == ""


def test_vims_rename_dance_and_vs_codes_atomic_save_end_committed_and_indexed(
    vault: Path,
) -> None:
    """vim (backupcopy=no): the file renamed to `x.md~`, a new `x.md` written, the backup
    deleted. An atomic save: a temp file beside it renamed over it. Both are one edit."""
    path = vault / "global" / "v-vvvvvvvv.md"
    write(path, memory_text("vvvvvvvv", "first words about kestrels"))
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "first")
    with Store.open(settings_at(vault)) as store:
        watcher = Watcher(store, reconcile_every=3600).start()
        try:
            backup = path.with_name(path.name + "~")
            os.rename(path, backup)
            write(path, memory_text("vvvvvvvv", "second words about ospreys"))
            backup.unlink()
            wait_until(
                lambda: "ospreys" in git(vault, "show", f"HEAD:{path.relative_to(vault)}"),
                TIMEOUT,
                "vim's save committed",
            )
            temp = path.with_name(".v-vvvvvvvv.md.tmp-1234")
            write(temp, memory_text("vvvvvvvv", "third words about falcons"))
            os.replace(temp, path)
            wait_until(
                lambda: "falcons" in git(vault, "show", f"HEAD:{path.relative_to(vault)}"),
                TIMEOUT,
                "the atomic save committed",
            )
            wait_until(
                lambda: hits(vault, "falcons") == ["vvvvvvvv"] and not hits(vault, "ospreys"),
                TIMEOUT,
                "the index follows",
            )
        finally:
            watcher.stop()
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""
    assert "~" not in git(vault, "log", "--name-only", "--format=")


def test_the_vault_renamed_and_back_or_removed_while_watched(vault: Path, tmp_path: Path) -> None:
    """A person moves the vault folder away and back, or deletes it and puts a copy back,
    under a running watcher: it keeps running, and once the folder is back an edit there
    is committed and indexed, found by its event again (inotify watched the old folder:
    before, only the periodic look found anything, up to 5 minutes later)."""
    away = tmp_path / "moved-away"
    running = Live(vault, reconcile_every=0.2)
    running.watcher.start()
    try:
        vault.rename(away)
        write(away / "global" / "while-away.txt", "written while the vault was elsewhere\n")
        away.rename(vault)
        write(vault / "global" / "back-bbbbbbbb.md", memory_text("bbbbbbbb", "home again"))
        wait_until(
            lambda: (
                running.ids("home again") == ["bbbbbbbb"]
                and "global/back-bbbbbbbb.md" in git(vault, "ls-files")
            ),
            TIMEOUT,
            "the edit after the vault came back committed and indexed",
        )
        copy = tmp_path / "copy"
        shutil.copytree(vault, copy)
        shutil.rmtree(vault)
        # the running watcher may make vault/.memstore again (its state) before the copy lands
        shutil.copytree(copy, vault, dirs_exist_ok=True)
        # an event of the restored folder reaches the watcher (seen_paths: events only)
        again = vault / "global" / "again-aaaaaaaa.md"

        def seen_again() -> bool:
            write(again, memory_text("aaaaaaaa", "restored"))  # again: until one is seen
            return any(p.endswith("again-aaaaaaaa.md") for p in running.seen_paths())

        wait_until(seen_again, TIMEOUT, "an event of the restored vault folder seen")
        wait_until(
            lambda: (
                hits(vault, "restored") == ["aaaaaaaa"]
                and "global/again-aaaaaaaa.md" in git(vault, "ls-files")
            ),
            TIMEOUT,
            "the edit after the vault was restored committed and indexed",
        )
    finally:
        running.watcher.stop()
        running.probe.close()
        running.store.close()


def test_a_folder_renamed_with_a_persons_files_is_committed_without_an_empty_commit(
    vault: Path,
) -> None:
    """Its old path's event is a folder's, gone: it was taken for a file to commit, and made
    an `edit(vault): removed old` commit that changed nothing."""
    write(vault / "old" / "r-rrrrrrrr.md", memory_text("rrrrrrrr", "moving folders"))
    write(vault / "old" / "notes.txt", "beside the memory\n")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "a folder")
    with Store.open(settings_at(vault)) as store:
        watcher = Watcher(store, reconcile_every=3600).start()
        try:
            (vault / "old").rename(vault / "new")
            wait_until(
                lambda: (
                    git(vault, "ls-files", "old", "new").split()
                    == ["new/notes.txt", "new/r-rrrrrrrr.md"]
                ),
                TIMEOUT,
                "the folder's move committed",
            )
        finally:
            watcher.stop()
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""
    for commit in git(vault, "rev-list", "HEAD").split():
        assert git(vault, "diff-tree", "--root", "--no-commit-id", "--name-only", "-r", commit)
