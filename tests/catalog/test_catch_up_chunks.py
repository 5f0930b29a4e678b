"""A bulk catch-up in chunks: what it holds is bounded by the chunk, its answers are a
single build's, and a kill between chunks leaves a state the next catch-up finishes."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memstore.catalog import reading as reading_module
from memstore.catalog import updater as updater_module
from memstore.catalog.compare import compare_all
from memstore.catalog.memory_manifest import MemoryManifest
from memstore.service.store import Store
from tests.catalog.test_reindex_scale import answers, entity_rows, generate, stopped_clock
from tests.conftest import git, settings_at

CHUNK = 64

# A catch-up in another process, in chunks of argv[2] files, killed by the crash point
# after its first chunk is recorded (SIGKILL: no cleanup, as after a real kill).
KILLED_CATCH_UP = """
import sys
from pathlib import Path
from memstore.catalog import updater
from memstore.core import faults
from memstore.core.config import Settings
from memstore.service.store import Store

updater.CHUNK_FILES = int(sys.argv[2])
faults.arm("catch-up-chunk")
settings = Settings(vault=Path(sys.argv[1]), source="test", session="test", host="test")
with Store.open(settings) as store:
    store.catch_up()
"""


def rows_written(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record how many file rows each manifest write holds."""
    sizes: list[int] = []
    write = MemoryManifest.write

    def counted(
        self: MemoryManifest, rows: list[tuple[object, ...]], *args: Any, **kwargs: Any
    ) -> None:
        sizes.append(len(rows))
        write(self, rows, *args, **kwargs)

    monkeypatch.setattr(MemoryManifest, "write", counted)
    return sizes


def shares_planned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record among how many processes each index commit's files are shared."""
    counts: list[int] = []
    plan = updater_module.plan_shares

    def counted(*args: Any, **kwargs: Any) -> list[list[str]]:
        shares = plan(*args, **kwargs)
        counts.append(len(shares))
        return shares

    monkeypatch.setattr(updater_module, "plan_shares", counted)
    return counts


