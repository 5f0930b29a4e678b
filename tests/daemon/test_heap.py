"""The daemon's memory between requests: index pages unmapped, the heap settled."""

from __future__ import annotations

import gc
from pathlib import Path

from memstore.daemon import heap
from memstore.service.store import Store
from tests.conftest import settings_at


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
