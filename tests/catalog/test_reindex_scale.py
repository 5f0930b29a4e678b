"""Reindex at scale: a rebuilt index answers exactly as the one kept up to date by writes."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import git, settings_at

from memstore.catalog import reading as reading_module
from memstore.core.codec import derive_id, render_memory, slugify
from memstore.core.model import Memory
from memstore.service.store import Store

WORDS = [
    "nginx",
    "upload",
    "limit",
    "postgres",
    "replica",
    "timeout",
    "deploy",
    "staging",
    "approval",
    "pnpm",
    "lockfile",
    "kafka",
    "consumer",
    "lag",
    "redis",
    "eviction",
    "jwt",
    "expiry",
    "docker",
    "cache",
    "terraform",
    "atlantis",
    "helm",
    "rollback",
    "webhook",
    "retry",
    "queue",
    "worker",
    "cron",
    "backup",
    "restore",
    "index",
    "shard",
    "query",
    "planner",
]
IDENTS = ("client_max_body_size", "OrderService", "src/api/upload.ts", "v2.3.1", "JIRA-4821")
QUERIES = ("nginx upload", "postgres replica timeout", "OrderService", "kafka lag", "helm", "zzz")


def generate(vault: Path, count: int, seed: int = 7) -> list[str]:
    """Write `count` memories in both layouts (flat and month folders), one commit."""
    rng = random.Random(seed)
    paths = []
    for n in range(count):
        workspace = rng.choice(("webshop", "infra", "global"))
        body = " ".join(rng.choices(WORDS, k=rng.randint(6, 18)))
        if rng.random() < 0.3:
            body += f" Seen in {rng.choice(IDENTS)}."
        body += f" #{n}\n"
        memory = Memory(
            id=derive_id(workspace, body, 10),
            workspace=workspace,
            body=body,
            kind=rng.choice(("note", "lesson", "trace")),
            keywords=tuple(rng.sample(WORDS, 2)),
            created=f"2026-{rng.randint(1, 11):02d}-0{rng.randint(1, 9)}T10:00:00Z",
        )
        folder = workspace if n % 3 == 0 else f"{workspace}/{memory.created[:7]}"
        relative = f"{folder}/{slugify(body)}-{memory.id}.md"
        (vault / folder).mkdir(parents=True, exist_ok=True)
        (vault / relative).write_text(render_memory(memory), encoding="utf-8")
        paths.append(relative)
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", f"import {count} memories")
    return paths


def stopped_clock() -> Callable[[], datetime]:
    """A clock that stays at this moment: a score's decay moves with the time of the search,
    and two searches a rebuild apart may round differently in the fourth decimal."""
    moment = datetime.now(UTC)
    return lambda: moment


def answers(store: Store) -> list[list[tuple[str, str, float]]]:
    return [
        [(h.id, h.path, round(h.score, 9)) for h in store.search(q, workspace=None, k=10).hits]
        for q in QUERIES
    ]


def check_rebuild_answers_the_same(vault: Path, count: int) -> None:
    paths = generate(vault, count)
    clock = stopped_clock()
    with Store.open(settings_at(vault), clock=clock) as store:
        store.catch_up()
        for n in range(20):  # the write lane's one-document updates, on top
            store.add(f"kafka consumer lag alert number {n} on OrderService", workspace="infra")
        for path in paths[:: max(count // 10, 1)]:  # hand edits: replaced documents
            text = (vault / path).read_text(encoding="utf-8")
            (vault / path).write_text(text + "helm rollback nginx\n", encoding="utf-8")
        with store.vault.lock(5):  # in-place writes: the full catch-up finds them
            store.indexer.catch_up(full=True)
        incremental = answers(store)
        steps: list[tuple[int, int]] = []
        result = store.reindex(lambda done, total: steps.append((done, total)))
        assert answers(store) == incremental
    assert len(result.updated) == count + 20
    assert steps[-1] == (count + 20, count + 20)
    assert [d for d, _ in steps] == sorted(d for d, _ in steps)
    shutil.rmtree(vault / ".memstore")
    with Store.open(settings_at(vault), clock=clock) as fresh:
        assert answers(fresh) == incremental


def test_a_rebuilt_index_answers_like_the_one_kept_by_writes(vault: Path) -> None:
    check_rebuild_answers_the_same(vault, 600)


@pytest.mark.long
def test_a_rebuilt_index_of_20k_memories_answers_like_the_one_kept_by_writes(
    vault: Path,
) -> None:
    check_rebuild_answers_the_same(vault, 20_000)


@pytest.mark.parametrize("executable", [None, "/bin/true", "/nonexistent/python"])
def test_a_rebuild_read_by_a_second_process_answers_the_same(
    vault: Path, monkeypatch: pytest.MonkeyPatch, executable: str | None
) -> None:
    """Large batches are read by a reader process; one that dies or never starts is
    replaced by reading in this process, with the same result."""
    paths = generate(vault, 300)
    (vault / paths[5]).write_bytes(b"\xff\xfe not utf-8 \x00")
    with Store.open(settings_at(vault), clock=stopped_clock()) as store:
        in_process = answers(store)  # 300 files: read in this process
        monkeypatch.setattr(reading_module, "READER_MIN", 50)
        monkeypatch.setattr(reading_module, "READER_CHUNK", 32)
        monkeypatch.setattr(reading_module, "usable_cores", lambda: 2)  # a 1-core machine too
        if executable is not None:
            monkeypatch.setattr(sys, "executable", executable)
        result = store.reindex()
        assert answers(store) == in_process
    assert len(result.updated) == 300
    assert [p.path for p in result.problems] == [paths[5]]


def test_one_usable_core_reads_a_rebuild_in_this_process(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader process on the one core this process may use only adds its answers' pickling
    (taskset, a container of one CPU): the files are read here, with the same result."""
    generate(vault, 120)
    started: list[str] = []
    start = reading_module.Helper.start

    def counted(code: str, messages: list[object]) -> Any:
        started.append(code)
        return start(code, messages)

    with Store.open(settings_at(vault), clock=stopped_clock()) as store:
        in_process = answers(store)
        monkeypatch.setattr(reading_module, "READER_MIN", 50)
        monkeypatch.setattr(reading_module.Helper, "start", counted)
        monkeypatch.setattr(reading_module, "usable_cores", lambda: 2)
        store.reindex()
        assert started == [reading_module.READS_CODE] and answers(store) == in_process
        started.clear()
        monkeypatch.setattr(reading_module, "usable_cores", lambda: 1)
        assert len(store.reindex().updated) == 120
        assert started == [] and answers(store) == in_process