@pytest.mark.parametrize("helpers", [False, True])
def test_a_bulk_catch_up_records_a_chunk_at_a_time_and_answers_as_one(
    vault: Path, monkeypatch: pytest.MonkeyPatch, helpers: bool
) -> None:
    """Every chunk is committed to the index and recorded in the manifest before the next
    is read (never more than a chunk of rows pending), with or without helper processes
    sharing each chunk; the index answers, to the score, as one built in one commit."""
    paths = generate(vault, 300)
    bad = sorted(paths)[100]  # in the second chunk: indexed, and said to be a problem
    (vault / bad).write_bytes(b"\xff\xfe not utf-8 \x00")
    with Store.open(settings_at(vault), clock=stopped_clock()) as store:
        whole = answers(store), entity_rows(store)  # the first catch-up: one chunk
        assert store.indexer.search.segment_count() == 1
        monkeypatch.setattr(updater_module, "CHUNK_FILES", CHUNK)
        if helpers:
            monkeypatch.setattr(reading_module, "PART_MIN", 20)
            monkeypatch.setattr(reading_module, "usable_cores", lambda: 2)
        shares = shares_planned(monkeypatch)
        sizes = rows_written(monkeypatch)
        steps: list[tuple[int, int]] = []
        result = store.reindex(lambda done, total: steps.append((done, total)))
        written = list(sizes)  # the searches after it may record settled folders
        assert (answers(store), entity_rows(store)) == whole
        drift = store.indexer.drift()
    chunks = -(-300 // CHUNK)
    assert len(written) == chunks and max(written) <= CHUNK and sum(written) == 300
    assert shares == [2 if helpers else 1] * chunks  # every chunk of the build is shared
    assert len(result.updated) == 300 and [p.path for p in result.problems] == [bad]
    assert steps[-1] == (300, 300)
    assert [d for d, _ in steps] == sorted(d for d, _ in steps)
    assert drift.is_clean


def killed_catch_up(vault: Path, chunk: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_CATCH_UP, str(vault), str(chunk)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, f"never reached the point: {done.stderr}"


def indexed_keys(store: Store) -> tuple[set[str], set[str]]:
    """The paths the manifest records and the keys the search index holds."""
    recorded = {entry.path for entry in store.indexer.manifest.entries()}
    return recorded, {doc.key for doc in store.indexer.search.documents()}


@pytest.mark.parametrize("scope", ["first", "quick"])
def test_a_catch_up_killed_between_chunks_is_finished_by_the_next(vault: Path, scope: str) -> None:
    """Killed after its first chunk, a catch-up leaves an index and a manifest that agree
    (the manifest claims no file the index lacks, no rebuild is needed), with the folders
    it listed unrecorded; the next catch-up, full or quick, indexes just the rest."""
    if scope == "quick":  # an indexed vault, caught up in full a moment ago
        with Store.open(settings_at(vault)) as store:
            store.add("nginx upload limit is client_max_body_size", workspace="webshop")
            with store.vault.lock(5):
                store.indexer.catch_up(full=True)
    before = 1 if scope == "quick" else 0
    paths = generate(vault, 120)  # by hand, one commit: HEAD moved by commits alone
    killed_catch_up(vault, 25)
    with Store.open(settings_at(vault), clock=stopped_clock()) as store:
        recorded, held = indexed_keys(store)
        assert recorded == held
        assert before < len(recorded) < before + 120
        store.indexer.check()  # counts agree: nothing to heal
        result = store.catch_up()
        assert store.indexer.recovered_from is None
        assert len(result.updated) == before + 120 - len(recorded)
        recorded, held = indexed_keys(store)
        assert recorded == held and set(paths) <= recorded
        assert store.indexer.drift().is_clean
        caught_up = answers(store)
        store.reindex()
        assert answers(store) == caught_up
    assert git(vault, "status", "--porcelain") == ""


@pytest.mark.parametrize("workspace", [None, "infra"])
def test_a_full_comparison_folder_by_folder_finds_what_the_whole_listing_finds(
    vault: Path, workspace: str | None
) -> None:
    """The full catch-up compares a folder at a time and keeps only the differences; its
    plan is the one the whole listing beside the whole record gives: files added, changed
    (in place, same size), removed from a folder, and under a folder that is gone."""
    paths = sorted(generate(vault, 400))
    with Store.open(settings_at(vault)) as store:
        store.catch_up()
        by_folder: dict[str, list[str]] = {}
        for path in paths:
            by_folder.setdefault(path.rpartition("/")[0], []).append(path)
        month = next(f for f in sorted(by_folder) if f.count("/") == 1 and f.startswith("infra/"))
        for path in by_folder.pop(month):  # a whole month folder goes
            (vault / path).unlink()
        (vault / month).rmdir()
        rest = [p for folder in sorted(by_folder) for p in by_folder[folder]]
        for path in rest[::37]:  # rewritten in place: same size, a new mtime
            text = (vault / path).read_text(encoding="utf-8")
            (vault / path).write_text(text.upper(), encoding="utf-8")
        for path in rest[5::41]:
            (vault / path).unlink()
        for n, folder in enumerate(("infra", "infra/2027-01", "webshop/2026-02", "notes")):
            (vault / folder).mkdir(parents=True, exist_ok=True)
            (vault / folder / f"new-{n}.md").write_text(f"a new memory {n}\n", encoding="utf-8")
        updater = updater_module.Updater(store.vault, store.indexer.search, store.indexer.manifest)
        folders: dict[str, int] = {}
        plan, fingerprints = compare_all(updater.vault, updater.manifest, workspace, None, folders)
        listed: dict[str, int] = {}
        on_disk = store.vault.scan(workspace=workspace, folders=listed)
        whole = updater_module.plan_catch_up(
            on_disk, store.indexer.manifest.fingerprints(workspace)
        )
    assert (plan.added, plan.changed, plan.removed) == (whole.added, whole.changed, whole.removed)
    assert plan.added and plan.changed and plan.removed
    # and the files the first catch-up read within their racy window, read again (plan.py)
    again = (*whole.added, *whole.changed, *plan.unsure)
    assert fingerprints == {path: on_disk[path] for path in again}
    assert folders.keys() == listed.keys()
