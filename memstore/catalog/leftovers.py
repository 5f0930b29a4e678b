"""What earlier indexes left beside the index: killed rebuilds' folders and copies kept aside.

A rebuild builds in `index.building-<pid>` and a damaged index is moved aside to
`index.damaged-<time>` (indexer.py). Both are removed without asking when nothing can want
them, each time an index is opened (the first open of a process, a daemon's start):

- a building folder whose process is gone (a reindex killed midway);
- a copy kept aside for longer than KEEP_DAYS: a week to look at it, or send it with a bug
  report, is what it was kept for; after that it only fills the disk (161 MB at 100k
  memories, 1.8 GB at a million);
- a copy another memstore version built, whatever its age: before the twelfth index format
  an upgrade was taken for damage, and every such index was kept aside. It was not damaged:
  nothing in it is worth a look.

`memstore doctor` lists the copies kept (size, age, when they go); `memstore gc` removes them
all at once. The index in use and a building folder of a live process are never touched.
Doctor also lists what the vault moved out of memstore's way to `.git/memstore-damaged/`
(`set_aside`: a file where its state folder goes, vault/files.py), which only gc removes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import time
from pathlib import Path

from memstore.catalog.memory_manifest import FORMAT
from memstore.index import SearchIndex
from memstore.vault.files import Vault, process_alive

INDEX_DIR = "index"
KEEP_DAYS = 7  # a damaged index's copy is removed once this old
BUILDING, KEPT = f"{INDEX_DIR}.building-", f"{INDEX_DIR}.damaged-"
SET_ASIDE = ".git/memstore-damaged"  # where vault/files.py moves what stands in memstore's way
log = logging.getLogger(__name__)


class KeptCopy:
    """An index kept aside: where, its bytes, its age, and whether another version built it
    (a plain class: this module is imported by every first open, a dataclass costs it more)."""

    __slots__ = ("age_s", "outdated", "path", "size")

    def __init__(self, path: Path, size: int, age_s: float, outdated: bool) -> None:
        self.path, self.size, self.age_s, self.outdated = path, size, age_s, outdated


def remove_leftovers(vault: Vault, now: float | None = None) -> list[Path]:
    """Remove the building folders of rebuilds whose process is gone and the copies kept
    aside that nothing can want (see above); return what was removed."""
    try:
        found = [p for p in vault.state_dir.iterdir() if p.name.startswith((BUILDING, KEPT))]
    except OSError:
        return []  # no state folder yet, or unreadable: the open says so
    removed = []
    now = time.time() if now is None else now
    for left in found:
        if left.name.startswith(BUILDING):
            pid = left.name.rpartition("-")[2]
            if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
                SearchIndex.delete(left)
                removed.append(left)
                log.warning("removed %s, left by a reindex that was killed", left)
        elif (now - kept_since(left)) / 86400 >= KEEP_DAYS or built_elsewhere(left):
            shutil.rmtree(left, ignore_errors=True)
            removed.append(left)
            log.info("removed %s, an index kept aside that nothing wants", left)
    return removed


def kept_copies(vault: Vault, now: float | None = None) -> list[KeptCopy]:
    """Return the copies of indexes kept aside in the vault's state folder, oldest first."""
    try:
        found = sorted(p for p in vault.state_dir.iterdir() if p.name.startswith(KEPT))
    except OSError:
        return []
    now = time.time() if now is None else now
    return [KeptCopy(p, _size(p), max(0.0, now - kept_since(p)), built_elsewhere(p)) for p in found]


def set_aside(vault: Vault, now: float | None = None) -> list[KeptCopy]:
    """Return what the vault moved out of memstore's way to `.git/memstore-damaged/`
    (named `<name>-<time in ns>`), oldest first; 'memstore gc' removes the folder."""
    try:
        found = list((vault.root / SET_ASIDE).iterdir())
    except OSError:
        return []
    now = time.time() if now is None else now
    items = []
    for path in found:
        try:
            status = path.lstat()
        except OSError:
            continue  # gone meanwhile
        folder = path.is_dir() and not path.is_symlink()
        moved = status.st_ctime
        with contextlib.suppress(ValueError):
            moved = int(path.name.rsplit("-", 1)[-1]) / 1e9
        size = _size(path) if folder else status.st_size
        items.append(KeptCopy(path, size, max(0.0, now - moved), False))
    return sorted(items, key=lambda item: (-item.age_s, item.path.name))


def kept_since(copy: Path) -> float:
    """When a copy was moved aside: the time in its name (`index.damaged-%Y%m%dT%H%M%S`, the
    local time), else its status change time (a rename sets it)."""
    stamp = copy.name[len(KEPT) :][:15]
    with contextlib.suppress(ValueError, OverflowError):
        if len(stamp) == 15 and stamp[8] == "T":
            day, hour = stamp[:8], stamp[9:]
            parts = (int(day[:4]), int(day[4:6]), int(day[6:]), int(hour[:2]), int(hour[2:4]))
            return time.mktime((*parts, int(hour[4:]), 0, 0, -1))
    try:
        return copy.lstat().st_ctime
    except OSError:
        return time.time()  # gone meanwhile: young, so left alone


def built_elsewhere(copy: Path) -> bool:
    """Say whether another memstore version built this copy (its manifest reads, and names
    another format); one that does not read is damage, kept its week."""
    manifest = copy / "manifest.sqlite"
    if not manifest.is_file():
        return False
    try:
        db = sqlite3.connect(f"{manifest.as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return row is not None and str(row[0]) != FORMAT


def _size(folder: Path) -> int:
    """The bytes of the files under `folder` (what removing it frees)."""
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total
