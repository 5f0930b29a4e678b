"""A file read within a clock tick of its change: a same-size rewrite in that tick is found
by the next catch-up, and a file found as indexed costs no index write and is not counted.

Times are set with `os.utime`: a time in a tick still to come is one the next look reads as
too recent to trust, whatever the load (catalog/plan.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memstore.catalog import plan as plan_module
from memstore.catalog.updater import CatchUp
from memstore.service.store import Store
from tests.catalog.test_freshness import (
    hits,
    memory_text,
    rewrite_in_place,
    save_atomically,
    write,
)
from tests.conftest import settings_at


def _tick_to_come(whole_second: bool = False) -> int:
    """A modification time the next look still reads as too recent to trust (after it)."""
    later = time.time_ns() + 5_000_000_000
    return later - later % 1_000_000_000 if whole_second else later | 1


def _catch_up(store: Store, *, full: bool) -> CatchUp:
    with store.vault.lock(5):
        return store.indexer.catch_up(full=full)


def _index_state(store: Store) -> tuple[int, int]:
    """What changes with any index write: its generation and its segments."""
    return store.indexer.search.version(), store.indexer.search.segment_count()


def _settle_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "RACY_NS", -(10**18))
    monkeypatch.setattr(plan_module, "FINE_RACY_NS", -(10**18))


@pytest.mark.parametrize("whole_second", [False, True])
def test_a_same_size_rewrite_in_the_tick_a_full_look_read_it_is_not_missed(
    store: Store, vault: Path, whole_second: bool
) -> None:
    # Found under load in test_doctor's random changes: a file read by a catch-up, then
    # rewritten in place with as many bytes within the same clock tick, kept the very
    # (mtime, size) it was read with, and the index kept the old text until its next change.
    path = write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    tick = _tick_to_come(whole_second)
    os.utime(path, ns=(tick, tick))
    assert _catch_up(store, full=True).updated == ("webshop/a-aaaa1111.md",)
    rewrite_in_place(path, memory_text("aaaa1111", "pelican upload"))  # the same size
    os.utime(path, ns=(tick, tick))  # ...in the same tick
    assert _catch_up(store, full=True).updated == ("webshop/a-aaaa1111.md",)
    assert hits(store, "pelican") == ["webshop/a-aaaa1111.md"]
    assert hits(store, "kestrel") == []


def test_a_same_size_rewrite_in_the_tick_a_quick_look_read_it_is_not_missed(
    store: Store, vault: Path
) -> None:
    path = write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    assert hits(store, "kestrel") == ["webshop/a-aaaa1111.md"]
    save_atomically(path, memory_text("aaaa1111", "pelican upload"))  # the folder's time moves
    tick = _tick_to_come()
    os.utime(path, ns=(tick, tick))
    assert _catch_up(store, full=False).updated == ("webshop/a-aaaa1111.md",)
    rewrite_in_place(path, memory_text("aaaa1111", "bittern upload"))  # folder's time kept
    os.utime(path, ns=(tick, tick))
    assert _catch_up(store, full=False).updated == ("webshop/a-aaaa1111.md",)
    assert hits(store, "bittern") == ["webshop/a-aaaa1111.md"]


@pytest.mark.parametrize("full", [False, True])
def test_a_same_size_change_of_front_matter_alone_is_not_missed(
    store: Store, vault: Path, full: bool
) -> None:
    # The body, and so the manifest's hash of it, stays: only the keywords change.
    path = write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    tick = _tick_to_come()
    save_atomically(path, memory_text("aaaa1111", "kestrel upload").replace("[]", "[osprey]"))
    os.utime(path, ns=(tick, tick))
    assert _catch_up(store, full=full).updated == ("webshop/a-aaaa1111.md",)
    before = store.indexer.manifest.entries()[0].hash
    rewrite_in_place(path, memory_text("aaaa1111", "kestrel upload").replace("[]", "[condor]"))
    os.utime(path, ns=(tick, tick))
    assert _catch_up(store, full=full).updated == ("webshop/a-aaaa1111.md",)
    assert store.indexer.manifest.entries()[0].hash == before
    assert hits(store, "condor") == ["webshop/a-aaaa1111.md"]
    assert hits(store, "osprey") == []


@pytest.mark.parametrize("full", [False, True])
def test_a_racy_file_found_as_indexed_costs_no_index_write_and_settles(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, full: bool
) -> None:
    path = write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    tick = _tick_to_come()
    save_atomically(path, memory_text("aaaa1111", "pelican upload"))
    os.utime(path, ns=(tick, tick))
    assert _catch_up(store, full=full).updated == ("webshop/a-aaaa1111.md",)
    state = _index_state(store)
    for _ in range(2):  # still in its tick: read again, found as indexed, kept racy
        assert _catch_up(store, full=full) == CatchUp()
        assert store.indexer.manifest.racy(None) == {"webshop/a-aaaa1111.md"}
    _settle_at_once(monkeypatch)  # as if the look came seconds later
    assert _catch_up(store, full=full) == CatchUp()
    assert store.indexer.manifest.racy(None) == set()
    assert _index_state(store) == state
    assert hits(store, "pelican") == ["webshop/a-aaaa1111.md"]


@pytest.mark.parametrize("full", [False, True])
def test_a_rebuild_of_racy_files_then_a_catch_up_writes_and_counts_nothing(
    store: Store, vault: Path, full: bool
) -> None:
    # Last session's rule re-indexed every file of a fresh write on the next catch-up (a
    # segment more after a reindex, a sync's files counted twice).
    tick = _tick_to_come()
    for n in range(30):
        path = write(vault, f"webshop/m-{n:04d}.md", memory_text(f"m{n:07d}", f"heron {n}"))
        os.utime(path, ns=(tick, tick))
    result = store.reindex()
    assert len(result.updated) == 30 and len(store.indexer.manifest.racy(None)) == 30
    state = _index_state(store)
    assert _catch_up(store, full=full) == CatchUp()
    assert _index_state(store) == state
    assert len(hits(store, "heron")) == 10


@pytest.mark.parametrize("full", [False, True])
def test_adds_then_a_catch_up_write_and_count_nothing(
    store: Store, vault: Path, full: bool
) -> None:
    """memstore wrote the files: it knows their bytes, they are recorded settled."""
    for n in range(5):
        store.add(f"grebe nesting {n}", workspace="webshop")
    assert store.indexer.manifest.racy(None) == set()
    state = _index_state(store)
    assert _catch_up(store, full=full) == CatchUp()
    assert _index_state(store) == state


def test_a_manifest_without_the_racy_table_gains_it_without_a_rebuild(vault: Path) -> None:
    """An older memstore's manifest has no racy table: read as naming nothing (a read-only
    vault's), created empty when a writer opens it, with no format change (no rebuild)."""
    with Store.open(settings_at(vault)) as store:
        store.add("grebe nesting", workspace="webshop")
        store.indexer.manifest.execute("DROP TABLE racy")
        assert store.indexer.manifest.racy(None) == set()
        state = _index_state(store)
    with Store.open(settings_at(vault)) as store:
        assert len(hits(store, "grebe")) == 1
        assert _index_state(store) == state
        assert store.indexer.manifest.execute("SELECT COUNT(*) FROM racy").fetchone() == (0,)


def test_the_comparison_apart_from_the_lock_reads_a_racy_file_again(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watcher's comparison (compare.py, applied under the lock) finds the rewrite, and
    leaves a racy file found as indexed unwritten and uncounted."""
    path = write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    tick = _tick_to_come()
    os.utime(path, ns=(tick, tick))
    assert store.maintenance.reconcile().updated == ("webshop/a-aaaa1111.md",)
    state = _index_state(store)
    assert store.maintenance.reconcile() == CatchUp()
    assert _index_state(store) == state
    rewrite_in_place(path, memory_text("aaaa1111", "pelican upload"))
    os.utime(path, ns=(tick, tick))
    assert store.maintenance.reconcile().updated == ("webshop/a-aaaa1111.md",)
    assert hits(store, "pelican") == ["webshop/a-aaaa1111.md"]
    _settle_at_once(monkeypatch)
    assert store.maintenance.reconcile() == CatchUp()
    assert store.indexer.manifest.racy(None) == set()
