"""The watcher: watchdog events become debounced batches; each batch runs the same catch-up.

It only collects paths. The work is the reconcile the CLI runs before a search, so events
can be lost (an inotify overflow, a watcher started late) without the index drifting:
every batch compares the workspace folders it touched, a batch that changed something is
followed by one more settle scan of them, and the whole vault is looked at again at start
and every 30 s — less often while nothing happens (doubling up to every 5 minutes; any
event brings it back to 30 s). That periodic look lists only the folders whose time
changed (a quick catch-up: new, deleted and renamed files); every file is compared at
start and every 5 minutes (`full_every`: a file rewritten in place whose event was lost).
Comparisons hold neither the store nor the vault lock (Maintenance.reconcile): at
1,000,000 memories one is ~9 s of CPU, which recalls waited out before.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from memstore.catalog.indexer import CatchUp
from memstore.core.codec import is_utf8_name
from memstore.core.errors import MemstoreError, VaultError
from memstore.daemon.debounce import SETTLE_MAX_S, SETTLE_S, Debouncer
from memstore.daemon.source_watcher import SourceWatcher
from memstore.index import SearchIndexError
from memstore.service.store import Store
from memstore.vault.edits import is_persons_file
from memstore.vault.git_processes import git_running_in

log = logging.getLogger("memstore.daemon.watcher")


class _BenignShutdownRace(logging.Filter):
    """watchdog logs an error when an event races its own shutdown; nothing is lost (the
    next start reconciles), so a person should not see it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_BenignShutdownRace())
# watchdog warns when a folder created while it adds watches is watched twice; harmless.
warnings.filterwarnings(
    "ignore", message="Callback with id .* already exists", category=RuntimeWarning
)
CHANGES = (
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
)
RECONCILE_S = 30.0
RECONCILE_MAX_S = 300.0  # the quietest pace of reconciles (a quick one: folder times)
FULL_EVERY_S = 300.0  # every file compared at least this often (~0.5 s CPU at 100k, ~9 s at 1M)
TICK_S = 300.0  # how often a long-running process writes its pending recall counters
OnBatch = Callable[[CatchUp, set[str]], None]


def is_relevant(root: Path, path: str, is_directory: bool) -> bool:
    """Return whether an event on `path` can change a memory, or a person's file that
    memstore commits as sync does (`notes.txt`, an image: one rule, `is_persons_file`)."""
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        return False
    if not parts or not is_persons_file("/".join(parts)):
        return False  # .git/, .memstore/, dotfiles, editors' backups, swap and temp files
    # a name that is not UTF-8 is no memory: the catch-up reports it (doctor lists it)
    return path.isascii() or is_utf8_name(path)


class _Collector(FileSystemEventHandler):
    def __init__(self, root: Path, events: queue.SimpleQueue[str]) -> None:
        self.root = root
        self.events = events

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path and is_relevant(self.root, str(path), event.is_directory):
                # a folder's path ends in "/": gone, it is no file to commit (see _batch)
                self.events.put(str(path) + ("/" if event.is_directory else ""))


