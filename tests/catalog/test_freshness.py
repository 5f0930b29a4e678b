"""Readers without a watcher: the quick catch-up (folder mtimes) and when the full one runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2
import pytest
from conftest import git, settings_at

from memstore.catalog import indexer as indexer_module
from memstore.catalog import plan as plan_module
from memstore.service.store import Store


def hits(store: Store, query: str) -> list[str]:
    return [hit.path for hit in store.search(query, workspace=None, k=10).hits]


def memory_text(memory_id: str, body: str) -> str:
    return f"---\nid: {memory_id}\nkind: note\nkeywords: []\nseen: 1\n---\n{body}\n"


def write(vault: Path, relative: str, text: str) -> Path:
    path = vault / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def save_atomically(path: Path, text: str) -> None:
    """Save as most editors do: a temporary file renamed over the old one."""
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def rewrite_in_place(path: Path, text: str) -> None:
    """Rewrite a file in place and put its folder's mtime back: invisible to folder mtimes."""
    folder = os.stat(path.parent)
    with path.open("r+", encoding="utf-8") as handle:
        handle.truncate(0)
        handle.write(text)
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))


@pytest.fixture
def settled(store: Store, monkeypatch: pytest.MonkeyPatch) -> Store:
    """A store whose folders count as settled at once (no racy window to wait out)."""
    monkeypatch.setattr(plan_module, "RACY_NS", -(10**18))
    monkeypatch.setattr(plan_module, "FINE_RACY_NS", -(10**18))
    return store


