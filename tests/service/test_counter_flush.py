"""Recall counters that don't churn (issue 39): each file written at most once per flush
interval by the periodic flush, a flush killed anywhere loses no count and counts none
twice, and two machines' counters still sum exactly through sync."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstore.core.codec import parse_memory
from memstore.service.store import Store, init_vault
from memstore.vault.usage import FLUSH_EVERY_S
from tests.conftest import git, settings_at
from tests.service.test_crash_points import TEXTS
from tests.service.test_sync import converge, machines, remote  # noqa: F401 (fixtures)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[tuple[Store, Clock, list[str]]]:
    path = tmp_path / "vault"
    init_vault(path, settings_at(path))
    clock = Clock()
    with Store.open(settings_at(path), clock=clock) as store:
        ids = [store.add(text, workspace="webshop").id for text in TEXTS]
        yield store, clock, ids


def recalled(store: Store, memory_id: str) -> tuple[int, dict[str, int]]:
    """The file's `recalled` and its per-clone shares, read from the file."""
    path = next(store.vault.root.glob(f"webshop/**/*{memory_id}.md"))
    memory = parse_memory(path.read_text(encoding="utf-8"), path=str(path))
    return memory.recalled, dict(memory.recalled_by)


def test_the_periodic_flush_writes_each_file_at_most_once_per_interval(
    clocked: tuple[Store, Clock, list[str]],
) -> None:
    store, clock, ids = clocked
    rng = random.Random(3)
    counted: Counter[str] = Counter()
    writes: dict[str, list[datetime]] = {memory_id: [] for memory_id in ids}
    last = {memory_id: 0 for memory_id in ids}
    commits = len(git(store.vault.root, "log", "--format=%s").splitlines())
    flushes = 0
    for _ in range(60):  # five hours of ticks every five minutes, recalls in between
        for _ in range(rng.randrange(6)):
            hit = rng.choice(ids[:3])  # a hot few, recalled again and again
            store.usage.record([hit], store.writer.timestamp())
            counted[hit] += 1
        clock.advance(300)
        flushes += bool(store.flush_usage(FLUSH_EVERY_S))
        for memory_id in ids:
            now = recalled(store, memory_id)[0]
            if now != last[memory_id]:
                writes[memory_id].append(clock.now)
                last[memory_id] = now
    for memory_id, times in writes.items():
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
        assert all(gap >= FLUSH_EVERY_S for gap in gaps), (memory_id, gaps)
    assert sum(map(len, writes.values())) >= 3  # it did write: ~once an hour each
    subjects = git(store.vault.root, "log", "--format=%s").splitlines()
    assert len(subjects) - commits == flushes  # one commit a flush, none a recall
    assert all(len(times) <= 60 * 300 / FLUSH_EVERY_S + 1 for times in writes.values())
    store.flush_usage()  # sync's flush: everything pending, whatever its age
    assert {i: recalled(store, i)[0] for i in ids} == {i: counted[i] for i in ids}
    assert store.usage.pending() == {}


def test_periodic_flushes_are_an_interval_apart_and_what_is_recalled_meanwhile_waits(
    clocked: tuple[Store, Clock, list[str]],
) -> None:
    store, clock, ids = clocked
    store.usage.record([ids[0]], store.writer.timestamp())
    clock.advance(FLUSH_EVERY_S)
    assert store.flush_usage(FLUSH_EVERY_S) == 1
    store.usage.record([ids[0]], store.writer.timestamp())
    clock.advance(FLUSH_EVERY_S - 1)
    assert store.flush_usage(FLUSH_EVERY_S) == 0
    clock.advance(1)
    assert store.flush_usage(FLUSH_EVERY_S) == 1
    assert recalled(store, ids[0])[0] == 2


FLUSH_AND_DIE = """
import sys
from pathlib import Path
from memstore.core import faults
from memstore.core.config import Settings
from memstore.service.store import Store
vault = Path(sys.argv[1])
faults.arm(sys.argv[2])
with Store.open(Settings(vault=vault, source="test", session="s", host="test-host")) as store:
    store.flush_usage()
"""


