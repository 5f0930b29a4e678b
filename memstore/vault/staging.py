"""Deferred git-index staging: when a large git index catches up with memstore's commits.

A commit of memstore's may leave git's index (written whole, at a cost in proportion to
the vault) behind HEAD, noting the paths in `.git/memstore-index-lag` (GitRepo.commit's
`defer_index`). One IndexStager per open vault has a staging process (index_staging.py)
stage them once writes pause or at process exit; this process never reads git's index for
it. A killed process's paths are staged by the next writer when it takes the vault lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from memstore.vault.files import Vault, process_alive
from memstore.vault.git import GitRepo
from memstore.vault.index_staging import (
    index_lag_idle,
    index_lags,
    is_staging,
    note_index_lag,
    read_index_lag,
    spawn_stager,
)

log = logging.getLogger(__name__)

# A large git index is staged once writes pause this long (at most INDEX_LAG_MAX_S after
# the first), not on every add: writing it costs in proportion to the vault.
INDEX_QUIET_S = 0.5
INDEX_LAG_MAX_S = 5.0
# How long the timer waits for its staging process, and a closing store (a daemon stopping
# answers within a second or so; a staging left running goes on alone, in its own session).
STAGING_WAIT_S = 60.0
CLOSING_WAIT_S = 10.0


class IndexStager:
    """Stage what this process's commits deferred, once writes pause (one timer at most)."""

    def __init__(
        self,
        vault: Vault,
        git: Callable[[], GitRepo | None],
        mutex: threading.RLock,
        env: Mapping[str, str],
    ) -> None:
        self._vault = vault
        self._env = env  # the staging process's (a shell's: PATH finds git)
        self._git = git  # the open repository, None while none was opened
        self._mutex = mutex  # the store's: guards the timer
        self._timer: threading.Timer | None = None
        self._due = 0.0  # when git's index is staged: writes paused, or lag too long
        self._since = 0.0
        self._held = False  # this process's lag is its caller's to stage (held_back)

    @contextlib.contextmanager
    def held_back(self) -> Iterator[None]:
        """While held, what this process's commits leave behind in git's index is the
        caller's to stage (a sync's checkout writes git's index once, with those paths):
        no staging process starts, and taking the vault lock leaves the lag alone however
        long it lasts. Afterwards what is left is staged once writes pause."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
            self.later()

    def later(self) -> None:
        """Have git's index catch up once writes pause (after a commit that deferred it)."""
        git = self._git()
        if self._held or git is None or not git.index_lag()[1]:
            return
        with self._mutex:
            now = time.monotonic()
            self._due = min(now + INDEX_QUIET_S, self._since + INDEX_LAG_MAX_S)
            if self._timer is None:
                self._since = now
                self._due = now + INDEX_QUIET_S
                self._start(INDEX_QUIET_S)

    def flush(self, *, final: bool = False, detach: bool = False) -> None:
        """Have a staging process stage what this process's commits deferred.

        `final`: the store is closing; the timer is cancelled and the staging waited for,
        unless `detach` (a one-shot command): then it answers at once and the staging
        process goes on alone. Reading and writing a 100,000-file git index costs ~100 ms
        of CPU; the commits are made and named in the lag file already, so staging only
        ends the window in which `git status` shows an added file as deleted-and-untracked.
        If the staging process is killed, the next staging or writer takes its paths.
        """
        with self._mutex:
            timer, self._timer = self._timer, None
            if final and timer is not None:
                timer.cancel()
            elif not final:
                wait = self._due - time.monotonic()
                if wait > 0:
                    self._start(wait)
                    return
            mine = self._mine()
            if not mine:
                return
        root = self._vault.root
        try:
            pid = spawn_stager(
                root,
                self._vault.state_dir / "lock",
                self._env,
                lambda pid: note_index_lag(root, mine, pid),
            )
        except OSError as err:
            log.warning("cannot start a staging of git's index (%s); the next writer does it", err)
            return
        if final and detach:
            return  # its own session: this command's end does not stop it
        done = _reap(pid, CLOSING_WAIT_S if final else STAGING_WAIT_S)
        if not final and (not done or self._mine()):
            with self._mutex:  # not staged (git's index locked by a person's git?): later
                if self._timer is None:
                    self._due = time.monotonic() + INDEX_LAG_MAX_S
                    self._start(INDEX_LAG_MAX_S)

    def _mine(self) -> list[str]:
        """The paths this process's commits left behind in git's index (no pygit2)."""
        pids, paths = read_index_lag(self._vault.root)
        return paths if os.getpid() in pids else []

    def is_live(self) -> bool:
        """Whether git's index lags HEAD only because a live process defers staging it or a
        staging process is at work."""
        root = self._vault.root
        pids, lagging = read_index_lag(root)  # no pygit2: runs in every process
        if lagging and (is_staging(root) or (self._held and os.getpid() in pids)):
            return True
        return (
            bool(lagging)
            and any(process_alive(pid) for pid in pids)
            and index_lag_idle(root) < 2 * INDEX_LAG_MAX_S
        )

    def heal(self, open_git: Callable[[], GitRepo], *, index_stale: bool) -> list[str]:
        """Under the vault lock: stage what a process left deferred (routine) and, when git's
        index is older than HEAD, repair what a killed commit left staged wrong; return the
        files repaired. Nothing is done while a live process defers on purpose.

        Raises:
            VaultError: git's index cannot be written.
        """
        lagging = index_lags(self._vault.root)  # a person's `git status` re-dates the index
        if not (index_stale or lagging) or self.is_live():
            return []
        git = open_git()
        git.sync_index()  # deferred staging a process left unfinished: routine
        return git.repair_index() if index_stale else []

    def _start(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self.flush)
        self._timer.daemon = True
        self._timer.start()


def _reap(pid: int, bound: float) -> bool:
    """Wait up to `bound` seconds for the staging process; say whether it succeeded."""
    deadline = time.monotonic() + bound
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True  # reaped elsewhere
        if done:
            return os.waitstatus_to_exitcode(status) == 0
        if time.monotonic() > deadline:
            return False  # left to run: its session is its own
        time.sleep(0.01)
