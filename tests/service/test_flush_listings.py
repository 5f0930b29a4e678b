"""A counter flush lists no folder it writes in (issue 39 part 5): at 1,000,000 memories a
sync's flush of 606 files listed the 159 folders they were in again, whole (15.9 s), in a
process that had never listed them. The folders are known as indexed from the manifest,
moved on by the flush's own writes, and recorded once their times settle; a change made
meanwhile by somebody else is still found."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.catalog.plan import FINE_RACY_NS, RACY_NS
from memstore.service.store import Store, init_vault
from memstore.vault.files import Vault
from tests.conftest import settings_at, wait_until
from tests.service.test_counter_flush import Clock, recalled
from tests.service.test_crash_points import TEXTS


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every folder a catch-up lists (a stat of each of its files) from here on."""
    seen: list[str] = []
    real_folder, real_tree = Vault.scan_folder, Vault.scan_tree

    def folder(self: Vault, where: str, *args: object, **kwargs: object) -> object:
        seen.append(where)
        return real_folder(self, where, *args, **kwargs)  # type: ignore[arg-type]

    def tree(self: Vault, where: str, *args: object, **kwargs: object) -> object:
        seen.append(where)
        return real_tree(self, where, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Vault, "scan_folder", folder)
    monkeypatch.setattr(Vault, "scan_tree", tree)
    yield seen


def _settled(root: Path, folders: set[str]) -> bool:
    """Say whether every folder's time is old enough to be recorded (plan.settle)."""
    now = time.time_ns()
    for folder in folders:
        mtime = (root / folder).stat().st_mtime_ns
        margin = RACY_NS if mtime % 1_000_000_000 == 0 else FINE_RACY_NS
        if mtime >= now - margin:
            return False
    return True


@pytest.fixture
def spread(tmp_path: Path) -> tuple[Path, list[str], set[str]]:
    """A vault of memories in five day folders, every folder recorded as indexed."""
    path = tmp_path / "vault"
    init_vault(path, settings_at(path))
    clock = Clock()
    with Store.open(settings_at(path), clock=clock) as store:
        ids = []
        for text in TEXTS[:10]:
            ids.append(store.add(text, workspace="webshop").id)
            clock.advance(86400 * 4)  # a day folder every other add
    folders = {p.parent.relative_to(path).as_posix() for p in path.glob("webshop/**/*.md")}
    assert len(folders) >= 5
    wait_until(lambda: _settled(path, folders), 10, "the folders' times did not settle")
    with Store.open(settings_at(path)) as store:
        store.indexer.catch_up(full=False)  # records them, settled
    return path, ids, folders


def test_a_flush_lists_no_folder_it_writes_in_and_records_them_settled(
    spread: tuple[Path, list[str], set[str]], listed: list[str]
) -> None:
    path, ids, folders = spread
    with Store.open(settings_at(path)) as store:  # a process that never listed them
        store.usage.record(ids, "2026-12-20T09:00:00Z")
        assert store.flush_usage() == len(ids)
        assert listed == []  # the code before listed every folder the flush wrote in
        assert all(recalled(store, memory_id)[0] == 1 for memory_id in ids)
        wait_until(lambda: _settled(path, folders), 10, "the folders' times did not settle")
        store.indexer.catch_up(full=False)  # records them: still listing none
        assert listed == []
        recorded = store.indexer.manifest.folders(None)
    assert {f: recorded[f] for f in folders} == {f: (path / f).stat().st_mtime_ns for f in folders}
    with Store.open(settings_at(path)) as store:  # a reader after it lists none either
        store.indexer.catch_up(full=False)
        assert listed == []
        assert store.indexer.drift().is_clean


def test_a_file_somebody_adds_while_the_flush_writes_is_still_found(
    spread: tuple[Path, list[str], set[str]], listed: list[str]
) -> None:
    path, ids, folders = spread
    with Store.open(settings_at(path)) as store:
        store.usage.record(ids, "2026-12-20T09:00:00Z")
        target = sorted(folders)[0]
        by_hand = path / target / "by-hand.md"
        real = store.vault.write_bytes_atomic

        def and_a_person(relative: str, data: bytes) -> None:  # a save between two writes
            real(relative, data)
            if not by_hand.exists():
                by_hand.write_text("a note a person saved meanwhile\n", encoding="utf-8")

        store.vault.write_bytes_atomic = and_a_person  # type: ignore[method-assign]
        store.flush_usage()
        # The flush records only folders as its own writes left them: the next catch-up
        # (a reader's, the daemon's tick) lists this one again.
        store.indexer.catch_up(full=False)
        assert target in listed  # its entries changed beyond the flush's own: listed again
        found = [e for e in store.indexer.entries() if e.path == f"{target}/by-hand.md"]
        assert found and os.path.exists(by_hand)
