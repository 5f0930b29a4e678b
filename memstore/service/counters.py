"""The recall counters' flush: pending counts into the memory files, each at most once an interval.

Recall counts rows in .memstore/usage.sqlite (memstore/vault/usage.py); a flush writes the
due ones into `recalled` / `recalled_by` / `last_recalled` with one commit, under the
vault lock of the caller's transaction. Before touching a file it marks each memory's
share and the count it adds; a flush killed after its commit is finished by the next one
from those marks (`Usage.settle`), so a count reaches the file exactly once.

A flush of its own (`flush_beside`: the periodic one, the daemon's) holds the store's lock
only for short steps: it reads the files under it, builds the new files and their commit
with no lock held (at 1,000,000 memories the trees alone took 2-3 s, the whole flush held
readers 12-32 s), then writes the files and moves HEAD under it, if HEAD and the files
are still as read (else it builds again: another writer's commit or a person's edit is
never lost). Files a person edited and left uncommitted go through `flush`, under the lock.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING

from memstore.catalog.indexer import Entry
from memstore.core.codec import parse_memory, render_changes
from memstore.core.errors import SecretError, VaultError
from memstore.core.faults import crash_point
from memstore.core.merge import tally
from memstore.core.model import Memory
from memstore.service.teams import team_of
from memstore.service.transaction import Transaction
from memstore.vault import remote
from memstore.vault.edits import wait_for_git_commit
from memstore.vault.files import MAX_FILE_BYTES, write_many_atomic
from memstore.vault.git import GitRepo, Trailers
from memstore.vault.git_lean import objects
from memstore.vault.git_objects import entry_id
from memstore.vault.git_prebuilt import Prebuilt

if TYPE_CHECKING:
    from memstore.service.store import Store

STAMP = "%Y-%m-%dT%H:%M:%SZ"
# Builds a flush tries before it does the whole of it under the lock (HEAD moved by another
# writer between its read and its swap each time: a sync, adds in a burst).
BUILDS = 3


@dataclass
class Plan:
    """What a flush read under the lock: HEAD, the counts due and their files' bytes."""

    head: str
    when: str
    due: dict[str, tuple[int, str]]  # id → (count, latest recall)
    paths: dict[str, str]  # id → its file (none: forgotten, its counts go with it)
    read: dict[str, bytes | None]  # path → the bytes read
    recorded: dict[str, int]  # the manifest's times of the folders written in
    prunes: int = 0  # prunes run before it (remote.prunes_run): one since, nothing is built


@dataclass
class Built:
    """The files and commit a flush built from its Plan, with no lock held."""

    files: dict[str, bytes] = field(default_factory=dict)
    memories: dict[str, Memory] = field(default_factory=dict)
    shares: dict[str, tuple[int, int]] = field(default_factory=dict)  # see Usage.mark
    edited: set[str] = field(default_factory=set)  # ids whose files differ from HEAD
    commit: Prebuilt | None = None
    listed: dict[str, tuple[int, dict[str, int]]] = field(default_factory=dict)


def flush_beside(
    store: Store,
    replica: str,
    every: float | None,
    stopping: Callable[[], bool] = lambda: False,
) -> int:
    """Write the pending recall counts due (see `flush`) holding the store's lock and the
    vault lock only to read the files and then to write them and move HEAD; return how many
    memories. The files and their commit are built in between, with no lock held; once
    `stopping` says so (the daemon stops) the flush gives up before it writes anything,
    its counts left pending for the next."""
    if team_of(store.vault.root):
        return 0
    for _ in range(BUILDS):
        with store.transaction(catch_up=False) as tx:
            plan = _plan(store, tx, replica, every)
        if plan is None:
            return 0
        built = _build(store, plan, replica, stopping)
        if stopping():
            return 0  # nothing marked nor written: the counts wait in usage.sqlite
        with store.transaction(catch_up=False) as tx:
            done = _land(store, tx, plan, built, every is not None)
        if done is None:
            continue  # HEAD or a file moved on meanwhile: built again on what is there now
        _record_touched(store, {path.rpartition("/")[0] for path in built.files})
        if built.edited:  # a person's edit is committed first, under the lock, as before
            with store.transaction(catch_up=False) as tx:  # (due in this flush: all of them)
                done += flush(store, tx, replica, None, only=built.edited)
        return done
    with store.transaction(catch_up=False) as tx:
        return flush(store, tx, replica, every)


