"""Keeping a vault well: catch-up, crash healing, reindex, tidy, doctor, remote and sync."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from memstore.catalog.compare import compare
from memstore.catalog.indexer import CatchUp, Drift, Progress, rebuild
from memstore.catalog.leftovers import KeptCopy, kept_copies, set_aside
from memstore.catalog.updater import Moved, Updater
from memstore.core.errors import MemstoreError, NotFoundError, VaultError
from memstore.core.faults import crash_point
from memstore.index import SearchIndex, SearchIndexError
from memstore.index.parts import Stopper
from memstore.service import journal
from memstore.service.resources import Part, serialized
from memstore.vault.git import clear_stale_locks, git_debris
from memstore.vault.usage import FLUSH_EVERY_S

if TYPE_CHECKING:
    from memstore.service.store import Store
    from memstore.service.sync import SyncOptions, SyncOutcome

# Imported where used: sync (with the merge rules and the remote's plumbing), the code
# catalog and team vaults are no part of a search's catch-up (a session's first CLI call).

log = logging.getLogger(__name__)
# Documents one tidy's compaction may rewrite: it holds the vault lock (a writer waits 10 s
# for it) and Whoosh merges ~1,500 documents a second. A million memories built in chunks
# hold 40 segments of 25,000: merging them all held the lock for many minutes, every tidy
# (docs/benchmarks.md section 8, "Eighth session"). `memstore gc` still merges them all.
COMPACT_MAX_DOCS = 10_000
# How long closing a store waits for its background merge to stop: a merge stops between
# its steps (its helper killed), or finishes the swap it began (one commit under the locks).
MERGE_STOP_S = 10.0  # within serve's signal shutdown (STOP_WITHIN_S, 20 s) with its flush


class Maintenance(Part):
    """What keeps the index, git and the files in step: run by commands, shells and locks."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.merges = Merges(store)

    def heal(self) -> None:
        """Clear what a killed process left in git (runs each time the vault lock is taken).

        Costs a few stats unless there is something to repair.
        """
        store = self.store
        store.shared.follow_index()  # a reindex beside this process finished under the lock
        vault = store.vault
        locks, index_stale = git_debris(vault.root)
        if locks:
            removed = clear_stale_locks(vault.root, locks)
            if removed:
                log.warning(
                    "removed %s left by a killed process (no git process was using it)",
                    ", ".join(removed),
                )
        if vault.read_state(journal.SYNC_MARKER):
            from memstore.service.sync import finish_interrupted

            # before anything commits edits: a half-done checkout is memstore's, not a person's
            try:
                if finish_interrupted(vault, store.git, store.settings.host):
                    log.warning("finished a sync that was stopped during its checkout")
            except VaultError as err:
                log.warning("%s; the next memstore command tries again", err)
        journal.undo_killed_write(vault, lambda: store.git)
        try:
            fixed = store.shared.stager.heal(lambda: store.git, index_stale=index_stale)
        except VaultError as err:
            log.warning("%s; the next memstore command tries again", err)
            return
        if fixed:
            log.warning(
                "repaired git's index for %d %s a killed commit left staged wrong (%s)",
                len(fixed),
                "file" if len(fixed) == 1 else "files",
                ", ".join(fixed[:3]) + (" …" if len(fixed) > 3 else ""),
            )

    def catch_up(
        self, *, wait: bool = False, workspaces: set[str] | None = None, full: bool | None = None
    ) -> CatchUp:
        """Bring the index up to date with the files.

        A reader (`wait` False) skips this when a writer holds the lock right now: readers
        do not wait, and the writer updates the index itself. The watcher waits its turn, and
        so does a reader whose index was just created (a person deleted it): it is empty.
        `full` (with `wait`): compare every file, or only list the folders whose time
        changed (None: as Indexer.catch_up decides).
        """
        store = self.store
        with store.shared.mutex:
            if wait:
                with store.transaction(catch_up=False):
                    scopes = [None] if workspaces is None else sorted(workspaces)
                    return _joined([self.catch_up_held(w, full=full) for w in scopes])
            watched = store.vault.is_watched()  # first: it heals a .memstore made a file
            if store.indexer.unfilled:  # created just now (deleted by hand?): fill it first
                with store.transaction(catch_up=False) as tx:
                    return tx.catch_up()
            if watched:
                return CatchUp()  # a running watcher (memstore serve / watch) keeps it current
            with store.vault.try_lock() as locked:  # a reader's: never waits for a writer
                return self.catch_up_held() if locked else CatchUp()

    def catch_up_held(
        self,
        workspace: str | None = None,
        progress: Progress | None = None,
        moved: Moved | None = None,
        *,
        full: bool | None = None,
    ) -> CatchUp:
        """Catch up the index (under the vault lock: a transaction's, or a reader's try)."""
        try:
            return self.store.indexer.catch_up(
                progress, workspace=workspace, moved=moved, full=full
            )
        except SearchIndexError as err:
            return self.rebuild_damaged(err)

    def reconcile(self, workspaces: set[str] | None = None) -> CatchUp:
        """Compare every file (of `workspaces`, or the vault) with the index, holding
        neither the store nor the vault lock meanwhile, then apply what differs under both
        (catalog/compare.py): a watcher's full comparison, which at 1,000,000 memories
        takes seconds that recalls would otherwise wait. An index not filled yet, replaced
        by another process meanwhile, or whose manifest cannot be read apart, is compared
        the usual way, held."""
        store = self.store
        scopes = [None] if workspaces is None else sorted(workspaces)
        with store.shared.mutex:  # opened (the first time) by one thread only
            indexer = store.indexer
            manifest, held = indexer.manifest, indexer.unfilled or indexer.is_replaced()
        try:
            if held:
                raise SearchIndexError("compared held")
            compared = [compare(store.vault, manifest.path, w) for w in scopes]
        except (SearchIndexError, VaultError):
            return self.catch_up(wait=True, workspaces=workspaces, full=True)
        with store.transaction(catch_up=False):  # follows an index another process replaced
            if store.indexer is not indexer or indexer.manifest is not manifest:
                return _joined([self.catch_up_held(w, full=True) for w in scopes])
            try:
                indexer.check()
                updater = Updater(store.vault, indexer.search, indexer.manifest, indexer.listings)
                return _joined([updater.apply_compared(c, None) for c in compared])
            except SearchIndexError as err:
                return self.rebuild_damaged(err)

    def rebuild_damaged(self, err: SearchIndexError) -> CatchUp:
        # The index broke while open (e.g. a crash mid-commit): set it aside and rebuild.
        self.store.shared.forget_index_caches()
        return self.store.indexer.heal(err)

    @serialized
    def doctor(self, *, fix: bool = False) -> tuple[Drift, Drift | None]:
        """Compare the index with the files; with `fix`, reconcile and compare again.

        Returns the drift found and, when fixing, the drift left afterwards.
        """
        indexer = self.store.indexer
        found = indexer.drift()
        if not fix or found.is_clean:
            return found, None
        self.catch_up(wait=True)
        after = indexer.drift()
        if not after.is_clean:
            self.reindex()
            after = self.store.indexer.drift()
        return found, after

    def kept_copies(self) -> list[KeptCopy]:
        """The copies of indexes kept aside (damaged ones, for a week: catalog/leftovers.py)."""
        return kept_copies(self.store.vault)

    def set_aside(self) -> list[KeptCopy]:
        """What the vault moved out of memstore's way to .git/memstore-damaged/ (gc removes it)."""
        return set_aside(self.store.vault)

    @serialized
    def reindex(
        self, progress: Progress | None = None, embedding: Progress | None = None
    ) -> CatchUp:
        """Rebuild the index from the files alone; with the semantic view on, embed the
        memories its vectors lack (`embedding` reports that step)."""

        def step(done: int, total: int) -> None:
            if done * 2 >= total:
                crash_point("reindex")
            if progress is not None:
                progress(done, total)

        store = self.store
        with store.transaction(catch_up=False):
            shared = store.shared
            shared.close()
            shared.forget_index_caches()
            shared.indexer, result = rebuild(store.vault, step)
            from memstore.catalog.codebase import ingested

            if ingested(store.vault.state_dir):  # source trees are chunked again from scratch
                store.sources.writable().rebuild()
            store.vectors.view(locked=True, progress=embedding)
            return result

    def tidy(self, *, merge: bool = True, stopping: Callable[[], bool] = lambda: False) -> None:
        """Flush recall counters, pack git history past git's own threshold, compact an
        index of many segments and (`merge`) start merging its large ones in a thread: what
        a long-running shell (serve, watch) does every few minutes (`merge` False: the last
        time, as the process ends). `stopping`: the shell is stopping (the flush gives up)."""
        from memstore.vault import remote

        store = self.store
        store.writer.flush_usage(FLUSH_EVERY_S, stopping)  # the files due: each once an interval
        if stopping():
            return
        if remote.needs_packing(store.vault.root):
            with store.transaction(catch_up=False, serialize=False):
                remote.pack(store.vault.root, store.settings.env, auto=True)
        with store.shared.mutex:
            crowded = store.indexer.search.needs_compacting(COMPACT_MAX_DOCS)
        if crowded:  # a step bounded by what it rewrites: writers wait for it
            self.compact_index(COMPACT_MAX_DOCS)
        if merge:
            self.merge_segments(wait=False)

    def merge_segments(self, *, wait: bool = True) -> int:
        """Merge the index's large segments by tiers until none are due (Merges.run) and
        return how many were merged, or (`wait` False) start a thread doing it, unless one
        runs or the store closed, and return 0."""
        if wait:
            return self.merges.run()
        self.merges.start()
        return 0

    def stop_merging(self) -> None:
        """Stop the background merge and start none again: the store closes (Merges.stop)."""
        self.merges.stop()

    def compact_index(self, max_docs: int | None = None) -> int:
        """Merge the index into one segment (or, with `max_docs`, its smallest segments
        holding at most that many documents); return how many segments it had.

        Seconds at 10,000 memories, so it works on an index object of its own and leaves
        the store to other threads: searches go on reading the segments they have until
        it commits. The vault lock keeps memstore's writers out meanwhile.
        """
        store = self.store
        with store.transaction(catch_up=False, serialize=False):
            own = SearchIndex.open(store.indexer.search.root, create=False)
            try:
                before = own.segment_count()
                own.compact(max_docs)
            finally:
                own.close()
        return before

    def ensure_merge_driver(self) -> bool:
        """Point git's merge driver entry at this memstore when the command it names is gone
        (memstore reinstalled elsewhere, or registered before it was on PATH); True if fixed.
        """
        store = self.store
        settings = store.settings
        current = store.git.merge_driver_command()
        program = current.split(" ", 1)[0].strip("'\"")
        path = settings.env.get("PATH", "")
        if program and (
            shutil.which(program, path=path) if "/" not in program else os.access(program, os.X_OK)
        ):
            return False
        if not settings.executable:
            return False
        with store.transaction(catch_up=False):
            fixed = store.git.register_merge_driver(settings.executable)
        if fixed and current:
            log.warning(
                "git's merge driver pointed at %s, which does not exist; it now runs %s",
                program,
                settings.executable,
            )
        return fixed

    @serialized
    def set_remote(self, url: str, name: str = "origin") -> list[str]:
        """Point the vault's remote at `url` (added if missing) and set up a plain `git pull`
        (GitRepo.prepare_plain_git); return the git settings that changed."""
        from memstore.vault import remote

        store = self.store
        remote.set_remote(store.vault.root, name, url, store.settings.env)
        with store.transaction(catch_up=False):
            return store.git.prepare_plain_git(name)

    def _unmoved(self) -> Moved | None:
        """The sync's first catch-up: quick, not the comparison of every file that a
        reader's makes when the last is 5 minutes old (rule 1 of docs/search.md: ~9 s of CPU
        at 1,000,000 memories). Nothing is missed: the sync's status commits every edit
        saved by hand, in place or not, and its closing catch-up lists again the folders of
        all it committed and brought (`_moved`). A checkout by hand (rule 2) and a pending
        doctor's request still compare every file. None: HEAD unborn, the usual catch-up."""
        head = self.store.vault.head()
        return Moved(head, head[0], ()) if head[0] else None

    def _moved(self, before: tuple[str, int]) -> Moved | None:
        """What a sync's checkout changed since `before` (None: HEAD unborn there or now)."""
        store = self.store
        head = store.vault.head()
        if not before[0] or not head[0]:
            return None
        paths = store.git.paths_between(before[0], head[0]) if head[0] != before[0] else []
        return Moved(before, head[0], tuple(paths))

    def _rebuilt_for_purge(self, progress: Progress | None) -> CatchUp:
        """Rebuild the index after a sync's purge and say what changed as a catch-up would:
        the files the index held before and not after are removed, the new or changed ones
        updated (a rebuild alone lists every file it read as updated, so the purged file
        was counted `1 updated, 0 removed`)."""
        store = self.store
        with store.transaction(catch_up=False):
            held = store.indexer.manifest.fingerprints()
        rebuilt = self.reindex(progress)
        with store.transaction(catch_up=False):
            now = store.indexer.manifest.fingerprints()
        return CatchUp(
            tuple(sorted(p for p, seen in now.items() if held.get(p) != seen)),
            tuple(sorted(p for p in held if p not in now)),
            rebuilt.problems,
        )

    def remote_name(self) -> str:
        """Return the remote sync uses by default: the one the branch tracks (`remote add
        NAME URL` sets it), else origin."""
        return self.store.git.tracked_remote() or "origin"

    def remote_url(self, name: str = "") -> str:
        from memstore.vault import remote

        store = self.store
        return remote.remote_url(store.vault.root, name or self.remote_name(), store.settings.env)

    @serialized
    def sync(
        self,
        name: str = "",
        progress: Progress | None = None,
        options: SyncOptions | None = None,
    ) -> tuple[SyncOutcome, int, CatchUp]:
        """Commit edits and usage, fetch, merge with memstore's rules, push, catch up the
        index (`progress` follows the indexing of what the pull brought). `name`: the
        remote (default: the one the branch tracks, else origin). A team vault's clone
        only pulls: what reaches a team goes through `memstore share`."""
        from memstore.service.sync import SyncOptions, start_fetch, sync
        from memstore.service.teams import team_of

        options = options or SyncOptions()
        store = self.store
        name = name or self.remote_name()
        if team_of(store.vault.root):
            options = dataclasses.replace(options, pull_only=True)
        self.ensure_merge_driver()
        # A large vault's git index, left behind by the flush's commit, is staged by the merge's
        # checkout in its one write (vault/git.py move_to), not by a staging process meanwhile
        # (a whole read and write more); what no checkout took is staged after the sync.
        settings = store.settings
        with store.shared.stager.held_back():
            # The fetch runs beside the flush of usage (seconds at 1,000,000 files): it
            # writes only objects and refs/remotes/* (no gc), nothing the flush's commit does.
            early = start_fetch(store.vault, store.git, name, settings.env)
            try:
                with store.transaction(catch_up=False) as tx:
                    tx.catch_up(moved=self._unmoved())
                    flushed = store.writer.flush_usage_held(tx, FLUSH_EVERY_S)
                before = store.vault.head()  # the index is current: the flush caught it up
            except BaseException:  # until `sync` takes the fetch over, it is ours to end
                if early is not None:
                    early.stop()
                raise
            caught: list[tuple[str, CatchUp]] = []  # (HEAD, its catch-up) made while pushing

            def meanwhile() -> None:  # the index catches up while git pushes
                with store.transaction(catch_up=False) as tx:
                    head = store.vault.head()[0]
                    caught.append((head, tx.catch_up(progress=progress, moved=self._moved(before))))

            outcome = sync(
                store.vault,
                store.git,
                store.trailers,
                settings.env,
                name,
                lambda: store.vault.lock(settings.lock_timeout),  # sync's steps each take it
                options,
                meanwhile,
                early,
            )
            if outcome.rebased or outcome.purged_here:
                # A purge: the index keeps a deleted memory's text in its segment files until
                # they merge, so it is rebuilt, as forget --purge rebuilds it.
                caught_up = self._rebuilt_for_purge(progress)
            with store.transaction(catch_up=False) as tx:
                if outcome.rebased or outcome.purged_here:
                    pass
                elif caught and caught[-1][0] == store.vault.head()[0]:
                    caught_up = caught[-1][1]  # nothing moved HEAD after that catch-up
                else:
                    caught_up = tx.catch_up(progress=progress, moved=self._moved(before))
                self._pack_after_sync()
                plain_git = store.git.prepare_plain_git(name)  # a vault set up before it did this
        if plain_git:
            log.warning("set up a plain git pull in this vault: %s", ", ".join(plain_git))
        return outcome, flushed, caught_up

    def _pack_after_sync(self) -> None:
        """Pack git's loose objects past git's own threshold, the vault lock held. The
        sync is done by then (merged, pushed, indexed): a `git gc` that fails or outlasts
        memstore's git timeout (minutes at 1,000,000 memories on a loaded machine) is said
        in one line and left to the next sync, not reported as a failed sync."""
        from memstore.core.errors import SyncError
        from memstore.vault import remote

        store = self.store
        if not remote.needs_packing(store.vault.root):
            return
        try:
            remote.pack(store.vault.root, store.settings.env, auto=True)
        except SyncError as err:
            log.warning("%s; the sync itself is done, and the next one packs again", err)


