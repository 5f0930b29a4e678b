"""A sync's catch-up looks only where its own checkout changed files, not at every file
(at a million memories the full comparison was most of a 1,000-memory sync; issue 39), and
still finds every change: new files, deleted ones and files the merge rewrote in place."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstore.catalog.updater import Updater
from memstore.service.store import Store
from tests.service.test_sync import converge, machines, remote  # noqa: F401 (fixtures)


@pytest.fixture
def fulls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str | None]]:
    """Record every full catch-up (the comparison of every file) from here on."""
    seen: list[str | None] = []
    real = Updater.full

    def recording(self: Updater, *args: object, **kwargs: object) -> object:
        seen.append(str(self.vault.root))
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Updater, "full", recording)
    yield seen


def texts(store: Store, query: str) -> list[str]:
    return [hit.content for hit in store.search(query, workspace=None, k=5).hits]


def test_a_sync_indexes_what_it_brought_without_comparing_every_file(
    machines: list[Store],  # noqa: F811
    fulls: list[str | None],
) -> None:
    a, b, _ = machines
    kept = a.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    gone = a.add("The staging deploy needs the VPN profile named ops-eu", workspace="infra")
    converge([a, b])
    assert texts(b, "bastion 5432") and texts(b, "VPN profile ops-eu")
    # on A: a new memory, one edited in place, one forgotten; B adds its own (a merge)
    a.add("Redis eviction policy is allkeys-lru on the cache cluster", workspace="infra")
    path = a.vault.root / kept.path
    path.write_text(
        path.read_text(encoding="utf-8").replace("behind the bastion", "behind pgbouncer"),
        encoding="utf-8",
    )
    (a.vault.root / gone.path).unlink()  # deleted by hand: the sync commits that
    a.sync()
    b.add("Grafana dashboards live in the observability folder", workspace="ops")
    fulls.clear()
    outcome, _, caught_up = b.sync()
    assert outcome.merge == "merged"
    assert str(b.vault.root) not in fulls, "the sync compared every file"
    assert texts(b, "Redis eviction allkeys-lru")
    assert any("pgbouncer" in t for t in texts(b, "Postgres pgbouncer"))
    assert not any("bastion" in t for t in texts(b, "Postgres bastion 5432"))
    assert not texts(b, "VPN profile ops-eu")
    assert caught_up.updated and caught_up.removed
    # the next reader's catch-up need not compare every file either: HEAD is recorded seen
    fulls.clear()
    b.indexer.catch_up()
    assert str(b.vault.root) not in fulls
    found, _ = b.doctor()
    assert found.is_clean, found


def test_a_checkout_by_hand_still_makes_the_next_catch_up_compare_every_file(
    machines: list[Store],  # noqa: F811
    fulls: list[str | None],
    tmp_path: Path,
) -> None:
    a, b, _ = machines
    a.add("Kafka retention is seven days on the events topic", workspace="infra")
    a.sync()
    from tests.conftest import git

    git(b.vault.root, "pull", "-q", "--no-rebase", "origin", b.git.branch())
    fulls.clear()
    b.indexer.catch_up()
    assert str(b.vault.root) in fulls
    assert texts(b, "Kafka retention events")
