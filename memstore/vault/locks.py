"""The vault's locks: one writer at a time (an flock under .memstore/), watchers announced.

The lock files themselves are opened by Vault (it clears damage in their way); these
functions take a way to open one, so the file is opened only as the lock is entered.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from memstore.core.errors import LockedError, VaultError

Opener = Callable[[], BinaryIO]
RECORD_BYTES = 256  # the holder record's fixed width


@contextmanager
def hold(
    opener: Opener, where: Path, timeout: float, on_lock: Callable[[], None]
) -> Iterator[None]:
    """Hold the write lock (the file `where`); give up only if one holder keeps it
    `timeout` seconds. Once held, `on_lock` runs first (see Vault.lock)."""
    handle = opener()
    try:
        _wait_for(handle, timeout, where)
        _announce_holder(handle)
        on_lock()
        yield
    finally:
        handle.close()


@contextmanager
def hold_if_free(opener: Opener, on_lock: Callable[[], None]) -> Iterator[bool]:
    """Hold the write lock if it is free right now; yield whether it was taken."""
    try:
        handle = opener()
    except VaultError:
        yield False  # a read-only vault can still be searched, just not caught up
        return
    try:
        taken = try_flock(handle)
        if taken:
            _announce_holder(handle)
            on_lock()
        yield taken
    finally:
        handle.close()


@contextmanager
def hold_shared(opener: Opener) -> Iterator[None]:
    """Hold a shared lock (several watchers may hold it at once)."""
    handle = opener()
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)  # shared: several watchers may run
        yield
    finally:
        handle.close()


def is_held_shared(opener: Opener) -> bool:
    """Return whether some process holds `hold_shared` on this lock file right now."""
    try:
        handle = opener()
    except VaultError:
        return False
    with handle:
        return not try_flock(handle)  # our exclusive try fails only against a watcher


def _wait_for(handle: BinaryIO, timeout: float, where: Path) -> None:
    """Take the lock on `handle`, waiting while holders come and go.

    Every waiter polls at the same short interval (a long waiter is not slowed by back-off),
    and the deadline restarts whenever another holder takes over: only a holder that keeps
    the lock `timeout` seconds makes this give up.
    """
    holder = _holder(where)
    deadline = time.monotonic() + timeout
    while not try_flock(handle):
        now = time.monotonic()
        current = _holder(where)
        if current != holder:
            holder, deadline = current, now + timeout
        elif now >= deadline:
            pid, _, command = holder.rpartition(" ")[0].partition(" ")
            who = f"process {pid} ({command.strip() or 'memstore'})" if pid else "another process"
            raise LockedError(
                f"{who} has held the vault lock for over {timeout:.0f} s and is still running; "
                f"wait for it to finish or stop it (the lock is {where})"
            )
        time.sleep(0.005)  # bounded poll: the holder releases within a commit or two


def _announce_holder(handle: BinaryIO) -> None:
    """Write who holds the lock into the lock file (waiters read it to see progress).

    The record has a fixed width and overwrites the last one in place: truncating the file
    first cost each search ~0.04 ms on a quiet ext4 disk and milliseconds on a busy one.
    """
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:3]))
    who = f"{os.getpid()} {command}".encode("utf-8", "replace")[: RECORD_BYTES - 32]
    record = b"%s %d" % (who, time.time_ns())
    try:
        fd = handle.fileno()
        if os.fstat(fd).st_size > RECORD_BYTES:
            os.ftruncate(fd, RECORD_BYTES)  # a longer record an older memstore wrote
        os.pwrite(fd, record.ljust(RECORD_BYTES - 1) + b"\n", 0)
    except OSError:
        pass  # the record only informs waiters; the flock is what excludes them


def open_lock_file(path: Path) -> BinaryIO:
    """Open (creating) a lock file for reading and writing in place; not in append mode,
    where Linux's pwrite ignores the offset."""
    return os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600), "r+b")


def _holder(where: Path) -> str:
    try:
        return where.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def try_flock(handle: BinaryIO) -> bool:
    """Take an exclusive flock on `handle` if it is free now; say whether it was taken."""
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


@contextmanager
def held_within(path: Path, exclusive: bool, wait_s: float) -> Iterator[bool]:
    """Hold an flock on the file `path` (shared or `exclusive`), waiting at most `wait_s`
    seconds; yield whether it is held (False: it was not free in time, or cannot be made)."""
    try:
        handle = open_lock_file(path)
    except OSError:
        yield False
        return
    try:
        yield _flock_within(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, wait_s)
    finally:
        handle.close()


def shared_within(path: Path, wait_s: float) -> BinaryIO | None:
    """Return an open handle holding a shared flock on the file `path`, taken within
    `wait_s` seconds (None: not free in time, or cannot be made). The caller closes it; it
    is never handed to a child process (a child's children inherit it, and may outlive it)."""
    try:
        handle = open_lock_file(path)
    except OSError:
        return None
    if _flock_within(handle, fcntl.LOCK_SH, wait_s):
        return handle
    handle.close()
    return None


def _flock_within(handle: BinaryIO, kind: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle.fileno(), kind | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                return False
        time.sleep(0.005)  # bounded poll, as _wait_for
