"""The daemon's memory between requests: index pages unmapped, the heap settled."""

from __future__ import annotations

import gc
import os
import threading
import time
from pathlib import Path

import pytest

from memstore.catalog import listings
from memstore.daemon import heap
from memstore.daemon.server import Daemon
from memstore.service.store import Store
from tests.conftest import settings_at, wait_until


def test_settling_unmaps_the_index_pages_a_search_read_and_searches_go_on(vault: Path):
    with Store.open(settings_at(vault)) as store:
        for n in range(3):
            store.add(f"the upload limit is {n} MB behind nginx", workspace="global")
        before = store.search("upload nginx", workspace=None, k=5, catch_up=False)
        assert store.indexer.search.release_pages() > 0  # the segments are memory maps
        heap.settle(store)
        assert gc.isenabled()
        after = store.search("upload nginx", workspace=None, k=5, catch_up=False)
        assert [h.id for h in after.hits] == [h.id for h in before.hits]
        assert len(after.hits) == 3
    gc.unfreeze()


def test_the_daemon_settles_after_its_periodic_task_and_trims_the_listings(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher's tick (a counter flush: at a million memories hundreds of folders'
    listings and git's index read) is settled at the next idle moment, not only after a
    request: the listings kept to their bound (fails on the old code)."""
    settled: list[int] = []
    real = heap.settle

    def counted(store: Store) -> None:
        real(store)
        with store.shared.mutex:  # the listings' folders right after the settle
            settled.append(len(store.indexer.listings._folders))

    monkeypatch.setattr(heap, "settle", counted)
    monkeypatch.setattr("memstore.daemon.server.SETTLE_AFTER_S", 0.01)
    with Store.open(settings_at(vault)) as store:
        added = [
            store.add(f"the upload limit is {n} MB behind nginx", workspace="global")
            for n in range(3)
        ]
        folder = added[0].path.rpartition("/")[0]
        daemon = Daemon(store, idle_exit=0)
        serving = threading.Thread(target=daemon.run, args=(lambda _line: None,), daemon=True)
        serving.start()
        try:
            wait_until(lambda: daemon.warmed and daemon._settled > 0, 60, "warmed and settled")
            with store.shared.mutex:  # the month folder's listing, as a catch-up keeps it
                entries = listings.read_entries(str(vault / folder)) or {}
                mtime = os.stat(vault / folder).st_mtime_ns
                store.indexer.listings.remember({folder: (mtime, entries)}, {}, time.time_ns())
                assert store.indexer.listings.unchanged(folder, mtime)
            monkeypatch.setattr(listings, "KEEP_ENTRIES", 0)
            count = len(settled)
            daemon.watcher.on_tick()  # as the watcher calls it every five minutes
            wait_until(lambda: len(settled) > count, 60, "a settle after the periodic task")
            assert settled[-1] == 0
        finally:
            daemon.stop("test")
            serving.join(timeout=60)
        assert not serving.is_alive()
    gc.unfreeze()
