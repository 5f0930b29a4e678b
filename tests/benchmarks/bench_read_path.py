#!/usr/bin/env python
"""The read path and the index without a daemon: the figures of docs/search.md.

A standalone script (nothing here is named test_*). Build a vault once, then measure it;
prefix a command with PYTHONPATH=<other checkout> to measure other code on a copy:

    python tests/benchmarks/bench_read_path.py build /tmp/v100k 100000
    python tests/benchmarks/bench_read_path.py reindex /tmp/v100k
    python tests/benchmarks/bench_read_path.py warm /tmp/v100k
    python tests/benchmarks/bench_read_path.py cold /tmp/v100k
    python tests/benchmarks/bench_read_path.py add /tmp/v100k

`build` writes generated memories (bench_foundation's corpus) with render_memory into
`<workspace>/<YYYY-MM>/` and commits them in batches of 2,000 with pygit2, as a vault
filled by many adds or a sync looks; it does not index. `cold` runs `memstore search` in
fresh processes with MEMSTORE_NO_DAEMON=1 and reports the median wall time and peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_foundation import SEED, Corpus

from memstore.core.codec import derive_id, render_memory, slugify
from memstore.core.config import Settings
from memstore.core.model import Memory
from memstore.service.store import Store, init_vault

QUERIES = (
    "nginx upload limit",
    "pnpm lockfile",
    "postgres migration timeout",
    "redis cache eviction",
    "deploy staging approval",
    "jwt token expiry",
    "docker build cache",
    "flaky test retry",
)


def settings(root: Path) -> Settings:
    return Settings(vault=root, source="bench", session="bench", host="bench")


def build(root: Path, count: int, session: int = 0) -> None:
    """Write `count` generated memories (see the module's docstring). `session` > 0: each
    memory an agent wrote records a session, `session` memories a session written a minute
    apart, as an agent's adds do (recall then looks up each first hit's neighbours)."""
    import pygit2

    init_vault(root, settings(root))
    repo = pygit2.Repository(str(root))
    signature = pygit2.Signature("bench", "bench@example.com")
    corpus, used, seen, batch = Corpus(SEED), set(), set(), []

    def commit() -> None:
        index = repo.index
        index.read(False)
        for path in batch:
            index.add(path)
        tree = index.write_tree()
        index.write()
        message = f"import: {len(batch)} memories"
        repo.create_commit("HEAD", signature, signature, message, tree, [repo.head.target])
        batch.clear()

    written = 0
    opened = datetime(2026, 1, 1)  # when the current session began
    while written < count:
        item = corpus.make()
        if (item.workspace, item.body) in seen:
            continue
        seen.add((item.workspace, item.body))
        length = 8
        memory_id = derive_id(item.workspace, item.body, length)
        while memory_id in used:
            length += 2
            memory_id = derive_id(item.workspace, item.body, length)
        used.add(memory_id)
        created = corpus.created()
        source = corpus.rng.choice(("claude-code", "codex", "cli", "cursor"))
        group, place = divmod(written, session) if session else (0, 0)
        if session and place:
            created = (opened + timedelta(minutes=place)).strftime("%Y-%m-%dT%H:%M:%SZ")
        elif session:
            opened = datetime.fromisoformat(created.replace("Z", "+00:00"))
        memory = Memory(
            id=memory_id,
            workspace=item.workspace,
            body=item.body,
            kind=item.kind,
            keywords=item.keywords,
            source=source,
            session=f"bench-{group}" if session and source != "cli" else "",
            created=created,
            seen=corpus.rng.choice((1, 1, 1, 2, 3)),
        )
        relative = f"{item.workspace}/{created[:7]}/{slugify(item.body)}-{memory_id}.md"
        (root / relative).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        (root / relative).write_text(render_memory(memory), encoding="utf-8")
        batch.append(relative)
        written += 1
        if len(batch) >= 2000:
            commit()
    if batch:
        commit()
    print(f"built {count} memories in {root}")


def timed_ms(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return 1000 * (time.perf_counter() - start)


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def reindex(root: Path) -> None:
    with Store.open(settings(root)) as store:
        cpu, wall = time.process_time(), time.perf_counter()
        result = store.reindex()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(result.updated)
    print(f"reindex {n}: {wall:.1f} s, {n / wall:.0f}/s wall; {cpu:.1f} CPU-s, {n / cpu:.0f}/CPU-s")


def warm(root: Path, runs: int = 60) -> None:
    with Store.open(settings(root)) as store:
        print(f"first catch-up {timed_ms(store.catch_up):.0f} ms")
        times = [
            timed_ms(lambda q=q: store.search(q, workspace=None, k=5))
            for q in (QUERIES * runs)[:runs]
        ]
        print(f"warm search p50 {statistics.median(times):.1f} ms p95 {pct(times, 0.95):.1f} ms")
        print(f"catch-up, nothing changed {timed_ms(store.catch_up):.1f} ms")
        full = getattr(store.indexer, "_quick_catch_up", None)  # absent before issue 12
        if full is not None:
            with store.vault.lock(10):
                ms = timed_ms(lambda: store.indexer.catch_up(full=True))
            print(f"full catch-up, nothing changed {ms:.0f} ms")


def cold(root: Path, runs: int = 9) -> None:
    walls, peaks = [], []
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1"}
    command = [sys.executable, "-m", "memstore", "search", QUERIES[2], "--vault", str(root)]
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        peaks.append(max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before))
    print(
        f"cold memstore search median {statistics.median(walls):.2f} s "
        f"(min {min(walls):.2f}, max {max(walls):.2f}); "
        f"peak RSS of the children so far {max(peaks) / 1024:.0f} MiB"
    )


def add(root: Path, count: int = 40) -> None:
    from memstore.catalog import indexer

    record_ms: list[float] = []
    original = indexer.Indexer.record

    def record(self: indexer.Indexer, *args: object, **kwargs: object) -> None:
        start = time.perf_counter()
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        record_ms.append(1000 * (time.perf_counter() - start))

    indexer.Indexer.record = record  # type: ignore[method-assign]
    stamp = time.time_ns()
    with Store.open(settings(root)) as store:
        store.search("warm up", workspace=None)
        adds = [
            timed_ms(
                lambda n=n: store.add(
                    f"bench add {stamp} number {n}: kafka consumer lag {n * 7919}",
                    workspace="infra",
                )
            )
            for n in range(count)
        ]
    print(
        f"Store.add p50 {statistics.median(adds):.1f} ms p95 {pct(adds, 0.95):.1f} ms; "
        f"Indexer.record p50 {statistics.median(record_ms):.1f} ms "
        f"p95 {pct(record_ms, 0.95):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("build", "reindex", "warm", "cold", "add"))
    parser.add_argument("vault", type=Path)
    parser.add_argument("count", type=int, nargs="?", default=0)
    parser.add_argument(
        "--session", type=int, default=0, help="build: memories a session (0: no sessions)"
    )
    args = parser.parse_args()
    if args.command == "build":
        build(args.vault, args.count or 10_000, args.session)
    else:
        {"reindex": reindex, "warm": warm, "cold": cold, "add": add}[args.command](args.vault)


if __name__ == "__main__":
    main()