def flush(
    store: Store,
    tx: Transaction,
    replica: str,
    every: float | None,
    only: Collection[str] | None = None,
) -> int:
    """Write the pending recall counts due (`every`: seconds between periodic flushes, and
    between two writes of a file; None: every pending count, as sync does) in `tx`'s one
    commit; return how many memories. `only`: of these memories alone.

    A team vault's clone never flushes: its counts are this person's, and a team tier only
    takes what a member shares (its journal keeps them, for this machine's ranking).
    """
    if team_of(tx.vault.root):
        return 0
    usage, vault = store.usage, tx.vault
    pending, entry_of, when = _settled_due(store, tx, replica, every)
    if only is not None:
        pending = {memory_id: due for memory_id, due in pending.items() if memory_id in only}
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


def _settled_due(
    store: Store, tx: Transaction, replica: str, every: float | None
) -> tuple[dict[str, tuple[int, str]], Callable[[str], Entry | None], str]:
    """Under the locks: finish a killed flush (Usage.settle), then return the counts due
    (see `flush`), how to find a memory's entry (None: forgotten, or its file gone) and
    the flush's time stamp."""
    indexer, vault = store.indexer, tx.vault
    now = store.shared.clock()

    def entry_of(memory_id: str) -> Entry | None:
        entries = [e for e in indexer.by_id_prefix(memory_id) if e.id == memory_id]
        return entries[0] if entries and vault.path(entries[0].path).is_file() else None

    store.usage.settle(lambda memory_id: _share(tx, entry_of(memory_id), replica))
    before = None if every is None else (now - timedelta(seconds=every)).strftime(STAMP)
    return store.usage.due(before), entry_of, now.strftime(STAMP)


def _plan(store: Store, tx: Transaction, replica: str, every: float | None) -> Plan | None:
    """Under the locks: finish a killed flush, and read what is due and its files."""
    indexer = store.indexer
    due, entry_of, when = _settled_due(store, tx, replica, every)
    if not due:
        return None
    found = {memory_id: entry_of(memory_id) for memory_id in due}
    paths = {memory_id: entry.path for memory_id, entry in found.items() if entry is not None}
    touched = {path.rpartition("/")[0] for path in paths.values()}
    folders = indexer.manifest.folders(None)
    return Plan(
        head=tx.git.head(),
        when=when,
        due=due,
        paths=paths,
        read={path: tx.git.read_work_file(path) for path in paths.values()},
        recorded={folder: mtime for folder, mtime in folders.items() if folder in touched},
        prunes=remote.prunes_run(tx.vault.root),
    )


def _build(store: Store, plan: Plan, replica: str, stopping: Callable[[], bool]) -> Built:
    """With no lock held: the files with their new counts, and a commit of them on the
    HEAD the plan read (in a repository object of this thread's own).

    A purge's prune waits for it (remote.writing_objects); after one, nothing is built (the
    land finds HEAD moved and the flush reads again): the HEAD read may be gone, and the
    files read may hold the purged text, which an object written now would keep on disk."""
    with remote.writing_objects(store.vault.root, plan.prunes) as unpruned:
        return _build_unpruned(store, plan, replica, stopping) if unpruned else Built()


def _build_unpruned(store: Store, plan: Plan, replica: str, stopping: Callable[[], bool]) -> Built:
    built = Built(listed=store.indexer.listings.read_ahead(plan.recorded))
    git = GitRepo.open(store.vault.root)
    tree = git.tree(plan.head) if plan.head else None
    modes: dict[str, int] = {}
    for memory_id, path in plan.paths.items():
        if stopping():
            return built
        data, mode = plan.read[path], _mode(store.vault.path(path))
        committed = _blob_id(tree, path)  # hashed against HEAD here, not under the lock
        if data is None or mode is None or committed != str(objects().hash(data)):
            built.edited.add(memory_id)  # a person's edit, uncommitted: `flush` takes it
            continue
        current = _parse(data, path)
        if current is None or not current.has_front_matter or current.problem:
            continue  # a file memstore did not write is never rewritten for a counter
        count, last = plan.due[memory_id]
        built.shares[memory_id] = (dict(current.recalled_by).get(replica, 0), count)
        memory = replace(
            tally(current, "recalled", replica, count),
            last_recalled=max(current.last_recalled, last),
        )
        built.memories[path] = memory
        built.files[path] = render_changes(data.decode("utf-8"), current, memory).encode("utf-8")
        modes[path] = mode
    if built.files:
        count = len(built.files)
        message = f"recall: usage of {count} {'memory' if count == 1 else 'memories'}"
        caller = store.caller
        trailers = Trailers(caller.source, caller.session, caller.host)
        files = {path: (data, modes[path]) for path, data in built.files.items()}
        built.commit = git.build_on(plan.head, files, message, trailers, stopping)
        if not built.commit.commit:
            return built  # stopped
    crash_point("flush-built")
    return built


