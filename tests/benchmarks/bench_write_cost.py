"""What reliability costs an add: `Store.add` beside the bare write it wraps, same vault, same run.

The bare write is what an add did before hand edits and crash healing: write the file,
commit it, index it. `Store.add` adds the checks: its target file against HEAD, the write
journal, git debris stats, a duplicate lookup. Runs alternate so load hits both alike.

    python tests/benchmarks/bench_write_cost.py --memories 1000 --adds 100
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from memstore.core.config import Settings
from memstore.service.store import Store, init_vault

WORDS = [
    "nginx",
    "postgres",
    "deploy",
    "cache",
    "upload",
    "retry",
    "queue",
    "index",
    "token",
    "webhook",
    "alpha",
    "beta",
]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(10)) + f" number {n}"


def bare_write(store: Store, body: str) -> None:
    path, memory = store.plan_memory(body, workspace="w1", kind="note", keywords=(), source="b")
    with store.transaction(catch_up=False) as tx:
        store.vault.write_atomic(path, body)
        tx.commit("bare", add=(path,))
        store.indexer.record(path, memory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=100)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memstore-bench-")) / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    init_vault(root, settings)
    rng = random.Random(3)
    timings: dict[str, list[float]] = {"Store.add": [], "bare write + commit + index": []}
    with Store.open(settings) as store:
        for n in range(args.memories):
            store.add(text(rng, n), workspace=f"w{n % 5}")
        for n in range(args.adds):
            for name in timings:
                body = text(rng, args.memories + 2 * n + (name == "Store.add"))
                start = time.perf_counter()
                if name == "Store.add":
                    store.add(body, workspace="w1")
                else:
                    bare_write(store, body + "\n")
                timings[name].append((time.perf_counter() - start) * 1000)
    print(f"{args.memories} memories, {args.adds} adds each, alternating")
    for name, values in timings.items():
        values.sort()
        p95 = values[int(len(values) * 0.95) - 1]
        print(f"  {name:30} p50 {statistics.median(values):6.1f} ms   p95 {p95:6.1f} ms")


if __name__ == "__main__":
    main()
