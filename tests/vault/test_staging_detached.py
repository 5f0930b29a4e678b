"""git's index is staged by a process of its own, never by the one that adds (issue 39: adds).

The adding process (a daemon, a library user, a one-shot command) commits without reading
git's index; a staging process (`memstore.vault.index_staging`) stages the paths later, one
at a time per vault, and whatever it leaves (killed, or beside another) is taken by the next.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstore.service.curation import Curator
from memstore.service.store import Store
from memstore.vault.git import INDEX_LAG, GitRepo, git_debris, read_index_lag
from memstore.vault.index_staging import (
    CLAIMED,
    STAGING_LOCK,
    is_staging,
    note_index_lag,
    spawn_stager,
)
from memstore.vault.locks import open_lock_file
from tests.conftest import git, settings_at, wait_until


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every time this process stages or reads git's whole index itself (libgit2)."""
    calls: list[str] = []
    for name in ("sync_index", "_stage", "repair_index"):
        original = getattr(GitRepo, name)

        def noted(self: GitRepo, *args: object, _name: str = name, _f: object = original) -> object:
            calls.append(_name)
            return _f(self, *args)  # type: ignore[operator]

        monkeypatch.setattr(GitRepo, name, noted)
    return calls


def lag_gone(vault: Path) -> bool:
    return not (vault / ".git" / INDEX_LAG).exists() and not (vault / ".git" / CLAIMED).exists()


def test_a_burst_of_adds_never_reads_git_index_in_the_adding_process(
    vault: Path, in_process: list[str]
) -> None:
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0  # as if the vault were large
        added = [
            store.add(f"Deploy step {n} needs a second reviewer", workspace="ops") for n in range(6)
        ]
        wait_until(lambda: lag_gone(vault), 20, "a staging process staged the burst")
        assert git(vault, "status", "--porcelain") == ""
        later = store.add("Releases are tagged from main only", workspace="ops")
        assert store.git.index_lag()[1] == [later.path]
        wait_until(lambda: lag_gone(vault), 20, "staged again")
    assert in_process == []  # neither the adds nor the close read git's index here
    assert git(vault, "status", "--porcelain") == ""
    tracked = git(vault, "ls-files").split()
    assert all(a.path in tracked for a in [*added, later])


def test_a_one_shot_add_answers_and_a_staging_process_stages_git_index(
    vault: Path, in_process: list[str]
) -> None:
    with Store.open(settings_at(vault)) as store:
        store.shared.one_shot = True  # as ops/lean.py opens it for `memstore add`
        store.git.defer_index_bytes = 0
        added = store.add("Staging deploys need a second reviewer", workspace="ops")
        assert store.git.index_lag()[1] == [added.path]
    assert git(vault, "log", "-1", "--format=%s").startswith("add(ops)")
    wait_until(lambda: lag_gone(vault), 20, "the staging process staged")
    assert git(vault, "status", "--porcelain") == ""
    assert in_process == []


