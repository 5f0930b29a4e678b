"""A store's background merge (Maintenance.merge_segments in a thread) stops when the store
closes: its helper process killed, no index opened again, no swap begun after the close;
and a watcher's last tick, as the process ends, starts none.

Large segments cheaply: tests/conftest.py's `large_segments`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.daemon.commands import watching
from memstore.index import SearchIndex, merging
from memstore.index.scoring import segment_id
from memstore.service import maintenance
from memstore.service.store import Store
from tests.conftest import LARGE_SEGMENTS_NOW, settings_at, wait_until


@pytest.fixture
def chunked(large_segments: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """A store whose index holds ten segments of 6 documents, six of them due to merge (and
    no compaction step, which would take two first)."""
    monkeypatch.setattr(maintenance, "COMPACT_MAX_DOCS", 11)
    # a long lock timeout: the tests hold the vault lock while the merge waits for it
    settings = dataclasses.replace(settings_at(large_segments), lock_timeout=300.0)
    store = Store.open(settings, clock=lambda: LARGE_SEGMENTS_NOW)
    store.search("kafka", workspace=None, k=5)  # the catch-up, in chunks
    assert sorted(_segments(store.indexer.search.root).values()) == [6] * 10
    yield store
    thread = store.maintenance.merges.thread
    store.close()
    if thread is not None:  # the old code's merge, left running: let it end before the next
        thread.join(120)


def _segments(root: Path) -> dict[str, int]:
    """The index's segments on disk (id: documents), read by an index of the test's own."""
    index = SearchIndex.open(root, create=False)
    try:
        leaves = index.reader.searcher().reader().leaf_readers()
        return {segment_id(reader): reader.doc_count_all() for reader, _ in leaves}
    finally:
        index.close()


def _merging_folders(root: Path) -> list[Path]:
    return list(root.glob("merging-*"))


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _waits_in(thread: threading.Thread, function: str) -> bool:
    """Say whether `thread` is inside `function` right now (its stack, as Python sees it)."""
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


def test_closing_a_store_kills_its_merges_helper_and_swaps_nothing(
    chunked: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real helper, started, then held until the test lets it go (or 120 s pass): a
    # merge of a million's tier writes for minutes.
    started, gate = tmp_path / "helper-started", tmp_path / "helper-gate"
    held = (
        "import os, time\n"
        f"open({str(started)!r}, 'w').write(str(os.getpid()))\n"
        "deadline = time.monotonic() + 120\n"
        f"while not os.path.exists({str(gate)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        f"{merging.MERGE_CODE}\n"
    )
    monkeypatch.setattr(merging, "MERGE_CODE", held)
    store = chunked
    root = store.indexer.search.root
    before = _segments(root)
    store.tidy()
    thread = store.maintenance.merges.thread
    assert thread is not None
    wait_until(lambda: started.exists() and started.read_text(), 60, "the merge's helper")
    helper = int(started.read_text())
    try:
        store.close()
        assert not thread.is_alive(), "the merge thread outlived its store's close"
        assert not _is_running(helper), "the merge's helper process outlived the close"
    finally:
        gate.touch()  # the old code's helper goes on (and its thread swaps): the test failed
        thread.join(120)
    assert _segments(root) == before
    assert not _merging_folders(root)
    assert store.shared.indexer is None  # the merge opened no index after the close


def test_a_merge_waiting_to_swap_as_its_store_closes_swaps_nothing(chunked: Store) -> None:
    store = chunked
    root = store.indexer.search.root
    before = _segments(root)
    with store.vault.lock(300.0):  # another writer: the built segment waits for its turn
        store.maintenance.merge_segments(wait=False)  # tidy's last step (its flush would wait)
        thread = store.maintenance.merges.thread
        assert thread is not None
        wait_until(lambda: _waits_in(thread, "_wait_for"), 120, "the merge waiting to swap")
        assert _merging_folders(root)  # built, not swapped in
        closing = threading.Thread(target=store.close)
        closing.start()
        stopper = store.maintenance.merges._stopper
        wait_until(lambda: stopper.is_stopped, 60, "the close asking the merge to stop")
    closing.join(120)
    assert not closing.is_alive()
    assert not thread.is_alive()
    assert _segments(root) == before
    assert not _merging_folders(root)


def test_a_merge_done_before_the_close_stays(chunked: Store) -> None:
    # the sameness: a merge let finish swaps in what it did before stops existed
    store = chunked
    root = store.indexer.search.root
    before = _segments(root)
    store.tidy()
    thread = store.maintenance.merges.thread
    assert thread is not None
    thread.join(120)
    store.close()
    after = _segments(root)
    assert sorted(after.values()) == [6] * 4 + [36]
    assert len(set(before) & set(after)) == 4


def test_a_watchers_last_tick_flushes_but_starts_no_merge(chunked: Store) -> None:
    store = chunked
    watcher = watching(store)  # as `memstore serve` runs it
    wait_until(watcher.ready.is_set, 120, "the watcher's start")
    watcher.stop()
    assert store.maintenance.merges.thread is None, "the last tick started a merge as serve ended"
