"""The resident daemon's memory between requests: collect, freeze, unmap."""

from __future__ import annotations

import contextlib
import ctypes
import gc

from memstore.index import SearchIndexError
from memstore.service.store import Store


def settle(store: Store) -> None:
    """Collect garbage and freeze what survives, and unmap the index pages read. Called
    between requests, none waiting, and after the watcher's periodic task.

    At 100,000 memories the index's caches hold millions of objects; each full collection
    the interpreter starts on its own walks them all, tens of milliseconds inside whichever
    request triggered it (measured: recall p95 ~20 → ~16 ms, max ~50 → ~25 ms,
    docs/benchmarks.md). Frozen objects are left out of those walks and still freed when
    their last reference goes; unfreezing first lets a collection here find cycles among
    them (a closed searcher's).
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    release_pages(store)
    trim_heap()


def release_pages(store: Store) -> None:
    """Unmap the index file pages the requests read (they stay in the page cache): at
    100,000 memories they were ~80 MB of the daemon's RSS after a working session. And keep
    the folder listings the catch-ups hold to their bound (catalog/listings.py `trim`): a
    counter flush at a million memories left ~90 MiB of them."""
    shared = store.shared
    with shared.mutex:
        if shared.indexer is not None:
            shared.indexer.listings.trim()
        indexes = [shared.indexer.search if shared.indexer is not None else None]
        indexes.append(shared.code.search if shared.code is not None else None)
        for index in indexes:
            if index is not None:
                with contextlib.suppress(SearchIndexError):
                    index.release_pages()


def _glibc(name: str) -> object:
    with contextlib.suppress(OSError, AttributeError):
        return getattr(ctypes.CDLL(None), name)
    return None


_MALLOC_TRIM = _glibc("malloc_trim")
_MALLOPT = _glibc("mallopt")
_M_ARENA_MAX = -8  # glibc's malloc.h
# One malloc arena for the whole process: each thread that allocates (the request workers,
# the warm-up, the watcher) otherwise gets an arena of its own, each holding on to its own
# freed pages between the sizes it last needed. Python allocates under its one lock (the
# GIL), so the threads do not contend for one arena.
ARENAS = 1


def one_arena() -> None:
    """Have every thread allocate from one malloc arena (glibc; elsewhere nothing). Called
    before the daemon starts its threads: an arena a thread already has stays its own."""
    if _MALLOPT is not None:
        _MALLOPT(_M_ARENA_MAX, ARENAS)  # type: ignore[operator]


def trim_heap() -> None:
    """Hand the pages malloc holds free back to the system (glibc; elsewhere nothing). What
    Python and libgit2 free stays in malloc's arenas otherwise: git's index, let go once the
    adds' staging is done (vault/staging.py), is 17 MiB of the daemon's RSS at 100,000
    memories until trimmed."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)  # type: ignore[operator]


def resident_mib() -> float | None:
    """Return this process's resident memory in MiB (Linux /proc; None elsewhere)."""
    try:
        with open("/proc/self/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None
