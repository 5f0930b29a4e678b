"""A counter flush fsyncs its files side by side (issue 39 part 5): a sync's flush of 600
files at 1,000,000 memories waited for 600 journal commits one after another (2-4 s on a
loaded disk). Each file is still written as an atomic write is: its own temp file, its
data fsynced before it is renamed over the old one, so a crash leaves the old text or the
new, never a torn file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memstore.core.codec import parse_memory
from memstore.service.store import Store, init_vault
from tests.conftest import git, settings_at
from tests.service.test_crash_points import TEXTS

OVERLAP_WAIT_S = 2.0  # how long an fsync waits for a second one to be under way


def test_a_flush_fsyncs_its_files_side_by_side_each_before_its_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "vault"
    init_vault(path, settings_at(path))
    with Store.open(settings_at(path)) as store:
        ids = [store.add(text, workspace="webshop").id for text in TEXTS[:6]]
    events: list[tuple[str, str]] = []  # ("fsync" | "replace", temp file name)
    state = {"in_flight": 0, "peak": 0}
    changed = threading.Condition()
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        if not (name.startswith(str(path)) and name.endswith(".tmp")):
            return real_fsync(fd)  # not a memory file's temp file
        with changed:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
            changed.notify_all()
            changed.wait_for(lambda: state["in_flight"] > 1, OVERLAP_WAIT_S)
        real_fsync(fd)
        with changed:
            state["in_flight"] -= 1
            events.append(("fsync", Path(name).name))

    def replace(src: str | Path, dst: str | Path) -> None:
        with changed:
            events.append(("replace", Path(src).name))
        real_replace(src, dst)

    with Store.open(settings_at(path)) as store:
        store.usage.record(ids, "2026-12-20T09:00:00Z")
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)
        assert store.flush_usage() == len(ids)
        monkeypatch.undo()
    synced = [name for kind, name in events if kind == "fsync"]
    assert len(synced) == len(ids)  # each file's data, once
    assert state["peak"] > 1  # the code before fsynced one file at a time
    for name in synced:  # and each before its rename
        assert events.index(("fsync", name)) < events.index(("replace", name))
    for memory_id in ids:
        file = next(path.glob(f"webshop/**/*{memory_id}.md"))
        assert parse_memory(file.read_text(encoding="utf-8"), path=str(file)).recalled == 1
    assert git(path, "status", "--porcelain") == ""
    assert not list(path.glob("webshop/**/.*.tmp"))
