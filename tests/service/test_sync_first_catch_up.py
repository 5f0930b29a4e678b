"""A sync's first catch-up is the quick one even when a reader's would compare every file
(the last full one is 5 minutes old: ~9 s of CPU at a million memories; issue 39), and
nothing is missed: an edit saved by hand in place, invisible to folder times, is committed
by the sync's status and indexed by its closing catch-up. A checkout by hand still makes
the sync compare every file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memstore.catalog import indexer as indexer_module
from memstore.catalog import plan as plan_module
from memstore.service.store import Store
from tests.conftest import git
from tests.service.test_sync import converge, machines, remote  # noqa: F401 (fixtures)
from tests.service.test_sync_catch_up import fulls, texts  # noqa: F401 (fixture)


def rewrite_in_place(path: Path, old: str, new: str) -> None:
    """An editor's in-place save; the folder's time put back: no folder time shows it."""
    folder = os.stat(path.parent)
    text = path.read_text(encoding="utf-8").replace(old, new)
    with path.open("r+", encoding="utf-8") as handle:
        handle.truncate(0)
        handle.write(text)
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))


def test_a_sync_does_not_compare_every_file_when_the_last_full_catch_up_is_old(
    machines: list[Store],  # noqa: F811
    fulls: list[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # folders count as settled at once: only the closing catch-up can find the edit in place
    monkeypatch.setattr(plan_module, "RACY_NS", -(10**18))
    monkeypatch.setattr(plan_module, "FINE_RACY_NS", -(10**18))
    a, b, _ = machines
    kept = a.add("Postgres listens on 5432 behind the bastion host", workspace="infra")
    converge([a, b])
    assert texts(b, "bastion 5432")
    rewrite_in_place(b.vault.root / kept.path, "behind the bastion", "behind pgbouncer")
    a.add("Redis eviction policy is allkeys-lru on the cache cluster", workspace="infra")
    a.sync()
    b.add("Grafana dashboards live in the observability folder", workspace="ops")
    monkeypatch.setattr(indexer_module, "FULL_EVERY_S", 0)  # a reader would compare all now
    fulls.clear()
    outcome, _, caught_up = b.sync()
    assert outcome.merge == "merged"
    assert str(b.vault.root) not in fulls, "the sync compared every file"
    assert kept.path in outcome.edited, "the edit in place was not committed"
    assert kept.path in caught_up.updated
    assert not git(b.vault.root, "status", "--porcelain").strip()
    # what a reader sees without comparing every file: the edit and the new memory
    monkeypatch.setattr(indexer_module, "FULL_EVERY_S", 10**9)
    fulls.clear()
    assert any("pgbouncer" in t for t in texts(b, "Postgres pgbouncer"))
    assert not any("bastion" in t for t in texts(b, "Postgres bastion 5432"))
    assert texts(b, "Redis eviction allkeys-lru")
    assert str(b.vault.root) not in fulls
    found, _ = b.doctor()
    assert found.is_clean, found
    converge([a, b])  # and the edit reaches the other machine
    assert any("pgbouncer" in t for t in texts(a, "Postgres pgbouncer"))


def test_a_checkout_by_hand_before_a_sync_still_compares_every_file(
    machines: list[Store],  # noqa: F811
    fulls: list[str],  # noqa: F811
) -> None:
    a, b, _ = machines
    a.add("Kafka retention is seven days on the events topic", workspace="infra")
    converge([a, b])
    assert texts(b, "Kafka retention events")
    git(b.vault.root, "reset", "-q", "--hard", "HEAD")  # not a commit: files may be rewritten
    a.add("Consul gossip runs on port 8301 between the agents", workspace="infra")
    a.sync()
    fulls.clear()
    b.sync()
    assert str(b.vault.root) in fulls
    assert texts(b, "Consul gossip 8301")


def test_a_sync_indexes_its_change_in_a_folder_the_manifest_does_not_know(
    machines: list[Store],  # noqa: F811
    fulls: list[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A memstore before this fix could leave a month folder unrecorded under a recorded,
    settled workspace folder (Updater._settle). The sync's closing catch-up lists the
    folders it changed files in: one the manifest does not know is found from the nearest
    folder above it that it knows, not skipped."""
    monkeypatch.setattr(plan_module, "RACY_NS", -(10**18))
    monkeypatch.setattr(plan_module, "FINE_RACY_NS", -(10**18))
    a, b, _ = machines
    kept = a.add("Postgres listens on 5432 behind the bastion host", workspace="infra")
    converge([a, b])
    assert texts(b, "bastion 5432")
    month = kept.path.rpartition("/")[0]
    manifest = b.indexer.manifest
    assert {"", "infra", month} <= set(manifest.folders(None))
    manifest.execute("DELETE FROM folders WHERE path = ?", [month])  # as the old one left it
    rewrite_in_place(a.vault.root / kept.path, "behind the bastion", "behind pgbouncer")
    a.sync()
    fulls.clear()
    outcome, _, caught_up = b.sync()
    assert outcome.merge == "fast-forward" and str(b.vault.root) not in fulls
    assert caught_up.updated == (kept.path,)
    assert any("pgbouncer" in t for t in texts(b, "Postgres pgbouncer"))
    assert month in manifest.folders(None)
