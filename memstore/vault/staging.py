"""Deferred git-index staging: when a large git index catches up with memstore's commits.

A commit of memstore's may leave git's index (written whole, at a cost in proportion to
the vault) behind HEAD, noting the paths in `.git/memstore-index-lag` (GitRepo.commit's
`defer_index`). One IndexStager per open vault stages them once writes pause, at process
exit, or — for a process that was killed — when the next writer takes the vault lock.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from memstore.core.errors import VaultError
from memstore.vault.files import Vault, process_alive
from memstore.vault.git import (
    GitRepo,
    index_lag_idle,
    index_lags,
    note_index_lag,
    read_index_lag,
)

log = logging.getLogger(__name__)

# A large git index is staged once writes pause this long (at most INDEX_LAG_MAX_S after
# the first), not on every add: writing it costs in proportion to the vault.
INDEX_QUIET_S = 0.5
INDEX_LAG_MAX_S = 5.0


class IndexStager:
    """Stage what this process's commits deferred, once writes pause (one timer at most)."""

    def __init__(
        self, vault: Vault, git: Callable[[], GitRepo | None], mutex: threading.RLock
    ) -> None:
        self._vault = vault
        self._git = git  # the open repository, None while none was opened
        self._mutex = mutex  # the store's: staging never runs beside a write in this process
        self._timer: threading.Timer | None = None
        self._due = 0.0  # when git's index is staged: writes paused, or lag too long
        self._since = 0.0

    def later(self) -> None:
        """Have git's index catch up once writes pause (after a commit that deferred it)."""
        git = self._git()
        if git is None or not git.index_lag()[1]:
            return
        with self._mutex:
            now = time.monotonic()
            self._due = min(now + INDEX_QUIET_S, self._since + INDEX_LAG_MAX_S)
            if self._timer is None:
                self._since = now
                self._due = now + INDEX_QUIET_S
                self._start(INDEX_QUIET_S)

    def flush(self, *, final: bool = False, detach: bool = False) -> None:
        """Stage what this process's commits deferred, when no write is under way.

        `final`: the store is closing; the timer is cancelled and nothing is retried.
        `detach` (with `final`, for a one-shot command): a child process stages it while this
        one returns at once. Reading and writing a 100,000-file git index costs libgit2
        ~140 ms, most of a `memstore add` run without a daemon; the commit is made and named
        in the lag file already, so the child only shortens the window in which `git status`
        shows the added file as deleted-and-untracked, as before; if it is killed, the next
        writer stages the paths (`heal`).
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
            git = self._git()
            if git is None or os.getpid() not in git.index_lag()[0]:
                return
            if final and detach:
                self._stage_in_child(git)
                return
            self._stage(git, final=final)

    def _stage(self, git: GitRepo, *, final: bool) -> None:
        with self._mutex:
            try:
                with self._vault.try_lock() as locked:
                    if locked:
                        git.sync_index()
                        if not final:  # a long-lived process: its next write needs no index
                            git.release_index()
                    elif not final:
                        self._start(INDEX_QUIET_S)  # a writer is busy: after it
            except VaultError as err:
                log.warning("%s; the next memstore command tries again", err)

    def _stage_in_child(self, git: GitRepo) -> None:
        """Stage in a grandchild process (no zombie is left to this one) and return at once."""
        child = os.fork()
        if child:
            os.waitpid(child, 0)  # the first child only forks again and leaves
            return
        try:
            os.setsid()  # out of the terminal's process group: a Ctrl-C meant for the next
            named, naming = os.pipe()
            grandchild = os.fork()  # command does not interrupt it (it would leave the lag)
            if grandchild:
                # Named before this command returns: the next command's lock-time heal
                # leaves a live stager's paths alone (a dead one's it stages itself).
                note_index_lag(self._vault.root, git.index_lag()[1], grandchild)
                return  # closing `naming` (at exit) lets the grandchild go on
            os.close(naming)
            os.read(named, 1)  # staging only once it is named: the list stays in step
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # the caller's pipes close when this command ends
                os.dup2(null, fd)
            self._stage(git, final=True)
        finally:
            os._exit(0)  # never back into the command: it has already answered

    def is_live(self) -> bool:
        """Whether git's index lags HEAD only because a live process defers staging it."""
        pids, lagging = read_index_lag(self._vault.root)  # no pygit2: runs in every process
        return (
            bool(lagging)
            and any(process_alive(pid) for pid in pids)
            and index_lag_idle(self._vault.root) < 2 * INDEX_LAG_MAX_S
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
