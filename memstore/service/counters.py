"""The recall counters' flush: pending counts into the memory files, each at most once an interval.

Recall counts rows in .memstore/usage.sqlite (memstore/vault/usage.py); a flush writes the
due ones into `recalled` / `recalled_by` / `last_recalled` with one commit, under the
vault lock of the caller's transaction. Before touching a file it marks each memory's
share and the count it adds; a flush killed after its commit is finished by the next one
from those marks (`Usage.settle`), so a count reaches the file exactly once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from memstore.catalog.indexer import Entry
from memstore.core.errors import SecretError, VaultError
from memstore.core.faults import crash_point
from memstore.core.merge import tally
from memstore.core.model import Memory
from memstore.service.teams import team_of
from memstore.service.transaction import Transaction
from memstore.vault.files import write_many_atomic

if TYPE_CHECKING:
    from memstore.service.store import Store

STAMP = "%Y-%m-%dT%H:%M:%SZ"


def flush(store: Store, tx: Transaction, replica: str, every: float | None) -> int:
    """Write the pending recall counts due (`every`: seconds between periodic flushes, and
    between two writes of a file; None: every pending count, as sync does) in `tx`'s one
    commit; return how many memories.

    A team vault's clone never flushes: its counts are this person's, and a team tier only
    takes what a member shares (its journal keeps them, for this machine's ranking).
    """
    if team_of(tx.vault.root):
        return 0
    usage, indexer, vault = store.usage, store.indexer, tx.vault
    now = store.shared.clock()
    when = now.strftime(STAMP)

    def entry_of(memory_id: str) -> Entry | None:
        entries = [e for e in indexer.by_id_prefix(memory_id) if e.id == memory_id]
        return entries[0] if entries and vault.path(entries[0].path).is_file() else None

    usage.settle(lambda memory_id: _share(tx, entry_of(memory_id), replica))
    before = None if every is None else (now - timedelta(seconds=every)).strftime(STAMP)
    pending = usage.due(before)
    if not pending:
        return 0
    flushed = dict(pending)
    found = {memory_id: entry_of(memory_id) for memory_id in pending}
    # A person's edit of a recalled memory is committed on its own, not in the flush.
    paths = [entry.path for entry in found.values() if entry is not None]
    tx.commit_edits(paths)
    # A file left uncommitted for a credential is not rewritten: its counts wait for it.
    held = set(tx.git.changed_paths(paths)) if paths else set()
    written: dict[str, Memory] = {}
    shares: dict[str, tuple[int, int]] = {}
    for memory_id, (count, last) in pending.items():
        entry = found[memory_id]
        if entry is None:
            continue  # forgotten meanwhile: its counts go with it
        if entry.path in held:
            del flushed[memory_id]
            continue
        current = vault.read(entry.path)
        if not current.has_front_matter or current.problem:
            continue  # a file memstore did not write is never rewritten for a counter
        shares[memory_id] = (dict(current.recalled_by).get(replica, 0), count)
        written[entry.path] = replace(
            tally(current, "recalled", replica, count),
            last_recalled=max(current.last_recalled, last),
        )
    usage.mark(shares)
    crash_point("usage-marked")
    # The folders written in are known as indexed from the manifest, not listed: after the
    # writes only their new entries are recorded (a sync's flush at 1,000,000 memories
    # listed 159 whole month folders again after writing 606 files: 15.9 s).
    indexer = store.indexer
    touched = {path.rpartition("/")[0] for path in written}
    indexer.listings.adopt(
        {f: m for f, m in indexer.manifest.folders(None).items() if f in touched}
    )
    with indexer.listings.writing(written):
        _write(tx, written, store)
    crash_point("usage-committed")
    usage.clear(flushed, when, periodic=every is not None)
    # Record the folders the flush touched whose times have settled, so readers without a
    # daemon do not list them again (a quick look, which lists none the flush alone changed;
    # a watched vault's catch-up would compare every file).
    indexer.catch_up(full=False)
    return len(written)


def _share(tx: Transaction, entry: Entry | None, replica: str) -> int | None:
    """Return this clone's share of a memory's `recalled` in its file (None: gone)."""
    if entry is None:
        return None
    return dict(tx.vault.read(entry.path).recalled_by).get(replica, 0)


def _write(tx: Transaction, written: dict[str, Memory], store: Store) -> None:
    """Write the files, commit them in one commit, and index them (a refused commit puts
    every file back). A large vault's git index is left behind, as an add leaves it: a
    sync's checkout stages the paths in its own write of git's index, and otherwise the
    store's staging process does once writes pause. The periodic flush staged them itself:
    at a million memories git's index (134 MB) was read into the daemon, 6.6 s of CPU, and
    kept there (~190 MiB of its RSS after a flush, measured with the listings dropped)."""
    befores = {path: tx.git.read_work_file(path) for path in written}
    files = {path: tx.render_over(path, befores[path], m) for path, m in written.items()}
    with tx.writing(files):
        write_many_atomic(tx.vault, files)  # the fsyncs side by side
        crash_point("memory-written")
        if written:
            try:
                tx.commit(
                    f"recall: usage of {len(written)} "
                    f"{'memory' if len(written) == 1 else 'memories'}",
                    add=tuple(files),
                    defer_index=True,
                )
            except (VaultError, SecretError):  # a refused commit leaves nothing written
                for path, old in befores.items():
                    tx.put_back(path, old)
                raise
        store.indexer.record_all(written)