def _land(store: Store, tx: Transaction, plan: Plan, built: Built, periodic: bool) -> int | None:
    """Under the locks: write the built files and move HEAD to their commit, if HEAD, the
    files and the counts are still as planned; return how many memories (None: not)."""
    usage, indexer, vault = store.usage, store.indexer, tx.vault
    if usage.is_marked():
        return None  # a flush killed meanwhile (its marks are settled by the next plan)
    # A person's `git commit` under way would fail once HEAD moves under it: after it.
    wait_for_git_commit(vault.root, store.settings.lock_timeout)
    head, commit = tx.git.head(), built.commit
    if commit is not None and head != commit.head:  # another writer's commits since
        commit = tx.git.fold_onto(commit, head)  # theirs kept: a few trees written again
    elif head != plan.head:
        return None  # (nothing built: nothing to fold)
    if commit is None:
        return None  # one of the files committed meanwhile: read again
    if any(tx.git.read_work_file(path) != data for path, data in plan.read.items()):
        return None  # a person's edit meanwhile: read again
    pending = usage.pending()
    if any(
        pending.get(memory_id, (0, ""))[0] < count for memory_id, (count, _) in plan.due.items()
    ):
        return None  # another process flushed some meanwhile
    flushed = {
        memory_id: due for memory_id, due in plan.due.items() if memory_id not in built.edited
    }
    usage.mark(built.shares)
    crash_point("usage-marked")
    indexer.listings.adopt(plan.recorded, built.listed)
    with indexer.listings.writing(built.files):
        befores = {path: plan.read[path] for path in built.files}
        with tx.writing(built.files):
            write_many_atomic(vault, built.files)
            crash_point("memory-written")
            if commit is not None:
                try:
                    if not tx.git.advance(head, commit.commit, tuple(built.files)):
                        raise VaultError("HEAD moved while the vault was locked")
                except VaultError:
                    for path, old in befores.items():
                        tx.put_back(path, old)
                    raise
                tx.commits.append(commit.commit)
                # as a commit asked to defer (Transaction.commit's defer_index): advance leaves
                # git's index behind only where it is large, and the stager's `later` finds
                # nothing to stage otherwise (tests/service/test_flush_beside.py)
                tx.deferred = True
        indexer.record_all(built.memories)
    crash_point("usage-committed")
    usage.clear(flushed, plan.when, periodic=periodic)
    return len(built.files)


def _record_touched(store: Store, folders: set[str]) -> None:
    """Record the times of the folders a flush wrote in, so readers without a daemon do
    not list them again: each checked against this process's listing of it with no lock
    held (a `scandir` of ~5,000 entries a folder at 1,000,000 memories: ~2 s in all under
    the lock, as the quick catch-up that did it), then recorded under the locks if its
    time has not moved since (another write moves it: that folder is listed next time)."""
    listings, vault = store.indexer.listings, store.vault
    started = time.time_ns()
    own = {}
    for folder in sorted(folders):
        mtime = vault.folder_mtime(folder)
        if mtime is not None and listings.unchanged(folder, mtime):
            own[folder] = mtime
    if not own:
        return
    with store.transaction(catch_up=False):
        still = {
            folder: mtime for folder, mtime in own.items() if vault.folder_mtime(folder) == mtime
        }
        store.indexer.record_settled(still, started)


def _mode(file: os.PathLike[str]) -> int | None:
    """git's mode of a plain file (None: a link or no file, left to `flush`)."""
    try:
        found = os.lstat(file)
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    git = objects()
    return git.GIT_FILEMODE_BLOB_EXECUTABLE if found.st_mode & 0o100 else git.GIT_FILEMODE_BLOB


def _blob_id(tree: object, path: str) -> str | None:
    found = entry_id(tree, path) if tree is not None else None
    return None if found is None else str(found)


def _parse(data: bytes, path: str) -> Memory | None:
    """The memory in a file's bytes, as Vault.read reads it (None: not a file to rewrite)."""
    if len(data) > MAX_FILE_BYTES or b"\0" in data:
        return None
    try:
        return parse_memory(data.decode("utf-8"), path=path)
    except UnicodeDecodeError:
        return None
