"""A burst of adds lists its month folder once, and still finds every change a person makes
in it, in the clock tick of an add or beside a running watcher (catalog/listings.py)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memstore.catalog.listings import Listings, read_entries
from memstore.catalog.memory_manifest import Folders
from memstore.catalog.plan import RACY
from memstore.core.model import AddResult
from memstore.daemon.watcher import Watcher
from memstore.service.store import Store
from memstore.service.writer import Writer
from memstore.vault.files import Vault
from tests.conftest import settings_at, wait_until

TIMEOUT = 30.0  # a bound, not a wait


def memory_text(memory_id: str, body: str) -> str:
    return f"---\nid: {memory_id}\nkind: note\nkeywords: []\nseen: 1\n---\n{body}\n"


def save_atomically(path: Path, text: str) -> None:
    """Save as most editors do: a temporary file renamed over the old one."""
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def indexed(store: Store) -> dict[str, str]:
    """Every indexed memory of the vault: path → text, as the index holds it."""
    return {doc.key: doc.content for doc in store.indexer.search.documents()}


def on_disk(vault: Path) -> dict[str, str]:
    """Every memory file of the vault: path → its text, read afresh."""
    files = Vault(vault)
    return {path: files.read(path).body for path in files.scan()}


@pytest.fixture
def store(store: Store) -> Store:
    """The conftest store, caught up once (as a first search does): from then on a write's
    check of its workspace is the quick one (a fresh vault's HEAD was never recorded)."""
    store.catch_up()
    return store


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders catch-ups list file by file (a stat each), in order."""
    folders: list[str] = []
    real = Vault.scan_folder

    def scan_folder(self: Vault, folder: str, *args: object, **kwargs: object) -> list[str]:
        folders.append(folder)
        return real(self, folder, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Vault, "scan_folder", scan_folder)
    return folders


def add(store: Store, n: int) -> AddResult:
    result = store.add(f"burst memory {n}: the queue drains after retry {n * 7919}", workspace="ws")
    assert result.status == "added"
    return result


def test_a_burst_of_adds_lists_its_month_folder_once(store: Store, listed: list[str]) -> None:
    first = add(store, 0)
    month = first.path.rpartition("/")[0]
    for n in range(1, 3):  # the month folder made, then listed once and remembered
        add(store, n)
    listed.clear()
    for n in range(3, 10):
        add(store, n)
    assert month not in listed
    assert len([d for d in indexed(store) if d.startswith(f"{month}/")]) == 10


def test_a_search_after_adds_does_not_list_the_month_folder(
    store: Store, listed: list[str]
) -> None:
    month = add(store, 0).path.rpartition("/")[0]
    for n in range(1, 4):
        add(store, n)
    listed.clear()
    assert store.search("queue drains", workspace="ws", k=10).hits
    add(store, 4)
    assert month not in listed


def _same_tick(folder: Path, change: Callable[[], object]) -> None:
    """Make `change` in `folder` and put the folder's time back to what it was: as a change
    in the clock tick of the last write there leaves it."""
    before = os.stat(folder)
    change()
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))


CHANGES = ["created", "saved atomically", "deleted", "renamed", "moved in"]


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_in_the_tick_of_an_add_is_found_by_the_next(
    store: Store, vault: Path, change: str, tmp_path: Path
) -> None:
    results = [add(store, n) for n in range(4)]
    month = vault / results[0].path.rpartition("/")[0]
    target = vault / results[1].path
    outside = tmp_path / "outside-zzzz9999.md"
    outside.write_text(memory_text("zzzz9999", "moved in from elsewhere"), encoding="utf-8")
    person = {
        "created": lambda: (month / "by-hand-hhhh1111.md").write_text(
            memory_text("hhhh1111", "kestrel written by hand"), encoding="utf-8"
        ),
        "saved atomically": lambda: save_atomically(
            target, target.read_text(encoding="utf-8").replace("burst memory", "osprey memory")
        ),
        "deleted": target.unlink,
        "renamed": lambda: target.rename(month / "renamed-by-hand.md"),
        "moved in": lambda: os.replace(outside, month / outside.name),
    }[change]
    _same_tick(month, person)
    add(store, 99)  # its catch-up must see the change
    assert indexed(store) == on_disk(vault)


def test_a_change_in_the_tick_of_an_add_is_found_by_a_search(store: Store, vault: Path) -> None:
    results = [add(store, n) for n in range(4)]
    month = vault / results[0].path.rpartition("/")[0]
    _same_tick(
        month,
        lambda: (month / "by-hand-hhhh1111.md").write_text(
            memory_text("hhhh1111", "kestrel written by hand"), encoding="utf-8"
        ),
    )
    hits = store.search("kestrel", workspace="ws", k=5).hits
    assert [hit.path for hit in hits] == [
        f"{month.relative_to(vault).as_posix()}/by-hand-hhhh1111.md"
    ]


def test_the_same_text_written_by_hand_in_the_tick_of_an_add_is_a_duplicate(
    store: Store, vault: Path
) -> None:
    results = [add(store, n) for n in range(4)]
    month = vault / results[0].path.rpartition("/")[0]
    text = "the nightly export runs at 02:00 UTC"
    _same_tick(
        month,
        lambda: (month / "by-hand-hhhh1111.md").write_text(
            memory_text("hhhh1111", text), encoding="utf-8"
        ),
    )
    again = store.add(text, workspace="ws")  # the write lane's own catch-up finds the file
    assert again.status == "duplicate_merged" and again.id == "hhhh1111"


def test_adds_beside_a_person_writing_in_the_same_folder_miss_nothing(
    store: Store, vault: Path
) -> None:
    month = vault / add(store, 0).path.rpartition("/")[0]
    stop = threading.Event()
    written: list[Path] = []

    def person() -> None:
        n = 0
        while not stop.is_set() and n < 400:
            path = month / f"by-hand-{n:04d}.md"
            if n % 3 == 2 and written:
                save_atomically(written[-1], memory_text(f"h{n:07d}", f"resaved by hand {n}"))
            else:
                path.write_text(memory_text(f"h{n:07d}", f"written by hand {n}"), encoding="utf-8")
                written.append(path)
            n += 1

    writer = threading.Thread(target=person)
    writer.start()
    try:
        for n in range(1, 30):
            add(store, n)
    finally:
        stop.set()
        writer.join(timeout=120)
        assert not writer.is_alive(), "the person's writer thread did not end"
    add(store, 30)  # after the person's last change: its catch-up sees every one
    assert indexed(store) == on_disk(vault)


@pytest.fixture
def watched(vault: Path) -> Iterator[tuple[Store, Watcher]]:
    store = Store.open(settings_at(vault))
    store.catch_up()
    watcher = Watcher(store)
    yield store, watcher
    watcher.stop()
    store.close()


def test_changes_beside_a_running_watcher_and_after_it_stops_are_all_indexed(
    watched: tuple[Store, Watcher], vault: Path
) -> None:
    store, watcher = watched
    month = vault / add(store, 0).path.rpartition("/")[0]
    for n in range(1, 4):
        add(store, n)  # remembered: listed by catch-ups before the watcher runs
    watcher.start()
    for n in range(4, 8):
        add(store, n)
        (month / f"watched-{n}.md").write_text(
            memory_text(f"w{n:07d}", f"heron seen while watching {n}"), encoding="utf-8"
        )
    wait_until(
        lambda: len(store.search("heron", workspace="ws", k=10).hits) == 4,
        TIMEOUT,
        "the watcher indexes the files written beside it",
    )
    watcher.stop()
    # The change below keeps the folder's time: as one in the tick of the watcher's last
    # write. That write is then too recent for the watcher's last look to trust (RACY), as
    # it is on a quiet machine; under load the look may come later and record the time as
    # settled, after which no change can keep it (the next tick moves it on): recorded
    # here as such a look leaves it, so what is tested is this process's listings.
    relative = month.relative_to(vault).as_posix()
    store.indexer.manifest.write([], [], Folders({relative: RACY}), {})
    _same_tick(
        month,
        lambda: (month / "after-watch.md").write_text(
            memory_text("a0000001", "plover written after the watcher stopped"), encoding="utf-8"
        ),
    )
    add(store, 8)
    assert indexed(store) == on_disk(vault)


def test_a_change_between_an_adds_catch_up_and_its_write_is_found_by_the_next(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = [add(store, n) for n in range(4)]
    month = vault / results[0].path.rpartition("/")[0]
    target = vault / results[1].path
    real = Writer.plan_memory

    def person_meanwhile(self: Writer, *args: object, **kwargs: object) -> object:
        # runs after the add's catch-up, before its write (the new memory's id and path are
        # planned between the two): a person rewrites a memory in
        # place (same name, same inode) and the folder's time moves on (as deleting and
        # creating it again under its name leaves it, when the inode is reused)
        text = target.read_text(encoding="utf-8").replace("burst memory", "osprey memory")
        with target.open("r+", encoding="utf-8") as handle:
            handle.truncate(0)
            handle.write(text)
        later = os.stat(month).st_mtime_ns + 1_000_000_000
        os.utime(month, ns=(later, later))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Writer, "plan_memory", person_meanwhile)
    add(store, 98)
    monkeypatch.setattr(Writer, "plan_memory", real)
    add(store, 99)
    assert indexed(store) == on_disk(vault)


def test_a_file_a_person_is_still_writing_is_read_again_once_filled(
    store: Store, vault: Path
) -> None:
    results = [add(store, n) for n in range(4)]
    month = vault / results[0].path.rpartition("/")[0]
    partial = month / "by-hand-hhhh1111.md"
    partial.write_text("---\nid: hhhh1111\n", encoding="utf-8")  # created, not yet filled
    # changed too recently for the next look to trust (a time ahead of it is, whatever the
    # machine's load between this line and that look)
    ahead = os.stat(partial).st_mtime_ns + 10_000_000_000
    os.utime(partial, ns=(ahead, ahead))
    add(store, 50)  # its catch-up reads the half-written file
    with partial.open("a", encoding="utf-8") as handle:  # filled in place: the folder's
        handle.write("kind: note\n---\nkestrel written by hand\n")  # time does not move
    add(store, 51)
    assert indexed(store) == on_disk(vault)
    assert "kestrel written by hand" in indexed(store)[partial.relative_to(vault).as_posix()]


def test_a_catch_up_listing_many_folders_remembers_none_and_misses_nothing(
    store: Store, vault: Path, listed: list[str]
) -> None:
    from memstore.catalog.updater import SNAPSHOT_FOLDERS

    for n in range(SNAPSHOT_FOLDERS + 2):  # as a sync brings many folders at once
        path = vault / f"ws{n:02d}" / "2026-11" / f"m-{n:08d}.md"
        path.parent.mkdir(parents=True)
        path.write_text(memory_text(f"m{n:07d}", f"heron note {n}"), encoding="utf-8")
    store.catch_up()
    for n in range(SNAPSHOT_FOLDERS + 2):  # every one of them changed: listed again
        path = vault / f"ws{n:02d}" / "2026-11" / f"second-{n:08d}.md"
        path.write_text(memory_text(f"s{n:07d}", f"plover note {n}"), encoding="utf-8")
    listed.clear()
    store.catch_up()
    assert len([f for f in listed if f.endswith("2026-11")]) == SNAPSHOT_FOLDERS + 2
    assert not [f for f in store.indexer.listings._folders if f.startswith("ws")]
    assert indexed(store) == on_disk(vault)
    listed.clear()
    add(store, 1)
    add(store, 2)  # a write's own catch-up lists its folders and remembers them
    add(store, 3)
    month = add(store, 4).path.rpartition("/")[0]
    listed.clear()
    add(store, 5)
    assert month not in listed
    assert indexed(store) == on_disk(vault)


def test_trimming_forgets_the_folders_recorded_longest_ago(tmp_path: Path) -> None:
    """A long-lived process keeps its folders' listings to a bound between requests
    (`Listings.trim`, the daemon's settle): a counter flush at a million memories left
    ~90 MiB of month folders nothing read again. Those recorded or written last stay."""
    for folder in "abc":
        (tmp_path / folder).mkdir()
        for n in range(3):
            (tmp_path / folder / f"m{n}.md").write_text("x", encoding="utf-8")
    listings = Listings(str(tmp_path))
    mtime = {f: os.stat(tmp_path / f).st_mtime_ns for f in "abc"}
    for folder in "abc":
        seen = {folder: (mtime[folder], read_entries(str(tmp_path / folder)) or {})}
        listings.remember(seen, {}, time.time_ns())
    with listings.writing(["a/m3.md"]):  # a write moves its folder on: recorded last
        (tmp_path / "a" / "m3.md").write_text("y", encoding="utf-8")
        listings.wrote([("a/m3.md", os.stat(tmp_path / "a" / "m3.md").st_ino)])
    assert listings.trim(keep=10) == 0  # 4 + 3 + 3 entries: within the bound
    assert listings.trim(keep=7) == 1  # "b" recorded longest ago
    now = {f: os.stat(tmp_path / f).st_mtime_ns for f in "abc"}
    assert [listings.unchanged(f, now[f]) for f in "abc"] == [True, False, True]
    assert listings.trim(keep=0) == 2
    assert not any(listings.unchanged(f, now[f]) for f in "abc")


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_in_the_tick_of_an_add_in_a_trimmed_folder_is_found_by_the_next(
    store: Store, vault: Path, change: str, tmp_path: Path, listed: list[str]
) -> None:
    first = [add(store, n) for n in range(4)]
    month = vault / first[0].path.rpartition("/")[0]
    assert store.indexer.listings.trim(keep=0) >= 1  # forgotten: listed again, as never listed
    target = vault / first[1].path
    outside = tmp_path / "outside-zzzz9999.md"
    outside.write_text(memory_text("zzzz9999", "moved in from elsewhere"), encoding="utf-8")
    person = {
        "created": lambda: (month / "by-hand-hhhh1111.md").write_text(
            memory_text("hhhh1111", "kestrel written by hand"), encoding="utf-8"
        ),
        "saved atomically": lambda: save_atomically(
            target, target.read_text(encoding="utf-8").replace("burst memory", "osprey memory")
        ),
        "deleted": target.unlink,
        "renamed": lambda: target.rename(month / "renamed-by-hand.md"),
        "moved in": lambda: os.replace(outside, month / outside.name),
    }[change]
    _same_tick(month, person)
    listed.clear()
    add(store, 99)  # its catch-up lists the forgotten folder again, and sees the change
    assert month.relative_to(vault).as_posix() in listed
    assert indexed(store) == on_disk(vault)
