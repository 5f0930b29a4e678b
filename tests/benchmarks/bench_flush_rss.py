"""The periodic counter flush as the daemon runs it: its CPU, wall, parts and the RSS it leaves.

Recalls recorded as the MCP tool records them (`tools.recall`), the heap settled as the
daemon settles it between requests, then `flush_usage(0)` (the tick's flush, every pending
count) and the settle after it. Prints one JSON line: files written, the flush's CPU and
wall, RSS before / after / settled (MiB), and where the wall went (timing wrappers round the
flush's parts; no profiler). Writes the vault: use a copy. Run it once per code, the codes
taking turns, each with its own queries (`--start`): a file is flushed once per interval.

    HOME=FOLDER/home PYTHONPATH=CODE python tests/benchmarks/bench_flush_rss.py \\
        --vault FOLDER/vault --queries /tmp/recall1m2-q1m.json --start 40 --count 40
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def resident_mib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
    return 0


def cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def timed(spent: dict[str, list[float]], owner: Any, name: str) -> None:
    """Wrap `owner.name` to add its wall and CPU seconds to spent[name]."""
    real = getattr(owner, name)

    @functools.wraps(real)
    def wrap(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            part = spent.setdefault(name, [0.0, 0.0])
            part[0] += time.perf_counter() - wall
            part[1] += time.process_time() - cpu

    setattr(owner, name, wrap)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True, help="bench_recall_scale's cache")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=40)
    args = parser.parse_args()
    from memstore.catalog.indexer import Indexer
    from memstore.catalog.listings import Listings
    from memstore.core.config import Settings
    from memstore.daemon import heap
    from memstore.ops import tools
    from memstore.service import counters, transaction
    from memstore.service.store import Store
    from memstore.vault.git import GitRepo

    spent: dict[str, list[float]] = {}
    for owner, name in (
        (Listings, "adopt"),
        (GitRepo, "commit"),
        (GitRepo, "changed_paths"),
        (Indexer, "catch_up"),
        (Indexer, "record_all"),
        (counters, "write_many_atomic"),
        (transaction.Transaction, "commit_edits"),
    ):
        timed(spent, owner, name)
    queries = [text for text, _ in json.loads(args.queries.read_text())["queries"]]
    settings = Settings(vault=args.vault, source="bench", session="bench", host="bench")
    with Store.open(settings) as store:
        store.resident = True
        for text in queries[args.start : args.start + args.count]:
            tools.recall(store, {"query": text, "workspace": "all"}, workspace=None, live=True)
        heap.settle(store)
        spent.clear()
        before, cpu, wall = resident_mib(), cpu_s(), time.perf_counter()
        files = store.writer.flush_usage(0)
        found: dict[str, Any] = {
            "files": files,
            "flush_cpu_s": round(cpu_s() - cpu, 2),
            "flush_wall_s": round(time.perf_counter() - wall, 2),
            "rss_before_mib": before,
            "rss_after_flush_mib": resident_mib(),
        }
        heap.settle(store)
        found["rss_settled_mib"] = resident_mib()
    found["parts_wall_cpu_s"] = {k: [round(v, 2) for v in w] for k, w in spent.items()}
    found["load"] = round(os.getloadavg()[0], 1)
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
