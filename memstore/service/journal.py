"""The write journal: files a writer is between writing and committing, undone after a kill."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping

from memstore.core.errors import VaultError
from memstore.vault.files import Vault
from memstore.vault.git import GitRepo

WRITING = "writing"  # state file: paths a writer is between writing and committing
# state file: a sync stopped during its checkout (service/sync.py finishes it; kept here so
# the check at each lock imports no sync)
SYNC_MARKER = "sync-merge"
log = logging.getLogger(__name__)


def note_writing(vault: Vault, files: Mapping[str, bytes | None]) -> None:
    """Record the files written but not yet committed (empty: none); path → the bytes
    memstore writes, None for a deletion."""
    if not files:
        # Emptied by removing it (a missing journal reads as empty): a write and its
        # clearing cost ~0.15 ms so, ~0.6 when the clearing rewrote it through a rename.
        try:
            (vault.state_dir / "state" / WRITING).unlink(missing_ok=True)
            return
        except OSError:  # a folder where the file goes, an unwritable folder: as before
            pass
    vault.write_state(WRITING, "\n".join(f"{_digest(data)} {path}" for path, data in files.items()))


def put_back(vault: Vault, path: str, data: bytes | None) -> None:
    """Restore a file to `data` (None: remove it)."""
    if data is None:
        vault.path(path).unlink(missing_ok=True)
    else:
        vault.write_bytes_atomic(path, data)


def undo_killed_write(vault: Vault, open_git: Callable[[], GitRepo]) -> None:
    """Undo what a killed writer journaled — only where the file still holds what memstore
    wrote: the write was never reported, and anything else on disk is a person's, kept for
    an edit commit. Runs under the vault lock."""
    journal = [line.partition(" ") for line in vault.read_state(WRITING).splitlines()]
    # A garbled journal must never make this touch a file outside the vault's memories.
    entries = [(path, digest) for digest, _, path in journal if _is_memory_path(path)]
    if not entries:
        if journal:
            vault.write_state(WRITING, "")
        return
    undone, kept = [], []
    git = open_git()  # only now: most locks find no journal, and pygit2 costs
    head = git.head()
    for folder in sorted({path.rpartition("/")[0] for path, _ in entries}):
        vault.remove_scratch(folder)  # a temp file the kill left before its rename
    for path, digest in entries:
        committed, now = git.read_at(head, path), git.read_work_file(path)
        if now == committed:
            continue  # the commit was made, or nothing was written yet
        if _digest(now) != digest:
            kept.append(path)  # changed since the killed write: a person's, never undone
            continue
        put_back(vault, path, committed)
        undone.append(path)
    paths = [path for path, _ in entries]
    try:
        restaged = git.repair_index(paths)
    except VaultError as err:
        log.warning("%s; the next memstore command tries again", err)
        return  # the journal stays: the next lock holder repairs the index
    vault.write_state(WRITING, "")
    _report_healed(undone, kept, restaged)


def _digest(data: bytes | None) -> str:
    return hashlib.sha1(data).hexdigest() if data is not None else "-"


def _report_healed(undone: list[str], kept: list[str], restaged: list[str]) -> None:
    def names(paths: list[str]) -> str:
        return ", ".join(paths[:3]) + (" …" if len(paths) > 3 else "")

    if undone:
        log.warning(
            "undid an uncommitted write of %s by a process that was killed (it reported nothing)",
            names(undone),
        )
    if kept:
        log.warning(
            "kept %s as found: a killed process was writing it and someone changed it since",
            names(kept),
        )
    if restaged and not undone:
        log.warning(
            "repaired git's index for %s, which a process killed mid-commit left stale",
            names(restaged),
        )


def _is_memory_path(path: str) -> bool:
    parts = path.split("/")
    return (
        len(parts) >= 2
        and path.endswith(".md")
        and "\0" not in path
        and "\ufffd" not in path
        and all(part and not part.startswith(".") for part in parts)
    )