def test_closing_a_store_waits_for_its_staging(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstore.vault.staging.INDEX_QUIET_S", 60.0)  # only the close stages
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0
        store.add("Staging deploys need a second reviewer", workspace="ops")
        assert not lag_gone(vault)
    assert lag_gone(vault)
    assert git(vault, "status", "--porcelain") == ""


def test_staging_never_runs_twice_at_once_and_a_waiting_one_takes_what_is_left(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstore.vault.staging.INDEX_QUIET_S", 60.0)  # only ours stage
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0
        added = store.add("The release branch is cut on Mondays", workspace="ops")
        held = open_lock_file(vault / ".git" / STAGING_LOCK)
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # as a staging process at work would
        try:
            pids = [
                spawn_stager(vault, store.vault.state_dir / "lock", os.environ) for _ in range(2)
            ]
            assert is_staging(vault) and store.shared.stager.is_live()
            # both wait: the paths are still named, nothing was staged beside the holder
            wait_until(lambda: (vault / ".git" / INDEX_LAG).exists(), 60, "lag")
            assert read_index_lag(vault)[1] == [added.path]
            assert "D  " in git(vault, "status", "--porcelain")
        finally:
            held.close()
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
        assert lag_gone(vault)
        assert git(vault, "status", "--porcelain") == ""


def test_a_killed_staging_leaves_its_claim_to_the_next_writer(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstore.vault.staging.INDEX_QUIET_S", 60.0)
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0
        first = store.add("Hotfixes skip the freeze", workspace="ops")
        # as if a staging process claimed the line and was killed before staging it
        lag = vault / ".git" / INDEX_LAG
        lag.rename(vault / ".git" / CLAIMED)
        second = store.add("Freezes start on the 20th", workspace="ops")
        assert read_index_lag(vault)[1] == [first.path, second.path]
    assert lag_gone(vault)  # the closing store's staging took the claim along
    assert git(vault, "status", "--porcelain") == ""


def test_an_edit_made_before_staging_stays_the_persons_unstaged_change(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        store.shared.one_shot = True
        store.git.defer_index_bytes = 0
        kept = store.add("The cache TTL is five minutes", workspace="webshop")
        gone = store.add("The old cache had no TTL", workspace="webshop")
        with (vault / kept.path).open("a", encoding="utf-8") as file:
            file.write("Except on Fridays.\n")
        Curator(store, datetime.now(UTC)).forget(store.resolve(gone.id))
    wait_until(lambda: lag_gone(vault), 20, "staged")
    assert git(vault, "status", "--porcelain") == f" M {kept.path}\n"
    assert gone.path not in git(vault, "ls-files").split()


def test_two_processes_adding_at_once_leave_git_status_clean(vault: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memstore.service.store import Store\n"
        "from tests.conftest import settings_at\n"
        "with Store.open(settings_at(Path(sys.argv[1]))) as store:\n"
        "    store.git.defer_index_bytes = 0\n"
        "    for n in range(8):\n"
        "        store.add(f'{sys.argv[2]} writes note {n} about deploys', workspace='ops')\n"
    )
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(vault), who], cwd=root)
        for who in ("alice", "bob")
    ]
    assert [p.wait(120) for p in procs] == [0, 0]
    wait_until(lambda: lag_gone(vault), 20, "staged")
    assert git(vault, "status", "--porcelain") == ""
    assert len([p for p in git(vault, "ls-files").split() if p.startswith("ops/")]) == 16


def test_a_staging_that_changes_no_entry_still_dates_git_index_after_head(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0
        added = store.add("Hotfixes skip the freeze", workspace="ops")
        wait_until(lambda: lag_gone(vault), 20, "staged")
        # named again (a staging's naming step can repeat what another took) and git's index
        # dated before HEAD: a staging that writes nothing would leave it looking killed
        note_index_lag(vault, [added.path], os.getpid())
        os.utime(vault / ".git" / "index", ns=(1, 1))
        pid = spawn_stager(vault, store.vault.state_dir / "lock", os.environ)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert lag_gone(vault)
        assert not git_debris(vault)[1]  # not older than HEAD: no repair at the next lock
    assert git(vault, "status", "--porcelain") == ""


def test_the_periodic_counter_flush_never_reads_git_index_in_the_flushing_process(
    vault: Path, in_process: list[str]
) -> None:
    """The daemon's tick writes recall counters as an add writes a memory: git's index left
    to the staging process (at a million memories the flush read all 134 MB of it into the
    daemon, 6.6 s of CPU, and kept it: ~200 MiB of RSS; fails on the old code)."""
    with Store.open(settings_at(vault)) as store:
        store.git.defer_index_bytes = 0  # as if the vault were large
        added = [
            store.add(f"Deploy step {n} needs a second reviewer", workspace="ops") for n in range(3)
        ]
        wait_until(lambda: lag_gone(vault), 20, "a staging process staged the adds")
        store.usage.record([a.id for a in added], store.writer.timestamp())
        assert store.flush_usage(0) == 3  # the periodic flush: every file due
        assert git(vault, "log", "-1", "--format=%s").startswith("recall: usage of 3")
        wait_until(lambda: lag_gone(vault), 20, "a staging process staged the flush")
    assert in_process == []
    assert git(vault, "status", "--porcelain") == ""
