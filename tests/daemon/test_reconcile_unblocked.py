"""A watcher's comparison of every file holds neither the store nor the vault lock.

At 1,000,000 memories one comparison is ~9 s of CPU; it ran under the store's mutex, which
recall takes, so a recall arriving meanwhile waited for it (issue 39: MCP recall p95 1.3 s
at 1M). Here a comparison is held still after it listed its folder, and a recall and an
add must go through meanwhile; what changed under the held comparison must come out
right (index = files) once it goes on.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memstore.catalog.indexer import Indexer
from memstore.daemon.watcher import Watcher
from memstore.service.store import Store
from memstore.vault.files import Vault
from tests.conftest import settings_at, wait_until

BOUND = 10.0  # a recall at this size takes milliseconds; held, it would wait for `release`
TIMEOUT = 60.0


def memory_text(memory_id: str, body: str) -> str:
    return f"---\nid: {memory_id}\nkind: note\nkeywords: []\nseen: 1\n---\n{body}\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class Hold:
    """Stop the watcher's next listing of one folder right after it listed it."""

    def __init__(self, vault: Vault, folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = threading.Event()
        self.entered = threading.Event()
        self.release = threading.Event()
        original = vault.scan_folder

        def held(listed: str, *args: Any, **kwargs: Any) -> list[str]:
            subfolders = original(listed, *args, **kwargs)
            watching = threading.current_thread().name == "memstore-watcher"
            if watching and listed == folder and self.armed.is_set():
                self.armed.clear()
                self.entered.set()
                self.release.wait(TIMEOUT)
            return subfolders

        monkeypatch.setattr(vault, "scan_folder", held)


def recall_within(store: Store, query: str, bound: float) -> list[str] | None:
    """The ids a recall in another thread returns, or None if it did not answer in time."""
    answer: list[list[str]] = []

    def ask() -> None:
        found = store.recall(query, workspace=None, k=5)
        answer.append([hit.id for hit in found.hits])

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(bound)
    return answer[0] if answer else None


def test_recall_and_add_go_on_while_the_watcher_compares_every_file(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(40):
        write(
            vault / "global" / f"old-k{n:06d}k.md", memory_text(f"k{n:06d}k", f"old note {n} kayak")
        )
    store = Store.open(settings_at(vault))
    probe = Indexer.open(Vault(vault))
    # no periodic look meanwhile: the comparison below is the one an event brings
    watcher = Watcher(store, reconcile_every=3600.0).start()
    try:
        assert len(recall_within(store, "kayak", BOUND) or []) == 5
        hold = Hold(store.vault, "global", monkeypatch)
        hold.armed.set()
        doomed = vault / "global" / "doomed-dddddddd.md"
        write(doomed, memory_text("dddddddd", "a draft about zeppelin hangars"))
        assert hold.entered.wait(TIMEOUT), "the watcher compared the folder"
        # the comparison saw `doomed` as added and nothing else changed; meanwhile:
        assert recall_within(store, "kayak", BOUND), "recall answered while it compared"
        added = store.add("the zeppelin hangar lease renews in March", workspace="global")
        doomed.unlink()  # gone before the comparison's plan is applied
        rewritten = vault / "global" / "old-k000003k.md"
        write(rewritten, memory_text("k000003k", "old note 3 rewritten about a zeppelin"))
        hold.release.set()

        def settled() -> bool:
            ids = {h.document.id for h in probe.search.search("zeppelin", limit=20)}
            return ids == {added.id, "k000003k"} and probe.drift().is_clean

        wait_until(settled, TIMEOUT, "index = files after the held comparison went on")
    finally:
        watcher.stop()
        probe.close()
        store.close()


def test_the_periodic_look_lists_only_folders_whose_time_changed(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between comparisons of every file the watcher's periodic look is a quick one: with
    nothing changed it lists no folder (a full comparison listed all of them, ~9 s of CPU
    at 1,000,000 memories, every 30 s); a file created with its event lost is still found."""
    for n in range(10):
        write(vault / "ops" / f"n-k{n:06d}k.md", memory_text(f"k{n:06d}k", f"note {n}"))
    past = time.time() - 60
    # settled: no folder listed again, nor file read again, for being too recent (racy)
    for path in (vault, vault / "ops", *(vault / "ops").iterdir()):
        os.utime(path, (past, past))
    store = Store.open(settings_at(vault))
    probe = Indexer.open(Vault(vault))
    listed: list[str] = []
    original = store.vault.scan_folder

    def counted(folder: str, *args: Any, **kwargs: Any) -> list[str]:
        if threading.current_thread().name == "memstore-watcher":
            listed.append(folder)
        return original(folder, *args, **kwargs)

    monkeypatch.setattr(store.vault, "scan_folder", counted)
    watcher = Watcher(store, reconcile_every=0.05, full_every=3600.0).start()
    try:
        watcher._observer.unschedule_all()  # every event lost from here, as in an overflow
        listed.clear()
        looked = watcher.last_catch_up
        wait_until(lambda: watcher.last_catch_up != looked, TIMEOUT, "a periodic look")
        looked = watcher.last_catch_up
        wait_until(lambda: watcher.last_catch_up != looked, TIMEOUT, "another periodic look")
        assert listed == [], "a periodic look listed folders whose time had not changed"
        write(vault / "ops" / "lost-llllllll.md", memory_text("llllllll", "a lost walrus"))
        wait_until(
            lambda: [h.document.id for h in probe.search.search("walrus")] == ["llllllll"],
            TIMEOUT,
            "the periodic look indexed the file no event announced",
        )
        assert set(listed) == {"ops"}
    finally:
        watcher.stop()
        probe.close()
        store.close()


def test_a_rewrite_in_place_with_its_event_lost_is_found_by_the_next_full_comparison(
    vault: Path,
) -> None:
    path = vault / "ops" / "n-rrrrrrrr.md"
    write(path, memory_text("rrrrrrrr", "the first text about a narwhal"))
    store = Store.open(settings_at(vault))
    probe = Indexer.open(Vault(vault))
    watcher = Watcher(store, reconcile_every=0.05, full_every=0.3).start()
    try:
        watcher._observer.unschedule_all()
        write(path, memory_text("rrrrrrrr", "the second text about an okapi"))
        wait_until(
            lambda: [h.document.id for h in probe.search.search("okapi")] == ["rrrrrrrr"],
            TIMEOUT,
            "the full comparison indexed the rewrite no event announced",
        )
        assert probe.drift().is_clean
    finally:
        watcher.stop()
        probe.close()
        store.close()
