"""Live code chunks: a saved source file under an ingested root is chunked again within a second.

Runs beside the vault's watcher in every long-running process (`memstore watch`, `serve`,
the resident daemon); it chunks what changed while nothing watched before that process
answers anything. Events only say which root changed; the work is the root's ordinary
re-ingest (git lists its files, unchanged ones are only stat'ed, changed ones re-chunked),
so a lost event costs nothing more than staleness until the next change or `memstore
ingest`. Roots ingested while it runs are picked up at its next look at the registrations.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from memstore.catalog.code_roots import CodeRoot, registered_roots
from memstore.catalog.sources import EXCLUDED_FOLDERS
from memstore.core.errors import MemstoreError
from memstore.service.store import Store

log = logging.getLogger("memstore.catalog.sources")

SETTLE_S = 0.2  # an editor's save is several events: wait this long after the last one …
MAX_WAIT_S = 0.8  # … but no longer than this after the first (a log written all the time)
LOOK_EVERY_S = 2.0  # how often the registrations are read again
CATCH_UP_WAIT_S = 10.0  # at start, how long to wait for another process writing the code index
_WRITES = ("created", "deleted", "modified", "moved", "closed")


class _RootEvents(FileSystemEventHandler):
    def __init__(
        self,
        root: CodeRoot,
        changed: dict[str, tuple[float, float]],
        wake: threading.Event,
    ) -> None:
        self.root = root
        self.base = Path(root.path)
        self.changed = changed  # root → (first, last) event time since its last refresh
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in _WRITES:
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path and self._counts(str(path)):
                now = time.monotonic()
                first, _ = self.changed.get(self.root.path, (now, now))
                self.changed[self.root.path] = (first, now)
                self.wake.set()
                return

    def _counts(self, path: str) -> bool:
        try:
            parts = Path(path).relative_to(self.base).parts
        except ValueError:
            return False
        return bool(parts) and not any(part in EXCLUDED_FOLDERS for part in parts)


class SourceWatcher:
    """Keep the chunks of a store's ingested roots in step with their files until stopped."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._observer = Observer()
        self._watched: dict[str, tuple[object, int]] = {}  # root path → its watch, folder inode
        self._changed: dict[str, tuple[float, float]] = {}  # root path → first, last change
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refreshed = 0  # roots re-ingested (for tests and status)

    def start(self, *, wait: bool = True) -> SourceWatcher:
        """Watch the ingested roots and chunk what changed while nothing watched. With `wait`
        (the daemon, `watch`) both are done when this returns, so the first recall answered
        sees current code; without (`serve`, which must answer `initialize` at once) the
        catch-up runs first thing in the background thread."""
        self._observer.start()
        if wait:
            self._catch_up()
        self._thread = threading.Thread(
            target=self._run, args=(not wait,), name="memstore-sources", daemon=True
        )
        self._thread.start()
        return self

    def _catch_up(self) -> None:
        """Chunk what changed while nothing watched (re-chunking a lost index takes minutes)."""
        self._look()
        try:
            self.store.refill_sources()  # roots a deletion or a killed run left unchunked
        except MemstoreError as err:
            log.warning("could not chunk the ingested roots: %s", err)
        for path in self._watched:  # edits made while nothing watched: a re-ingest finds them
            if not self._refresh(path, wait=CATCH_UP_WAIT_S):
                now = time.monotonic()  # another process keeps writing: the thread retries
                self._changed.setdefault(path, (now, now))

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is None:
            return  # never started
        self._observer.stop()
        self._observer.join(timeout=10)
        self._thread.join(timeout=30)

    def _run(self, catch_up: bool = False) -> None:
        if catch_up:
            try:
                self._catch_up()
            except Exception:  # the shell's outer loop: log it and keep watching
                log.exception("unexpected error while chunking the ingested roots")
        next_look = time.monotonic() + LOOK_EVERY_S
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_look:
                self._look()
                next_look = now + LOOK_EVERY_S
            for root, (first, last) in list(self._changed.items()):
                if now - last >= SETTLE_S or now - first >= MAX_WAIT_S:
                    del self._changed[root]
                    if not self._refresh(root):  # busy: another process writes; try again
                        self._changed.setdefault(root, (now, now))
            waits = [
                min(last + SETTLE_S, first + MAX_WAIT_S) - now
                for first, last in self._changed.values()
            ]
            self._wake.wait(timeout=max(0.01, min([next_look - now, *waits])))
            self._wake.clear()

    def _look(self) -> None:
        """Watch the roots registered now (and stop watching those removed)."""
        try:
            roots = {r.path: r for r in registered_roots(self.store.vault.state_dir)}
        except MemstoreError as err:
            log.warning("cannot read the ingested roots: %s", err)
            return
        for path, (watch, watched_inode) in list(self._watched.items()):
            if (
                path not in roots or _inode(path) != watched_inode
            ):  # removed, or the folder replaced
                del self._watched[path]
                with contextlib.suppress(KeyError, OSError):
                    self._observer.unschedule(watch)  # type: ignore[arg-type]
                if path in roots:
                    self._changed[path] = (time.monotonic(), time.monotonic())
        for path, root in roots.items():
            folder = _inode(path)
            if path in self._watched or folder is None:
                continue
            try:
                watch = self._observer.schedule(
                    _RootEvents(root, self._changed, self._wake), path, recursive=True
                )
            except OSError as err:
                log.warning("cannot watch %s: %s", path, err.strerror or err)
                continue
            self._watched[path] = (watch, folder)

    def _refresh(self, path: str, wait: float = 0.0) -> bool:
        """Re-ingest one root; False when another process holds the code index over `wait` s."""
        try:
            summary = self.store.refresh_source(path, wait=wait)
        except MemstoreError as err:
            log.warning("could not chunk %s again, will retry on its next change: %s", path, err)
            return True
        except Exception:  # the shell's outer loop: log it and keep watching
            log.exception("unexpected error while chunking %s", path)
            return True
        if summary is None:
            return not Path(path).is_dir() or not self._registered(path)
        self.refreshed += 1
        if summary.created or summary.updated or summary.removed:
            log.info(
                "chunked %s again: %d created, %d moved, %d removed",
                path,
                summary.created,
                summary.updated,
                summary.removed,
            )
        return True

    def _registered(self, path: str) -> bool:
        try:
            return any(r.path == path for r in registered_roots(self.store.vault.state_dir))
        except MemstoreError:
            return False


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None