class Watcher:
    """Keep a store's index in step with its vault until stopped."""

    def __init__(
        self,
        store: Store,
        *,
        on_batch: OnBatch | None = None,
        reconcile_every: float = RECONCILE_S,
        on_tick: Callable[[], object] | None = None,
        tick_every: float = TICK_S,
        full_every: float = FULL_EVERY_S,
        on_last_tick: Callable[[], object] | None = None,
        settle_max: float = SETTLE_MAX_S,
    ) -> None:
        self.store = store
        self.settle_max = settle_max
        self.full_every = full_every
        self.on_batch = on_batch
        self.on_tick = on_tick
        self.on_last_tick = on_last_tick or on_tick  # the stop's (the process ends after it)
        self.tick_every = tick_every
        self.reconcile_every = reconcile_every
        self._events: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._touched: set[str] = set()  # vault paths changed since edits were last committed
        self._thread: threading.Thread | None = None
        self._observer = Observer()
        self._watched = (0, 0)  # the vault folder watched (device, inode)
        self.ready = threading.Event()
        self.sources = SourceWatcher(store)  # ingested source trees, chunked again live
        self.last_catch_up: float | None = None  # wall-clock time the last catch-up finished

    def start(self, *, wait: bool = True) -> Watcher:
        """Start watching in a background thread.

        With `wait`, return once the first catch-up is done and events are being collected;
        `ready` is set at that point either way.
        """
        root = self.store.vault.root
        try:
            self.store.ensure_merge_driver()  # serve and watch run long: a good time to check
        except MemstoreError as err:
            log.warning("could not check git's merge driver entry: %s", err)
        # Only events that can change a file: git reading thousands of objects per commit
        # (opened / closed-without-writing) would otherwise all reach Python.
        try:
            self._watch(root)
            self._observer.start()
        except OSError as err:  # the vault (or a folder of it) removed as watching began
            raise VaultError(f"cannot watch {root}: {err.strerror or err}") from err
        # code changed while nothing watched is chunked first (with `wait`: `serve` answers
        # `initialize` at once and chunks it in the background): the vault's watcher then
        # announces itself (`watching`), and readers rely on it for code too
        self.sources.start(wait=wait)
        self._thread = threading.Thread(target=self._run, name="memstore-watcher", daemon=True)
        self._thread.start()
        if wait:
            self.ready.wait(timeout=60)
        return self

    def _watch(self, root: Path) -> None:
        found = os.stat(root)
        self._observer.schedule(
            _Collector(root, self._events), str(root), recursive=True, event_filter=list(CHANGES)
        )
        self._watched = (found.st_dev, found.st_ino)

    def _watch_again_if_replaced(self) -> None:
        """Watch the vault folder anew if it was removed and put back (restored from a copy,
        cloned again): inotify watched the old folder, and no event of the new one came."""
        root = self.store.vault.root
        try:
            found = os.stat(root)
            if (found.st_dev, found.st_ino) != self._watched:
                self._observer.unschedule_all()
                self._watch(root)
                log.info("watching %s again: the folder was replaced", root)
        except OSError as err:  # not back yet: the next reconcile looks again
            log.debug("cannot watch %s yet: %s", root, err)

    def stop(self, *, final_tick: bool = True) -> None:
        """Stop watching, wait for the current batch, and (`final_tick`) run the periodic task
        once more (`on_last_tick`, when given: one that starts nothing the exit would cut)."""
        self._stop.set()
        self._events.put("")  # wake the loop
        self.sources.stop()
        self._observer.stop()
        self._observer.join(timeout=10)
        if self._thread is not None:
            self._thread.join(timeout=30)
        if final_tick:
            self._tick(self.on_last_tick)  # e.g. recall counters: written before the process ends

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _already_indexed(self, paths: set[str]) -> bool:
        """Say whether every path is a memory file the index holds exactly as it is on disk.

        Then a catch-up would find nothing, and it would compare every file of the
        workspace (at 100k memories: a quarter second, twice per add, holding the store).
        Folder events, and files the index lacks or has with another size or time, say no.
        """
        root = self.store.vault.root
        files = []
        for path in paths:
            relative = Path(path).relative_to(root)
            if len(relative.parts) < 2 or not path.endswith(".md"):
                return False
            files.append(relative.as_posix())
        if not files:
            return False
        # Each file's own row: reading its workspace's (~12,000 rows at 100k memories) was
        # ~40 ms of the daemon's CPU per event batch at load, one or more per add.
        try:
            # memstore's own add holds the store while it writes a file and indexes it: its
            # event, come before the add ends (a loaded machine), finds the row once it has
            with self.store.shared.mutex:
                return not self.store.indexer.manifest.changed_among(root, files)
        except (OSError, MemstoreError, SearchIndexError):
            return False  # the index is busy being repaired, or damaged: catch up

    def _workspaces(self, paths: set[str]) -> set[str] | None:
        """The workspace folders events touched; None (scan everything) when unsure."""
        root = self.store.vault.root
        found = set()
        for path in paths:
            parts = Path(path).relative_to(root).parts
            if len(parts) < 2:
                return None  # a workspace folder itself was created, moved or deleted
            found.add(parts[0])
        return found or None

    def _run(self) -> None:
        # Files may have changed while nothing was watching: every file is compared (in
        # place too), with events already collected (the observer started first), so
        # what changes during the comparison is a batch of its own afterwards.
        self._batch(set(), everything=True)
        # While this is held, readers in other processes skip their own scan of the vault,
        # and leave catch-ups to this watcher. Taken only now, so no reader skips its scan
        # of an index that is not current yet; the quick look then takes in what was
        # created or deleted meanwhile (the events of the meantime follow it too).
        with self.store.vault.watching():
            self._batch(set(), everything=True, quick=True)
            self.ready.set()
            self._loop()

    def _loop(self) -> None:
        debouncer, root = Debouncer(), self.store.vault.root
        # What people changed while nothing watched (or as it started) is committed once it
        # settles, as an edit made while watching is, not at the first reconcile (a `git
        # pull` meanwhile refuses: "local changes would be overwritten").
        settle_at: float | None = time.monotonic() + SETTLE_S if self._touched else None
        settle_by = time.monotonic() + self.settle_max  # the latest settle_at (SETTLE_MAX_S)
        pace = self.reconcile_every
        next_reconcile = time.monotonic() + pace
        next_full = time.monotonic() + self.full_every
        next_tick = time.monotonic() + self.tick_every
        settle_paths: set[str] = set()
        while not self._stop.is_set():
            now = time.monotonic()
            wake = min(
                t
                for t in (debouncer.deadline(), settle_at, next_reconcile, next_tick)
                if t is not None
            )
            try:
                path = self._events.get(timeout=max(wake - now, 0.0))
                if path:
                    debouncer.note(path, time.monotonic())
            except queue.Empty:
                pass
            now = time.monotonic()
            paths = debouncer.due(now)
            if paths:
                changed = self._batch(paths)
                settle_by = settle_by if settle_at is not None else now + self.settle_max
                settle_at = min(now + SETTLE_S, settle_by) if changed else settle_at
                settle_paths |= paths
                pace = self.reconcile_every  # things happen: reconcile at the full pace
                next_reconcile = min(next_reconcile, now + pace)
            elif settle_at is not None and now >= settle_at and git_running_in(root):
                settle_at = now + SETTLE_S  # a checkout or pull under way: its files are git's
            elif settle_at is not None and now >= settle_at:
                if settle_paths:  # none: the start's catch-up found what is to commit
                    self._batch(settle_paths)
                self._commit_edits()
                settle_at, settle_paths = None, set()
            elif now >= next_reconcile:
                self._watch_again_if_replaced()
                full = now >= next_full
                found = self._batch(set(), everything=True, quick=not full)
                next_full = now + self.full_every if full else next_full
                self._commit_edits()
                quiet = max(self.reconcile_every, RECONCILE_MAX_S)
                pace = self.reconcile_every if found else min(pace * 2, quiet)
                next_reconcile = now + pace
            if now >= next_tick:
                self._tick()
                next_tick = now + self.tick_every

    def _tick(self, task: Callable[[], object] | None = None) -> None:
        task = task or self.on_tick
        if task is None:
            return
        try:
            task()
        except MemstoreError as err:
            log.warning("periodic task failed, will retry: %s", err)
        except Exception:  # the shell's outer loop: log it and keep watching
            log.exception("unexpected error in a periodic task; will retry")

    def _commit_edits(self) -> None:
        """Commit the files people changed, once they have settled (one commit a workspace)."""
        touched, self._touched = self._touched, set()
        if not touched:
            return
        try:
            with self.store.transaction(catch_up=False, serialize=False) as tx:
                tx.commit_edits(touched)
        except MemstoreError as err:
            self._touched |= touched  # retried after the next batch
            log.warning("could not commit edits made by hand, will retry: %s", err)

    def _batch(self, paths: set[str], *, everything: bool = False, quick: bool = False) -> bool:
        """Catch up: the folders `paths` are in, or `everything` (`quick`: only the folders
        whose time changed); return whether anything changed."""
        root = self.store.vault.root
        # A person's file that is no memory (notes.txt, an image) is committed once it
        # settles, as sync commits it; only memories and folders are indexed.
        others = {p for p in paths if not p.endswith((".md", "/")) and not os.path.isdir(p)}
        files = {p for p in paths if p.endswith(".md")} | others
        self._touched |= {Path(p).relative_to(root).as_posix() for p in files}
        paths = paths - others
        if others and not paths and not everything:
            return True  # nothing to index: its commit waits for the quiet
        if not everything and self._already_indexed(paths):
            return False  # memstore's own write (it indexes what it writes): nothing to scan
        try:
            if quick:
                result = self.store.catch_up(wait=True, full=False)
            else:
                scope = None if everything else self._workspaces(paths)
                result = self.store.maintenance.reconcile(scope)
            self.last_catch_up = time.time()
            self._touched |= {*result.updated, *result.removed}
        except MemstoreError as err:
            log.warning("catch-up failed, will retry: %s", err)
            return True
        except Exception:  # the shell's outer loop: log it and keep watching
            log.exception("unexpected error while indexing; will retry")
            return True
        if self.on_batch is not None and (result.updated or result.removed or paths):
            self.on_batch(result, paths)
        return bool(result.updated or result.removed or others)
