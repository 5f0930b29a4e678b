"""The counter flush builds its commit beside the store's lock (issue 39 part 2: a flush
never slows readers): a recall and an add go on while a flush of many files is building;
a commit of another writer or a person's edit landing mid-flush is kept beside the counts;
a flush killed at each of its points counts each recall exactly once.

The flush is held inside its build for real: git's tree building, which every commit goes
through (GitRepo._tree_with), waits in the flush's thread until the test lets it go; on the
old code the flush built its trees holding the store's lock, so the reader waited too."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstore.core.codec import parse_memory
from memstore.service.store import Store, init_vault
from memstore.vault.git import GitRepo
from memstore.vault.usage import FLUSH_EVERY_S
from tests.conftest import git, settings_at, wait_until

MEMORIES = 60  # files the flush writes: enough to spread over several folders' trees
BOUND_S = 20.0  # what a reader may take while the flush is held (it takes ms otherwise)


class HeldBuild:
    """Hold the flush's thread at its first tree building until `release`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self.thread: threading.Thread | None = None
        real: Callable[..., Any] = GitRepo._tree_with

        def held(repo: GitRepo, *args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is self.thread and not self.entered.is_set():
                self.entered.set()
                assert self.released.wait(BOUND_S * 3), "the test never let the flush go"
            return real(repo, *args, **kwargs)

        monkeypatch.setattr(GitRepo, "_tree_with", held)

    def start(self, flush: Callable[[], object]) -> dict[str, object]:
        """Run `flush` in a thread until it is held inside its build."""
        outcome: dict[str, object] = {}

        def run() -> None:
            try:
                outcome["flushed"] = flush()
            except BaseException as err:  # reported by the test, not lost in the thread
                outcome["error"] = err

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        wait_until(
            lambda: self.entered.is_set() or not self.thread or not self.thread.is_alive(),
            BOUND_S,
            "the flush never reached its build",
        )
        assert self.entered.is_set(), outcome
        return outcome

    def finish(self, outcome: dict[str, object]) -> object:
        self.released.set()
        assert self.thread is not None
        self.thread.join(BOUND_S * 3)
        assert not self.thread.is_alive(), "the flush did not finish"
        assert "error" not in outcome, outcome["error"]
        return outcome["flushed"]


@pytest.fixture
def recalled(tmp_path: Path) -> Iterator[tuple[Store, list[str]]]:
    """A store with MEMORIES memories, each recalled once and pending."""
    path = tmp_path / "vault"
    init_vault(path, settings_at(path))
    with Store.open(settings_at(path)) as store:
        ids = [
            store.add(f"lesson {n} about cache shard {n * 7} and queue {n}", workspace="webshop").id
            for n in range(MEMORIES)
        ]
        store.usage.record(ids, "2026-12-01T09:00:00Z")
        yield store, ids


def counts(store: Store) -> dict[str, int]:
    """Each memory's `recalled`, read from the files."""
    found = {}
    for path in store.vault.root.glob("webshop/**/*.md"):
        memory = parse_memory(path.read_text(encoding="utf-8"), path=str(path))
        found[memory.id] = memory.recalled
    return found


def timed_in_thread(call: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    return thread


def test_a_recall_answers_while_a_flush_of_many_files_is_building(
    recalled: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = recalled
    held = HeldBuild(monkeypatch)
    outcome = held.start(store.flush_usage)
    answers: list[int] = []
    reader = timed_in_thread(
        lambda: answers.append(len(store.recall("cache shard", workspace=None, k=3).hits))
    )
    searcher = timed_in_thread(
        lambda: answers.append(len(store.search("queue", workspace="webshop").hits))
    )
    try:
        assert not reader.is_alive() and not searcher.is_alive(), "a reader waited for the flush"
        assert answers and all(answers)
    finally:
        assert held.finish(outcome) == MEMORIES
    assert set(counts(store).values()) == {1}
    assert store.usage.pending() == {}
    assert git(store.vault.root, "status", "--porcelain") == ""


def test_an_add_landing_mid_flush_is_kept_beside_every_count(
    recalled: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ids = recalled
    root = store.vault.root
    held = HeldBuild(monkeypatch)
    outcome = held.start(store.flush_usage)
    added: list[str] = []
    adder = timed_in_thread(
        lambda: added.append(store.add("a lesson added mid-flush", workspace="webshop").id)
    )
    try:
        assert not adder.is_alive(), "an add waited for the flush's build"
    finally:
        assert held.finish(outcome) == MEMORIES
    found = counts(store)
    assert {found[memory_id] for memory_id in ids} == {1}
    assert found[added[0]] == 0
    subjects = git(root, "log", "--format=%s", "-3").splitlines()
    assert subjects[0] == f"recall: usage of {MEMORIES} memories"
    assert subjects[1].startswith("add(webshop): a lesson added mid-flush")
    assert git(root, "status", "--porcelain") == ""
    assert store.usage.pending() == {}


@pytest.mark.parametrize("every", [None, FLUSH_EVERY_S])
def test_a_persons_edit_mid_flush_is_committed_and_keeps_the_count(
    recalled: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch, every: float | None
) -> None:
    store, ids = recalled
    root = store.vault.root
    file = next(root.glob(f"webshop/**/*{ids[5]}.md"))
    held = HeldBuild(monkeypatch)
    outcome = held.start(lambda: store.flush_usage(every))
    try:
        text = file.read_text(encoding="utf-8")
        file.write_text(text.replace("lesson 5 about", "lesson 5, edited by hand, about"))
    finally:
        assert held.finish(outcome) == MEMORIES
    memory = parse_memory(file.read_text(encoding="utf-8"), path=str(file))
    assert "edited by hand" in memory.body and memory.recalled == 1
    assert set(counts(store).values()) == {1}
    assert "edited by hand" in git(root, "show", f"HEAD:{file.relative_to(root)}")
    assert git(root, "status", "--porcelain") == ""
    assert store.usage.pending() == {}


def test_a_stop_asked_for_while_the_flush_builds_ends_it_with_nothing_written(
    recalled: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ids = recalled
    root = store.vault.root
    head = git(root, "rev-parse", "HEAD")
    stop = threading.Event()
    held = HeldBuild(monkeypatch)
    outcome = held.start(lambda: store.tidy(merge=False, stopping=stop.is_set))
    stop.set()  # the daemon's stop, while the flush builds
    held.finish(outcome)
    assert git(root, "rev-parse", "HEAD") == head
    assert set(counts(store).values()) == {0}
    assert git(root, "status", "--porcelain") == ""
    assert sorted(store.usage.pending()) == sorted(ids)  # left for the next flush
    assert store.flush_usage() == MEMORIES
    assert set(counts(store).values()) == {1}


def test_the_daemons_tick_gives_its_flush_up_when_the_daemon_stops(
    recalled: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.daemon.server import Daemon

    store, ids = recalled
    root = store.vault.root
    head = git(root, "rev-parse", "HEAD")
    daemon = Daemon(store, idle_exit=0)
    held = HeldBuild(monkeypatch)
    outcome = held.start(daemon._tidy)  # the watcher's tick, as the daemon runs it
    daemon.stop("asked to")
    held.finish(outcome)
    assert git(root, "rev-parse", "HEAD") == head
    assert set(counts(store).values()) == {0}
    assert sorted(store.usage.pending()) == sorted(ids)


def test_a_purge_while_the_flush_builds_leaves_no_object_holding_its_text(
    recalled: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush that read its files before a `forget --purge` builds nothing after the
    purge's prune: its objects would hold the purged text (review12: a loose blob written
    after `gc --prune=now` kept it on this clone until the next prune)."""
    from datetime import UTC, datetime

    from memstore.service import counters
    from memstore.service.curation import Curator

    store, ids = recalled
    root = store.vault.root
    entered, released = threading.Event(), threading.Event()
    real: Callable[..., Any] = counters._build
    flusher: list[threading.Thread] = []

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() in flusher and not entered.is_set():
            entered.set()  # planned (its files read under the lock), not built yet
            assert released.wait(BOUND_S * 3), "the test never let the flush go"
        return real(*args, **kwargs)

    monkeypatch.setattr(counters, "_build", held)
    outcome: dict[str, object] = {}

    def flush() -> None:
        try:
            outcome["done"] = store.flush_usage()
        except BaseException as err:  # reported by the test, not lost in the thread
            outcome["error"] = err

    thread = threading.Thread(target=flush, daemon=True)
    flusher.append(thread)
    thread.start()
    wait_until(entered.is_set, BOUND_S, "the flush never planned")
    entry = next(e for e in store.indexer.entries() if e.id == ids[7])
    Curator(store, datetime.now(UTC)).purge(entry)  # "lesson 7 about cache shard 49 …"
    released.set()
    thread.join(BOUND_S * 3)
    assert not thread.is_alive() and outcome.get("done") == MEMORIES - 1, outcome
    every = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=root,
        capture_output=True,
        timeout=60,
        check=True,
    ).stdout
    assert b"cache shard 49 " not in every  # in no object, loose or packed
    assert set(counts(store).values()) == {1}


@pytest.mark.parametrize("large", [False, True])
def test_the_flush_leaves_gits_index_to_the_stager_only_where_it_is_large(
    recalled: tuple[Store, list[str]], large: bool
) -> None:
    # advance defers git's index as a commit asked to (defer_index=True) does: only where
    # writing it costs in proportion to a large vault; the transaction's `deferred` asks
    # the stager to look, and it finds nothing to do where the flush staged at once
    from memstore.vault.index_staging import read_index_lag

    store, _ = recalled
    root = store.vault.root
    git(root, "status", "--porcelain")  # git's index up to date before the flush
    store.git.defer_index_bytes = 0 if large else 10**12
    assert store.flush_usage() == MEMORIES
    lagging = read_index_lag(root)[1]
    staged_behind = git(root, "diff", "--cached", "--name-only", "HEAD").split()
    if large:
        assert len(lagging) == MEMORIES and sorted(staged_behind) == sorted(lagging)
        wait_until(
            lambda: not read_index_lag(root)[1], BOUND_S, "the stager never staged the flush"
        )
    else:
        assert lagging == [] and staged_behind == []
    assert git(root, "diff", "--cached", "--name-only", "HEAD") == ""
    assert git(root, "status", "--porcelain") == ""
