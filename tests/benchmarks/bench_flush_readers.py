"""Readers during the periodic counter flush: how long the flush holds the store's lock and
the vault lock, and what recalls timed while it runs take.

Recalls recorded as the MCP tool records them (`tools.recall`), then, in one process as in
the daemon: a reader thread timing `Store.recall` back to back, a probe thread timing how
long it waits for the store's lock (every 20 ms), and the flush (`flush_usage(0)`: every
pending count, as the tick's flush of the files due) in the main thread; with `--add-every`,
an add timed every that many seconds meanwhile (another writer's commits mid-flush). The vault lock's
holds by this process are timed round `Vault.lock`. Prints one JSON line. Writes the vault:
use a copy; run it once per code, the codes taking turns, each with its own `--start`.

    HOME=FOLDER/home PYTHONPATH=CODE python tests/benchmarks/bench_flush_readers.py \\
        --vault FOLDER/vault --queries /tmp/recall1m2-q1m.json --start 200 --count 40
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def quantiles(values: list[float]) -> dict[str, float]:
    """n, p50, p95 and max of `values` (seconds) in ms."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(p95 * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def time_lock_holds(holds: list[float]) -> None:
    """Wrap Vault.lock so that each hold by this process adds its seconds to `holds`."""
    from memstore.vault.files import Vault

    real = Vault.lock

    @contextlib.contextmanager
    def timed(self: Vault, timeout: float) -> Iterator[None]:
        with real(self, timeout):
            start = time.perf_counter()
            try:
                yield
            finally:
                holds.append(time.perf_counter() - start)

    Vault.lock = timed  # type: ignore[assignment,method-assign]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True, help="bench_recall_scale's cache")
    parser.add_argument("--start", type=int, default=0, help="first query recorded")
    parser.add_argument("--count", type=int, default=40, help="recalls recorded before")
    parser.add_argument("--before", type=int, default=20, help="recalls timed before it")
    parser.add_argument(
        "--idle", type=float, default=0.0, help="instead of the flush: this long, for reference"
    )
    parser.add_argument(
        "--add-every", type=float, default=0.0, help="seconds between adds timed during it"
    )
    args = parser.parse_args()
    from memstore.core.config import Settings
    from memstore.ops import tools
    from memstore.service.store import Store

    holds: list[float] = []
    time_lock_holds(holds)
    queries = [text for text, _ in json.loads(args.queries.read_text())["queries"]]
    readers = queries[:60]  # what the reader thread asks, the same on every code
    settings = Settings(vault=args.vault, source="bench", session="bench", host="bench")
    found: dict[str, Any] = {"load_before": round(os.getloadavg()[0], 1)}
    with Store.open(settings) as store:
        store.resident = True
        for text in queries[args.start : args.start + args.count]:
            tools.recall(store, {"query": text, "workspace": "all"}, workspace=None, live=True)
        for text in readers:  # their posting lists read once, as a warmed daemon has them
            store.recall(text, workspace=None, catch_up=False)
        before = []
        for text in readers[: args.before]:
            start = time.perf_counter()
            store.recall(text, workspace=None, catch_up=False)
            before.append(time.perf_counter() - start)
        found["recall_before"] = quantiles(before)
        stop = threading.Event()
        during: list[float] = []
        slow: list[tuple[float, float]] = []  # recalls over a second: (start, seconds) in it
        waits: list[float] = []

        def read() -> None:
            n = 0
            while not stop.is_set():
                start = time.perf_counter()
                store.recall(readers[n % len(readers)], workspace=None, catch_up=False)
                during.append(time.perf_counter() - start)
                if during[-1] > 1.0:
                    slow.append((round(start - wall, 2), round(during[-1], 2)))
                n += 1

        def probe() -> None:
            while not stop.wait(0.02):
                start = time.perf_counter()
                with store.shared.mutex:
                    waits.append(time.perf_counter() - start)

        adds: list[float] = []

        def add() -> None:
            n = 0
            while not stop.wait(args.add_every):
                start = time.perf_counter()
                store.add(f"bench flush add {n} at {time.time()}", workspace="bench-flush")
                adds.append(time.perf_counter() - start)
                n += 1

        threads = [threading.Thread(target=read), threading.Thread(target=probe)]
        if args.add_every > 0:
            threads.append(threading.Thread(target=add))
        holds.clear()
        cpu, wall = cpu_s(), time.perf_counter()
        for thread in threads:
            thread.start()
        if args.idle > 0:  # the same readers and adds with no flush: what they take anyway
            stop.wait(args.idle)
            files = 0
        else:
            files = store.writer.flush_usage(0)
        found["flush_wall_s"] = round(time.perf_counter() - wall, 2)
        found["process_cpu_s_during"] = round(cpu_s() - cpu, 2)
        stop.set()
        for thread in threads:
            thread.join(120)
        found["files"] = files
        found["vault_lock_holds_s"] = [round(h, 2) for h in holds]
        found["store_lock_wait"] = quantiles(waits)
        found["recall_during"] = quantiles(during)
        found["add_during"] = quantiles(adds)
        found["slow_recalls_start_s"] = slow
    found["load_after"] = round(os.getloadavg()[0], 1)
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