def entity_rows(store: Store) -> list[tuple[str, str, str]]:
    db = store.indexer.search._db
    return sorted(db.execute("SELECT key, entity, kind FROM entities"))


CRASHES_MIDWAY = (
    "import pickle, sys; pickle.load(sys.stdin.buffer); "
    "sys.stdout.buffer.write(pickle.dumps(('done', 40))); sys.exit(3)"
)


@pytest.mark.parametrize("helper", ["works", "/bin/true", "/nonexistent/python", "crashes"])
def test_a_fresh_build_shared_with_helper_processes_answers_the_same(
    vault: Path, monkeypatch: pytest.MonkeyPatch, helper: str
) -> None:
    """A large fresh build is split among processes, each writing a segment the build
    adopts (this process's share too, written before it waits for the helpers); a helper
    that dies, exits early or never starts leaves its share to this process, with the same
    answers, entities and problems."""
    paths = generate(vault, 300)
    ordered = sorted(paths)
    for bad in (ordered[3], ordered[-3]):  # one in this process's share, one in a helper's
        (vault / bad).write_bytes(b"\xff\xfe not utf-8 \x00")
    with Store.open(settings_at(vault), clock=stopped_clock()) as store:
        alone = answers(store), entity_rows(store), store.indexer.search.segment_count()
        monkeypatch.setattr(reading_module, "PART_MIN", 50)
        monkeypatch.setattr(reading_module, "usable_cores", lambda: 3)
        if helper == "crashes":
            monkeypatch.setattr(reading_module, "PART_CODE", CRASHES_MIDWAY)
        elif helper != "works":
            monkeypatch.setattr(sys, "executable", helper)
        steps: list[tuple[int, int]] = []
        result = store.reindex(lambda done, total: steps.append((done, total)))
        assert (answers(store), entity_rows(store)) == alone[:2]
        segments = store.indexer.search.segment_count()
        assert not (vault / ".memstore" / "index" / "search" / "parts").exists()
    assert alone[2] == 1
    # each helper's part and this process's share; what failed helpers left, read here,
    # is one more part
    assert segments == (3 if helper == "works" else 2)
    assert len(result.updated) == 300
    assert [p.path for p in result.problems] == [ordered[3], ordered[-3]]
    assert steps[-1] == (300, 300)
    assert [d for d, _ in steps] == sorted(d for d, _ in steps)


def test_a_reindex_removes_what_a_killed_rebuild_left(vault: Path) -> None:
    """A rebuild killed midway leaves its building folder (up to a gigabyte at 100k); the
    next rebuild removes those of processes that are gone, and no other."""
    generate(vault, 20)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    left = vault / ".memstore" / f"index.building-{gone.pid}"
    (left / "search" / "parts" / "0").mkdir(parents=True)
    (left / "search" / "parts" / "0" / "MAIN_x.seg").write_bytes(b"half a segment")
    running = vault / ".memstore" / f"index.building-{os.getppid()}"  # another live build
    running.mkdir()
    with Store.open(settings_at(vault)) as store:
        assert len(store.reindex().updated) == 20
    assert not left.exists()
    assert running.is_dir()