def _joined(results: list[CatchUp]) -> CatchUp:
    """One catch-up's result of several (one per workspace)."""
    if len(results) == 1:
        return results[0]
    return CatchUp(
        tuple(p for r in results for p in r.updated),
        tuple(p for r in results for p in r.removed),
        tuple(p for r in results for p in r.problems),
    )


class Merges(Part):
    """The index's large segments merged by tiers (index/merging.py), by tidy in a thread
    of its own, until the store closes."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.thread: threading.Thread | None = None  # start()'s
        self._lock = threading.Lock()
        self._stopper = Stopper()  # stopped when the store closes: merges end, none starts

    def run(self) -> int:
        """Merge until no tier is due; return how many segments were merged. Each merge is
        written by a helper process without the vault lock, then swapped in by one short
        commit under it. Once stopped, a merge ends before its next step (its helper
        killed) or after the swap it began."""
        store, stopper = self.store, self._stopper
        merged = 0
        while True:
            with store.shared.mutex:
                if stopper.is_stopped:  # closed: its index is not opened again
                    return merged
                search = store.indexer.search
                chosen = search.merge_plan()
            built = search.build_merge(chosen, stopper) if chosen else None
            if built is None:
                if not chosen:  # merged: the large segments' flat lists (an older index's)
                    search.complete_flat(stopper)
                return merged
            with store.transaction(catch_up=False, serialize=False):
                if stopper.is_stopped:  # no swap begins once closing: the built one goes
                    shutil.rmtree(built.folder, ignore_errors=True)
                    return merged
                own = SearchIndex.open(search.root, create=False)
                try:
                    if not own.swap_in(built):
                        return merged
                finally:
                    own.close()
            merged += len(chosen)

    def start(self) -> None:
        """Run in a thread of its own, unless one runs or it was stopped."""
        with self._lock:
            if self._stopper.is_stopped or (self.thread is not None and self.thread.is_alive()):
                return
            self.thread = threading.Thread(target=self._run_quietly, name="memstore-merge")
            self.thread.daemon = True
            self.thread.start()

    def stop(self) -> None:
        """Stop the thread's merge, if one runs, and start none again (the store closes),
        waiting for it up to MERGE_STOP_S."""
        with self._lock:
            self._stopper.stop()
            thread = self.thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join(MERGE_STOP_S)
        if thread.is_alive():
            log.warning(
                "the index's background merge did not stop within %.0f s; it begins no swap "
                "from now on, and the next process's merge starts over",
                MERGE_STOP_S,
            )

    def _run_quietly(self) -> None:
        """Merge in a thread of its own: a failure is logged, and the next tidy tries again."""
        try:
            self.run()
        except MemstoreError as err:
            log.warning("merging the index's segments failed, will retry: %s", err)
        except Exception:  # a thread of its own: log it, the next tidy tries again
            log.exception("unexpected error merging the index's segments; will retry")


def remove_remote(store: Store, name: str) -> str:
    """Remove remote `name` (git's `remote remove`: its URL, remote-tracking branches and
    the branch's tracking of it); return the URL it had.

    Raises:
        NotFoundError: the vault has no remote `name` (the message lists those it has).
    """
    from memstore.vault import remote

    root, env = store.vault.root, store.settings.env
    # The store's mutex and lock, as set_remote takes them: not while a sync uses the remote.
    with store.shared.mutex, store.transaction(catch_up=False):
        urls = remote.remote_urls(root, env)
        if name not in urls:
            raise NotFoundError(_no_remote_to_remove(name, list(urls)))
        remote.remove_remote(root, name, env)
    return urls[name]


def _no_remote_to_remove(name: str, known: list[str]) -> str:
    """The error for `remote remove` naming a remote the vault lacks: the ones it has (by
    name, as `git remote` lists them, not in the order .git/config holds them)."""
    known = sorted(known)
    if known:
        return (
            f"the vault has no remote {name!r} (it has: {', '.join(known)}); name one of "
            f"those, e.g. 'memstore remote remove {known[0]}'"
        )
    return f"the vault has no remote {name!r}: it has none to remove"
