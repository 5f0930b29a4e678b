"""A sync's checkout writes and compares only the files the merge changed (issue 39: at
1,000,000 memories a checkout of the whole tree looked at every file for the 1,000 a sync
brought), and looks for hand edits only among the files the merge would write over; what
it brings, changes and deletes is all there, a person's edit elsewhere is kept and
committed by the next sync, and one the merge would overwrite stops it, nothing lost."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pygit2
import pytest

from memstore.service.store import Store
from tests.conftest import git
from tests.service.test_sync import converge, machines, remote  # noqa: F401 (fixtures)


@pytest.fixture
def checkouts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str] | None]]:
    """Record the paths of every checkout from here on (None: the whole tree)."""
    seen: list[list[str] | None] = []
    real = pygit2.Repository.checkout_tree

    def recording(self: pygit2.Repository, treeish: Any, **kwargs: Any) -> None:
        paths = kwargs.get("paths")
        seen.append(sorted(paths) if paths is not None else None)
        real(self, treeish, **kwargs)

    monkeypatch.setattr(pygit2.Repository, "checkout_tree", recording)
    yield seen


def status(store: Store) -> str:
    return git(store.vault.root, "status", "--porcelain")


def test_a_merge_checks_out_only_what_it_changed(
    machines: list[Store],  # noqa: F811
    checkouts: list[list[str] | None],
) -> None:
    a, b, _ = machines
    kept = a.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    gone = a.add("The staging deploy needs the VPN profile named ops-eu", workspace="infra")
    other = a.add("Grafana dashboards live in the observability folder", workspace="ops")
    converge([a, b])
    new = a.add("Redis eviction policy is allkeys-lru on the cache cluster", workspace="infra")
    path = a.vault.root / kept.path
    path.write_text(path.read_text(encoding="utf-8").replace("bastion", "pgbouncer"), "utf-8")
    (a.vault.root / gone.path).unlink()
    a.sync()
    b.add("Loki keeps logs for thirty days", workspace="ops")
    edited = b.vault.root / other.path  # a person's edit the merge does not touch
    edited.write_text(edited.read_text(encoding="utf-8") + "\nAnd in Grafana Cloud.\n", "utf-8")
    checkouts.clear()
    outcome, _, _ = b.sync()
    assert outcome.merge == "merged"
    assert checkouts == [sorted([kept.path, gone.path, new.path])], checkouts
    assert (b.vault.root / new.path).is_file() and not (b.vault.root / gone.path).exists()
    assert "pgbouncer" in (b.vault.root / kept.path).read_text(encoding="utf-8")
    assert status(b) == "", "the work tree is the merge's, git's index agrees"
    assert "Grafana Cloud" in git(b.vault.root, "show", f"HEAD:{other.path}")
    found, _ = b.doctor()
    assert found.is_clean, found
    a.sync()
    assert "Grafana Cloud" in (a.vault.root / other.path).read_text(encoding="utf-8")
