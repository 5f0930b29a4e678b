"""A full catch-up's comparison apart from its writes: planned holding nothing, applied held.

Comparing every file with the manifest is ~9 s of CPU at 1,000,000 memories. A daemon ran
it under the store's mutex, which every recall takes too, so a recall arriving meanwhile
waited seconds (issue 39: MCP recall p95 1.3 s at 1M). `compare` reads only the files and
a connection of its own to the manifest (WAL: it sees what is committed and never waits
for a writer), with no lock; `recheck`, under the lock, looks again at only the paths the
plan named: what changed between the two is decided by what is on disk and recorded
then, and what the comparison did not name changed after it listed its folder, which a
watcher's event or the next comparison brings in (docs/search.md, rule 3).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from memstore.catalog.memory_manifest import MemoryManifest
from memstore.catalog.plan import Plan, plan_catch_up
from memstore.core.model import FileProblem
from memstore.index import SearchIndexError
from memstore.vault.files import Fingerprint, Vault


@dataclass(frozen=True)
class Compared:
    """A comparison of the files (of `workspace`, or the vault) with the manifest."""

    workspace: str | None
    plan: Plan
    on_disk: dict[str, Fingerprint]  # the fingerprints of the files the plan indexes
    folders: dict[str, int]  # each folder listed, at the time it was listed
    started: int  # time.time_ns() before the first folder was listed
    head: tuple[str, int]  # HEAD then


def compare(vault: Vault, manifest_path: Path, workspace: str | None) -> Compared:
    """Compare the files with the manifest at `manifest_path` through a read-only
    connection of this call's own (no lock is needed, none is taken).

    Raises:
        SearchIndexError: the manifest cannot be read (the caller compares under the lock,
            where a damaged index is healed).
    """
    started, head = time.time_ns(), vault.head()
    try:
        db = sqlite3.connect(
            f"{manifest_path.resolve().as_uri()}?mode=ro",
            uri=True,
            timeout=10,
            isolation_level=None,
        )
    except sqlite3.Error as err:
        raise SearchIndexError(f"the manifest at {manifest_path} cannot be read ({err})") from err
    manifest = MemoryManifest(db, manifest_path)
    try:
        folders: dict[str, int] = {}
        plan, on_disk = compare_all(vault, manifest, workspace, None, folders)
    finally:
        manifest.close()
    return Compared(workspace, plan, on_disk, folders, started, head)


def compare_all(
    vault: Vault,
    manifest: MemoryManifest,
    workspace: str | None,
    skipped: list[FileProblem] | None,
    folders: dict[str, int],
) -> tuple[Plan, dict[str, Fingerprint]]:
    """Compare every file (of `workspace`, or the vault) with the manifest a folder at a
    time; return the plan and the fingerprints of the files it indexes.

    Only the differences are kept: the listing and the manifest's record held whole, one
    beside the other, were ~0.6 GB at 1,000,000 memories, on every full catch-up. `folders`
    receives each folder listed. A file the manifest lists as racy is unsure (plan.py).
    """
    racy = manifest.racy(workspace)
    top = workspace or ""
    where = vault.path(top)
    pending = [top] if os.path.isdir(where) and not os.path.islink(where) else []
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    unsure: list[str] = []
    differ: dict[str, Fingerprint] = {}
    while pending:
        folder = pending.pop()
        found: dict[str, Fingerprint] = {}
        pending += vault.scan_folder(folder, found, skipped, folders)
        recorded = manifest.fingerprints_in([folder], []) if folder in folders else {}
        for path, fingerprint in found.items():
            if path not in recorded:
                added.append(path)
            elif recorded[path] != fingerprint:
                changed.append(path)
            elif path in racy:
                unsure.append(path)
            else:
                continue
            differ[path] = fingerprint
        removed += (path for path in recorded if path not in found)
    # what the manifest records in folders not listed: gone, or unreadable (as before)
    removed += (p for p in manifest.paths(workspace) if _parent(p) not in folders)
    lists: tuple[list[str], ...] = (added, changed, removed, [], unsure)
    return Plan(*(tuple(sorted(paths)) for paths in lists)), differ


def recheck(
    vault: Vault, manifest: MemoryManifest, compared: Compared
) -> tuple[Plan, dict[str, Fingerprint]]:
    """Plan again, under the lock, only the paths `compared` found differing: each file's
    fingerprint now against the manifest's record now (a write of memstore's may have
    indexed one meanwhile, a person may have changed or deleted one)."""
    plan = compared.plan
    paths = {*plan.added, *plan.changed, *plan.removed, *plan.unsure}
    if not paths:
        return plan, {}
    now: dict[str, Fingerprint] = {}
    for path in paths:
        try:
            info = os.lstat(vault.path(path))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            now[path] = (info.st_mtime_ns, info.st_size)
    recorded = manifest.fingerprints_in(sorted({_parent(p) for p in paths}), [])
    recorded = {p: fp for p, fp in recorded.items() if p in paths}
    return plan_catch_up(now, recorded, manifest.racy(compared.workspace) & paths), now


def _parent(path: str) -> str:
    return path.rpartition("/")[0]
