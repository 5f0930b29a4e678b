"""A large vault's status lists only the folders whose times moved (issue 39 part 5: git's
listing of every folder was 5.6 s of an 11.6 s status at 1,000,000 files). It must never
miss a person's new file: each edit below is made while nothing watched, after a status
recorded every folder, and the status must name what libgit2's full status names."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from memstore.service.store import Store
from memstore.vault import git as git_module
from memstore.vault import git_untracked
from tests.conftest import git, wait_until

SETTLED_NS = 50_000_000  # 50 ms: the tests wait (bounded) until folders are that old


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders each status listed (the others passed on their recorded times)."""
    seen: list[str] = []
    real = git_untracked._Walk._list

    def spy(self: Any, folder: str, st: os.stat_result) -> Any:
        seen.append(folder)
        return real(self, folder, st)

    monkeypatch.setattr(git_untracked._Walk, "_list", spy)
    monkeypatch.setattr(git_untracked, "SETTLED_NS", SETTLED_NS)
    return seen


def _settle(vault: Path) -> None:
    """Wait until every folder's times are older than the settling margin (bounded)."""
    newest = max(
        max(os.lstat(d).st_mtime_ns, os.lstat(d).st_ctime_ns)
        for d, _, _ in os.walk(vault)
        if ".git" not in Path(d).parts
    )
    wait_until(lambda: time.time_ns() - SETTLED_NS > newest + 1_000_000, 5, "folders never settled")


def statuses(store: Store, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """libgit2's full status and the large vault's (git's, with the folder record)."""
    store.git.status_env = store.settings.env
    monkeypatch.setattr(git_module, "STATUS_CLI_BYTES", 1 << 62)
    full = store.git.changed_paths()
    monkeypatch.setattr(git_module, "STATUS_CLI_BYTES", 0)
    return full, store.git.changed_paths()


def _recorded(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    """Settle, run a status that records every folder, and check the next lists none."""
    _settle(vault)
    full, large = statuses(store, monkeypatch)
    assert large == full
    listed.clear()
    full, large = statuses(store, monkeypatch)
    assert large == full
    assert listed == [], listed  # every folder passed on its recorded times
    assert (vault / ".git" / git_untracked.RECORD).is_file()


def test_a_new_file_in_a_recorded_folder_is_found_even_with_its_times_set_back(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    memory = store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    store.add("Grafana dashboards live in the observability folder", workspace="ops")
    _recorded(store, vault, monkeypatch, listed)
    folder = (vault / memory.path).parent
    before = os.lstat(folder)
    (folder / "by-hand.md").write_text("a person's note\n", encoding="utf-8")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # as a restore tool might
    listed.clear()
    full, large = statuses(store, monkeypatch)
    assert large == full
    assert f"{folder.relative_to(vault).as_posix()}/by-hand.md" in large
    assert listed == [folder.relative_to(vault).as_posix()]  # only the folder that moved


def test_every_kind_of_hand_change_is_named_as_the_full_status_names_it(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    kept = store.add("Kafka retention is seven days on the events topic", workspace="infra")
    gone = store.add("Consul gossip runs on port 8301 between the agents", workspace="infra")
    other = store.add("Redis eviction policy is allkeys-lru", workspace="cache")
    _recorded(store, vault, monkeypatch, listed)
    with (vault / kept.path).open("a", encoding="utf-8") as handle:  # in place: git's part
        handle.write("\nCompacted topics keep the last value.\n")
    (vault / gone.path).unlink()
    deep = vault / "notes" / "2026" / "12"
    deep.mkdir(parents=True)
    (deep / "café menu ünïcode.md").write_text("a person's note\n", encoding="utf-8")
    (vault / ".memstore" / "scratch.md").write_text("ignored\n", encoding="utf-8")
    os.symlink(Path(other.path).name, (vault / other.path).parent / "link.md")
    full, large = statuses(store, monkeypatch)
    assert large == full
    assert {kept.path, gone.path, "notes/2026/12/café menu ünïcode.md"} <= set(large)
    assert not any(p.startswith(".memstore") for p in large)


def test_a_file_a_commit_stops_tracking_is_found_though_no_folder_moved(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    memory = store.add("The staging deploy needs the VPN profile ops-eu", workspace="infra")
    store.add("Loki keeps logs for thirty days", workspace="ops")
    _recorded(store, vault, monkeypatch, listed)
    folder = os.lstat((vault / memory.path).parent)
    git(vault, "rm", "-q", "--cached", memory.path)
    git(vault, "commit", "-q", "-m", "stop tracking one")
    assert os.lstat((vault / memory.path).parent).st_mtime_ns == folder.st_mtime_ns
    full, large = statuses(store, monkeypatch)
    assert large == full == [memory.path]


@pytest.mark.parametrize("where", [".gitignore", ".git/info/exclude"])
def test_a_rule_changed_in_place_lists_every_folder_again(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str], where: str
) -> None:
    memory = store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    folder = (vault / memory.path).parent
    rules = vault / where
    rules.parent.mkdir(parents=True, exist_ok=True)
    old = rules.read_text(encoding="utf-8") if rules.exists() else ""
    rules.write_text(old + "*.draft\n", encoding="utf-8")
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "--allow-empty", "-m", "drafts are ignored")
    (folder / "plan.draft").write_text("ignored for now\n", encoding="utf-8")
    _recorded(store, vault, monkeypatch, listed)
    assert statuses(store, monkeypatch)[1] == []
    with rules.open("w", encoding="utf-8") as handle:  # in place: no folder's times move
        handle.write(old)
    full, large = statuses(store, monkeypatch)
    assert large == full
    assert f"{folder.relative_to(vault).as_posix()}/plan.draft" in large
    assert len(listed) > 1  # listed whole again


def test_a_new_gitignore_that_unignores_lists_every_folder_again(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    memory = store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    inner = (vault / memory.path).parent
    (vault / ".git" / "info").mkdir(exist_ok=True)
    (vault / ".git" / "info" / "exclude").write_text("*.draft\n", encoding="utf-8")
    (inner / "plan.draft").write_text("ignored for now\n", encoding="utf-8")
    _recorded(store, vault, monkeypatch, listed)
    top = vault / memory.path.split("/")[0]
    (top / ".gitignore").write_text("!*.draft\n", encoding="utf-8")  # un-ignores below it
    full, large = statuses(store, monkeypatch)
    assert large == full
    assert f"{inner.relative_to(vault).as_posix()}/plan.draft" in large


def test_a_repository_inside_the_vault_is_left_to_gits_listing(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    _recorded(store, vault, monkeypatch, listed)
    inner = vault / "clone"
    inner.mkdir()
    git(inner, "init", "-q")
    (inner / "readme.md").write_text("another repository\n", encoding="utf-8")
    full, large = statuses(store, monkeypatch)
    assert large == full


def test_a_garbled_record_lists_every_folder(
    store: Store, vault: Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    memory = store.add("Postgres listens on 5432 behind the bastion", workspace="infra")
    _recorded(store, vault, monkeypatch, listed)
    (vault / ".git" / git_untracked.RECORD).write_text("{not json", encoding="utf-8")
    (vault / memory.path).parent.joinpath("new.md").write_text("a note\n", encoding="utf-8")
    full, large = statuses(store, monkeypatch)
    assert large == full
    assert len(large) == 1 and len(listed) > 1
