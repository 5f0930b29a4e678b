"""The daemon's warm-up: what first requests would read, read before it answers, then between requests.

Before it listens the daemon reads ahead what the first requests would (the searcher, the
core block, BM25's length parts, the common words' lists, large segments' key order, each
segment's terms for typo walks) for up to FIRST_S seconds (`first`), and freezes what it
read out of the cycle collector's walks: a client meanwhile answers in-process, as it does
until any daemon listens. Steps left over run in a thread one short step at a time, and
again once a merge or compaction swapped in a large segment (`again`). There requests go
first: a step starts only while no request waits for the store or holds it (`Turns`), so a
request waits at most for the one step under way (issue 39: the first hundred recalls at
100,000 memories had twice the steady p95 while the warm-up ran beside them; with the
warm-up behind requests, a burst of recalls from the first answer on left it no turn and
paid its steps itself: the typo lexicon of every segment, the key order).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator

from memstore.core.errors import MemstoreError
from memstore.index import SearchIndexError
from memstore.service.store import Store

log = logging.getLogger("memstore.daemon.warm")

# After a request, the warm-up waits this long without one before its next step: a client
# asking again at once (an agent's burst of recalls) finds the store free, not a step.
QUIET_S = 0.05
# Before it answers, the daemon warms until this long (wall) has passed, then ends the step
# under way: at 100,000 memories the whole warm-up is ~3.4 s of CPU, its first two steps
# (the searchers, the core block: what a first request pays anyway) ~1.7 s; at load 20 a
# budget of 10 s put the first answer 22 s later. What is left runs behind requests.
FIRST_S = 3.0
_DONE = object()
Steps = Iterator[None]


class Turns:
    """Requests before the warm-up: count the requests wanting the store, and let the
    warm-up take the request lock only when none does and none did for QUIET_S."""

    def __init__(self, serving: threading.Lock, clock: Callable[[], float]) -> None:
        self.serving = serving
        self._clock = clock
        self._changed = threading.Condition()
        self._wanting = 0
        self._last = 0.0
        self.stepping = False  # a warm-up step holds the request lock (a stop does not wait)

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """Around a request's wait for the store and its hold of it."""
        with self._changed:
            self._wanting += 1
        try:
            yield
        finally:
            with self._changed:
                self._wanting -= 1
                self._last = self._clock()
                self._changed.notify_all()

    @contextlib.contextmanager
    def step(self, stop: threading.Event) -> Iterator[bool]:
        """Hold the request lock for one warm-up step once no request wants it (yields
        False, holding nothing, when `stop` is set meanwhile)."""
        while not stop.is_set():
            with self._changed:
                if self._wanting:
                    self._changed.wait(0.5)
                    continue
                quiet = self._last + QUIET_S - self._clock()
                if quiet > 0:
                    self._changed.wait(quiet)
                    continue
                if self.serving.acquire(blocking=False):
                    break
            stop.wait(0.01)  # held by a request not counted (the stop, the heap's settle)
        else:
            yield False
            return
        self.stepping = True
        try:
            yield True
        finally:
            self.stepping = False
            self.serving.release()


def steps(store: Store) -> Iterator[None]:
    """The warm-up's steps, in the order first requests need them; each runs with the
    store held as a request holds it (the caller takes the turn)."""
    store.search("memstore", k=1, catch_up=False, tiers=True)  # the searchers, team tiers too
    yield
    store.recall("memstore", workspace=None, k=1, catch_up=False, tiers=True)  # the core block
    yield
    code = store.code_index()
    if code is not None:
        code.warm()
        yield
    with store.shared.mutex:
        index_steps = store.indexer.search.warm_steps()
    while True:
        with store.shared.mutex:
            if next(index_steps, _DONE) is _DONE:
                return
        yield


def again(store: Store, turns: Turns, warmed: int | None) -> int | None:
    """Return the index version to warm again, or None: when no request wants the store,
    the index has a large segment not read ahead (a background merge swapped one in, a
    compaction, another process's) and its version is not `warmed`, the last one warmed
    again. Without it the first search after a merge at a million memories read the merged
    segment's key order, norms and common words' lists itself. Never waits for the store."""
    if not turns.serving.acquire(blocking=False):
        return None
    try:
        shared = store.shared
        if not shared.mutex.acquire(blocking=False):
            return None
        try:  # the index as open (none: the next request opens it, and this looks again)
            version = None if shared.indexer is None else shared.indexer.search.unwarmed_version()
        finally:
            shared.mutex.release()
    except (MemstoreError, SearchIndexError):
        return None  # damaged or deleted: the next request heals, then this looks again
    finally:
        turns.serving.release()
    return None if version == warmed else version


def first(
    store: Store,
    stop: threading.Event,
    budget: float = FIRST_S,
    clock: Callable[[], float] = time.monotonic,
) -> Steps | None:
    """Run the warm-up's steps before the daemon answers, until done (None) or `budget`
    seconds have passed or `stop` is set (return the steps left, for `warm`); then collect
    and freeze the heap, so no collection a first request triggers walks what they read."""
    steps_left = steps(store)
    deadline = clock() + budget
    try:
        while not stop.is_set() and clock() < deadline:
            if next(steps_left, _DONE) is _DONE:
                return None
        return steps_left
    except (MemstoreError, SearchIndexError) as err:
        log.warning("could not warm the index: %s", err)
        return steps(store)  # the first request heals; the thread warms from the start
    finally:
        gc.collect()
        gc.freeze()


def warm(store: Store, turns: Turns, stop: threading.Event, left: Steps | None = None) -> bool:
    """Run the warm-up's steps (`left`: those `first` did not run), each in a turn of its
    own, until done (True) or `stop`."""
    steps_left = steps(store) if left is None else left
    try:
        while True:
            with turns.step(stop) as turn:
                if not turn:
                    return False
                if next(steps_left, _DONE) is _DONE:
                    return True
    except (MemstoreError, SearchIndexError) as err:
        log.warning("could not warm the index: %s", err)
    except Exception:  # a background thread's outer loop: the store closed under it
        if not stop.is_set():
            raise
    return False
