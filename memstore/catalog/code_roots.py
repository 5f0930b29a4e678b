"""Registered source trees (`.memstore/code-roots.json`) and the code index's writer lock.

The registrations are local state a person lists and removes; they are never committed,
since a root's path means nothing on another machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

from memstore.core.errors import VaultError
from memstore.vault.locks import try_flock

ROOTS_FILE = "code-roots.json"  # .memstore/: the registered roots (kept when the index goes)
LOCK_FILE = "code.lock"  # .memstore/: one writer of the code index at a time, across processes
LOCK_WAIT_S = 10.0  # an ingest waits this long for another process's to finish


@dataclass(frozen=True)
class CodeRoot:
    """A registered source tree and the workspace its chunks belong to."""

    path: str  # absolute, resolved
    workspace: str
    added: str = ""  # when it was first ingested (ISO 8601, UTC)


class BusyError(VaultError):
    """Another process is writing the code index."""


def _lock_file(state_dir: Path) -> BinaryIO:
    try:
        return open(state_dir / LOCK_FILE, "a+b")
    except OSError as err:
        raise VaultError(f"cannot create {state_dir / LOCK_FILE}: {err.strerror}") from err


def _locked(handle: BinaryIO) -> bool:
    try:
        return try_flock(handle)  # the vault lock's own
    except OSError as err:
        raise VaultError(f"cannot lock the code index: {err.strerror}") from err


def registered_roots(state_dir: Path) -> list[CodeRoot]:
    """Return the roots registered in a vault (none when nothing was ever ingested)."""
    try:
        raw = (state_dir / ROOTS_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as err:
        raise VaultError(f"cannot read {state_dir / ROOTS_FILE}: {err.strerror}") from err
    try:
        rows = json.loads(raw)
        return [
            CodeRoot(str(r["path"]), str(r["workspace"]), str(r.get("added", ""))) for r in rows
        ]
    except (ValueError, TypeError, KeyError) as err:
        raise VaultError(
            f"{state_dir / ROOTS_FILE} is not a list of roots ({err}); fix or delete it, "
            "then `memstore ingest PATH` each source tree again"
        ) from err


def write_roots(state_dir: Path, roots: list[CodeRoot]) -> None:
    target = state_dir / ROOTS_FILE
    scratch = target.with_name(f".{ROOTS_FILE}.tmp")
    try:
        scratch.write_text(json.dumps([asdict(r) for r in roots], indent=2) + "\n", "utf-8")
        os.replace(scratch, target)
    except OSError as err:
        raise VaultError(f"cannot write {target}: {err.strerror}") from err


def ingested(state_dir: Path) -> bool:
    """Say whether a vault has any registered root (else no code index is opened)."""
    return (state_dir / ROOTS_FILE).is_file() and bool(registered_roots(state_dir))


class WriterLock:
    """The code index's writer lock, across processes (a flock on `.memstore/code.lock`,
    naming its holder) and re-entrant within one."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._depth = 0  # how deep this process is in `held`

    @contextlib.contextmanager
    def held(self, wait: float = LOCK_WAIT_S) -> Iterator[None]:
        """Hold the code index's writer lock (`.memstore/code.lock`, re-entrant in this
        process); raise BusyError if another process keeps it over `wait` seconds."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        handle = _lock_file(self.state_dir)
        try:
            deadline = time.monotonic() + wait
            while not _locked(handle):
                if time.monotonic() >= deadline:
                    holder = (self.state_dir / LOCK_FILE).read_text("utf-8", "replace").strip()
                    raise BusyError(
                        f"another memstore is writing the code index ({holder or 'unknown'}); "
                        "wait for it to finish, then run the command again"
                    )
                time.sleep(0.05)
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}".encode())
            handle.flush()
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0
        finally:
            handle.close()