@pytest.mark.parametrize("folder", ["webshop", "webshop/2026-11"])
def test_quick_catch_up_finds_new_saved_renamed_and_deleted_files(
    settled: Store, vault: Path, folder: str
) -> None:
    first = write(vault, f"{folder}/first-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    assert hits(settled, "kestrel") == [f"{folder}/first-aaaa1111.md"]

    write(vault, f"{folder}/second-bbbb2222.md", memory_text("bbbb2222", "osprey deploy"))
    assert hits(settled, "osprey") == [f"{folder}/second-bbbb2222.md"]

    save_atomically(first, memory_text("aaaa1111", "kestrel upload behind nginx"))
    assert hits(settled, "nginx") == [f"{folder}/first-aaaa1111.md"]

    first.rename(first.with_name("renamed-aaaa1111.md"))
    assert hits(settled, "kestrel") == [f"{folder}/renamed-aaaa1111.md"]

    (vault / folder / "second-bbbb2222.md").unlink()
    assert hits(settled, "osprey") == []


def test_quick_catch_up_follows_folders_created_moved_and_removed(
    settled: Store, vault: Path
) -> None:
    write(vault, "webshop/2026-10/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    assert hits(settled, "kestrel") == ["webshop/2026-10/a-aaaa1111.md"]

    write(vault, "infra/2026-11/b-bbbb2222.md", memory_text("bbbb2222", "osprey deploy"))
    assert hits(settled, "osprey") == ["infra/2026-11/b-bbbb2222.md"]

    (vault / "webshop" / "2026-10").rename(vault / "webshop" / "old")
    assert hits(settled, "kestrel") == ["webshop/old/a-aaaa1111.md"]

    (vault / "infra" / "2026-11" / "b-bbbb2222.md").unlink()
    (vault / "infra" / "2026-11").rmdir()
    (vault / "infra").rmdir()
    assert hits(settled, "osprey") == []
    assert {e.path for e in settled.indexer.entries()} == {"webshop/old/a-aaaa1111.md"}


def test_a_folder_listed_again_keeps_the_files_of_its_subfolders(
    settled: Store, vault: Path
) -> None:
    # old flat files beside month folders: listing `webshop` again (a month folder made in
    # it) must compare its own files only, not drop those a level down
    write(vault, "webshop/flat-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    write(vault, "webshop/2026-10/m-bbbb2222.md", memory_text("bbbb2222", "osprey deploy"))
    assert hits(settled, "kestrel osprey") != []
    write(vault, "webshop/2026-11/n-cccc3333.md", memory_text("cccc3333", "heron cache"))
    write(vault, "webshop/flat2-dddd4444.md", memory_text("dddd4444", "plover queue"))
    assert hits(settled, "heron") == ["webshop/2026-11/n-cccc3333.md"]
    assert {e.path for e in settled.indexer.entries()} == {
        "webshop/flat-aaaa1111.md",
        "webshop/flat2-dddd4444.md",
        "webshop/2026-10/m-bbbb2222.md",
        "webshop/2026-11/n-cccc3333.md",
    }
    assert sorted(d.key for d in settled.indexer.search.documents()) == sorted(
        e.path for e in settled.indexer.entries()
    )  # each file indexed once: none taken for new while the index holds it
    (vault / "webshop" / "flat-aaaa1111.md").unlink()
    assert hits(settled, "kestrel") == [] and hits(settled, "osprey") != []
    assert "webshop/flat-aaaa1111.md" not in {d.key for d in settled.indexer.search.documents()}


def test_a_change_in_the_same_clock_tick_as_the_last_look_is_not_missed(
    store: Store, vault: Path
) -> None:
    write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    # A coarse file system's clock (whole seconds) can give the second change the same
    # folder mtime as the first (a fine one, ticking every few ms, cannot 0.1 s later).
    coarse = -(-time.time_ns() // 1_000_000_000) * 1_000_000_000  # the next whole second
    os.utime(vault / "webshop", ns=(coarse, coarse))
    assert hits(store, "kestrel") == ["webshop/a-aaaa1111.md"]
    write(vault, "webshop/b-bbbb2222.md", memory_text("bbbb2222", "osprey deploy"))
    os.utime(vault / "webshop", ns=(coarse, coarse))
    assert hits(store, "osprey") == ["webshop/b-bbbb2222.md"]


def test_an_in_place_rewrite_waits_for_the_full_catch_up(
    settled: Store, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    assert hits(settled, "kestrel") == ["webshop/a-aaaa1111.md"]
    rewrite_in_place(path, memory_text("aaaa1111", "osprey upload"))
    assert hits(settled, "osprey") == []  # the documented gap of the quick check

    monkeypatch.setattr(indexer_module, "FULL_EVERY_S", 0)  # the last full one is now old
    assert hits(settled, "osprey") == ["webshop/a-aaaa1111.md"]


def test_an_explicit_full_catch_up_and_doctor_find_an_in_place_rewrite(
    settled: Store, vault: Path
) -> None:
    path = write(vault, "webshop/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    assert hits(settled, "kestrel") == ["webshop/a-aaaa1111.md"]
    rewrite_in_place(path, memory_text("aaaa1111", "osprey upload"))
    found, after = settled.doctor(fix=True)
    assert found.changed == ("webshop/a-aaaa1111.md",)
    assert after is not None and after.is_clean
    assert hits(settled, "osprey") == ["webshop/a-aaaa1111.md"]

    rewrite_in_place(path, memory_text("aaaa1111", "heron upload"))
    with settled.vault.lock(5):
        result = settled.indexer.catch_up(full=True)
    assert result.updated == ("webshop/a-aaaa1111.md",)


def test_head_moved_by_a_checkout_runs_the_full_catch_up(settled: Store, vault: Path) -> None:
    """libgit2 (memstore sync, GUI clients) rewrites files in place: git's reflog tells."""
    added = settled.add("kestrel upload limit lives in nginx", workspace="webshop")
    before = pygit2.Repository(str(vault)).head.target
    settled.update(added.id, lambda m: m.__class__(**{**m.__dict__, "body": "osprey\n"}), "edit")
    assert hits(settled, "osprey") == [added.path]

    repo = pygit2.Repository(str(vault))
    folder = os.stat(vault / Path(added.path).parent)
    repo.checkout_tree(repo[before], strategy=pygit2.enums.CheckoutStrategy.FORCE)
    repo.references["refs/heads/main"].set_target(before, "reset: moving to HEAD~1")
    os.utime(vault / Path(added.path).parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))

    assert hits(settled, "osprey") == []
    assert hits(settled, "kestrel") == [added.path]


def test_commits_alone_keep_the_quick_catch_up(vault: Path) -> None:
    with Store.open(settings_at(vault)) as store:
        seen = store.vault.head()
        store.add("kestrel upload limit lives in nginx", workspace="webshop")
        git(vault, "commit", "--allow-empty", "-qm", "a person's commit")
        assert store.vault.moved_by_commits_only(seen, store.vault.head())
        moved = store.vault.head()
        git(vault, "reset", "-q", "--hard", "HEAD~1")
        assert not store.vault.moved_by_commits_only(moved, store.vault.head())
        assert not store.vault.moved_by_commits_only(("", 0), store.vault.head())


def test_the_write_lane_checks_only_its_workspace_folders(settled: Store, vault: Path) -> None:
    first = settled.add("kestrel upload limit lives in nginx", workspace="webshop")
    write(vault, "infra/b-bbbb2222.md", memory_text("bbbb2222", "osprey deploy"))
    again = settled.add("kestrel upload limit lives in nginx", workspace="webshop")
    assert (again.status, again.path) == ("duplicate_merged", first.path)
    assert "infra/b-bbbb2222.md" not in {e.path for e in settled.indexer.entries()}
    assert hits(settled, "osprey") == ["infra/b-bbbb2222.md"]  # a reader looks everywhere


def test_a_reader_records_the_folders_that_settled_since_the_last_look(
    store: Store, vault: Path
) -> None:
    """Right after a clone, a sync or a reindex every folder is too recent to trust (RACY)
    and the next reader lists it again; one that finds it as indexed records its mtime, so
    the readers after it list nothing."""
    path = write(vault, "webshop/2026-11/a-aaaa1111.md", memory_text("aaaa1111", "kestrel upload"))
    old = time.time_ns() - 10 * plan_module.RACY_NS  # the file itself settled (test_racy_files)
    os.utime(path, ns=(old, old))
    soon = time.time_ns() + 60 * 10**9  # written a moment before the first look, however
    os.utime(vault / "webshop/2026-11", ns=(soon, soon))  # long the machine makes it take
    assert hits(store, "kestrel") == ["webshop/2026-11/a-aaaa1111.md"]
    racy = store.indexer.manifest.folders(None)
    assert racy["webshop/2026-11"] == plan_module.RACY
    past = time.time_ns() - 10 * plan_module.RACY_NS
    for folder in racy:
        os.utime(vault / folder, ns=(past, past))  # as if the look came seconds later
    assert hits(store, "kestrel") == ["webshop/2026-11/a-aaaa1111.md"]
    recorded = store.indexer.manifest.folders(None)
    assert recorded == {folder: os.stat(vault / folder).st_mtime_ns for folder in racy}
    write(vault, "webshop/2026-11/b-bbbb2222.md", memory_text("bbbb2222", "kestrel nest"))
    assert len(hits(store, "kestrel")) == 2  # a change after it is still found


def test_a_folder_too_recent_to_record_stays_known_when_its_parent_settles(
    store: Store, vault: Path
) -> None:
    """An add makes a workspace's month folder; the next reader finds its files indexed
    while the folder is still too recent to trust but its parents are not (they changed
    earlier: a mkdir, then the write). Recording the parents alone left the month folder
    unknown to every later quick catch-up (it lists only known folders whose time moved):
    a memory moved out of it stayed indexed at its old path beside the new one."""
    assert hits(store, "kestrel") == []  # the vault's folder is known from here on
    added = store.add("kestrel upload limit lives in nginx", workspace="webshop")
    month = Path(added.path).parent.as_posix()
    past, soon = time.time_ns() - 10 * plan_module.RACY_NS, time.time_ns() + 60 * 10**9
    for folder in ("", "webshop"):
        os.utime(vault / folder, ns=(past, past))  # changed seconds before the look
    os.utime(vault / month, ns=(soon, soon))  # changed within the look's racy window
    assert hits(store, "kestrel") == [added.path]
    assert store.indexer.manifest.folders(None).get(month) == plan_module.RACY

    (vault / "ops").mkdir()
    moved = f"ops/{Path(added.path).name}"
    (vault / added.path).rename(vault / moved)
    assert hits(store, "kestrel") == [moved]
    assert store.show(added.id)[0].path == moved