@pytest.mark.parametrize(
    "point", ["flush-built", "usage-marked", "memory-written", "git-commit", "usage-committed"]
)
def test_a_flush_killed_anywhere_loses_no_count_and_counts_none_twice(
    tmp_path: Path, point: str
) -> None:
    vault = tmp_path / "vault"
    init_vault(vault, settings_at(vault))
    with Store.open(settings_at(vault)) as store:
        ids = [store.add(text, workspace="webshop").id for text in TEXTS]
        store.usage.record(ids[:2], "2026-12-01T09:00:00Z")
        store.usage.record(ids[:1], "2026-12-01T09:01:00Z")
        replica = store.writer.replica()
    died = subprocess.run(
        [sys.executable, "-c", FLUSH_AND_DIE, str(vault), point], capture_output=True, text=True
    )
    assert died.returncode == -9, died.stderr  # killed at the point, not finished
    with Store.open(settings_at(vault)) as store:
        store.usage.record(ids[:1], "2026-12-01T09:02:00Z")  # a recall after the crash
        store.flush_usage()
        assert recalled(store, ids[0]) == (3, {replica: 3})
        assert recalled(store, ids[1]) == (1, {replica: 1})
        assert recalled(store, ids[2]) == (0, {})
        assert store.usage.pending() == {}
    assert git(vault, "status", "--porcelain") == ""


def test_two_machines_counters_sum_exactly_with_periodic_flushes_and_syncs(
    machines: list[Store],  # noqa: F811
) -> None:
    a, b, _ = machines
    clock = Clock()
    for store in (a, b):
        store.shared.clock = clock
    texts = [f"shared lesson number {n}" for n in range(4)]
    for text in texts:
        a.add(text, workspace="global")
    converge([a, b])
    rng = random.Random(11)
    recalls: Counter[str] = Counter()
    for _ in range(30):
        store = rng.choice((a, b))
        action = rng.choice(["recall", "recall", "recall", "tick", "sync"])
        if action == "recall":
            found = store.recall("shared lesson", workspace="global", k=2, record_usage=True)
            recalls.update(hit.content.strip() for hit in found.hits)
        elif action == "tick":
            clock.advance(rng.choice((60, 900, FLUSH_EVERY_S)))
            store.flush_usage(FLUSH_EVERY_S)
        else:
            store.sync()
    for store in (a, b):  # the counts not due yet: what a daemon's last flush writes
        store.flush_usage()
    converge([a, b])
    for store in (a, b):
        files = [p for p in store.vault.root.glob("global/**/*.md")]
        memories = [parse_memory(p.read_text(encoding="utf-8"), path=str(p)) for p in files]
        totals = {m.body.strip(): m.recalled for m in memories if m.recalled}
        assert totals == dict(recalls)
        assert all(sum(dict(m.recalled_by).values()) == m.recalled for m in memories)


def test_a_sync_within_the_interval_leaves_counts_pending_and_the_next_due_one_writes_them(
    machines: list[Store],  # noqa: F811
) -> None:
    a, b, _ = machines
    clock = Clock()
    for store in (a, b):
        store.shared.clock = clock
    added = a.add("Kafka consumer lag alerts at 10k", workspace="data")
    converge([a, b])

    def recall_commits(store: Store) -> int:
        subjects = git(store.vault.root, "log", "--format=%s").splitlines()
        return sum(s.startswith("recall:") for s in subjects)

    def recall_everywhere() -> None:
        for store in (a, b):
            store.recall("kafka lag", workspace="data", record_usage=True)

    recall_everywhere()
    converge([a, b])  # each clone's first flush: due, written, the interval's flush
    assert [recall_commits(s) for s in (a, b)] == [2, 2]
    assert a.show(added.id)[1].recalled == b.show(added.id)[1].recalled == 2
    recall_everywhere()
    converge([a, b])  # within the hour: no recall commit, the counts wait in usage.sqlite
    assert [recall_commits(s) for s in (a, b)] == [2, 2]
    assert a.show(added.id)[1].recalled == b.show(added.id)[1].recalled == 2
    assert a.usage.pending() and b.usage.pending()
    clock.advance(FLUSH_EVERY_S + 1)
    converge([a, b])  # due again: written once each, summed exactly
    assert [recall_commits(s) for s in (a, b)] == [4, 4]
    for store in (a, b):
        assert store.show(added.id)[1].recalled == 4
        assert not store.usage.pending()
