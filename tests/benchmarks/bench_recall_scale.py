"""Recall in process on a kept bench_scale vault: the queries of bench_scale's MCP phase,
each timed (wall and CPU), optionally under cProfile (issue 39, part 5: recall at 1M).

    python tests/benchmarks/bench_recall_scale.py --run /tmp/shared-1m/memstore-scale-1000000-… \
        --size 1000000 --queries 150 --warmup 15 [--profile /tmp/recall-1m.prof] [--record]

`--run` is the folder a `bench_scale.py --keep` run left (its `vault` and `home`); `--size`
regenerates that run's queries (the same seed as its MCP phase). The recall is the
daemon's: `ops.tools.recall` with workspace "all" and a live index (no catch-up). Nothing is
written unless `--record` (recall counters, as the MCP tool does): without it the vault may
be another's, read-only.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf


def items_of(n: int) -> list[bf.Generated]:
    """The memories bench_scale generated for size `n` (without their files): what its
    queries are drawn from."""
    corpus = bf.Corpus(bf.SEED + n)
    seen: set[tuple[str, str]] = set()
    out: list[bf.Generated] = []
    while len(out) < n:
        g = corpus.make()
        if (g.workspace, g.body) not in seen:
            seen.add((g.workspace, g.body))
            out.append(g)
    return out


def cached_queries(size: int, count: int, cache: Path | None) -> list[bf.Query]:
    """bench_scale's MCP-phase queries for `size`, read from `cache` if it holds them."""
    if cache is not None and cache.is_file():
        found = json.loads(cache.read_text())
        if found["size"] == size and found["count"] == count:
            return [bf.Query(text, kind) for text, kind in found["queries"]]
    queries = bf.make_queries(items_of(size), count, bf.SEED * 7 + size)
    if cache is not None:
        rows = [[q.text, q.category] for q in queries]
        cache.write_text(json.dumps({"size": size, "count": count, "queries": rows}))
    return queries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="a kept bench_scale run folder")
    parser.add_argument("--size", type=int, required=True, help="the run's --sizes")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=1, help="passes over the queries")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the measured recalls")
    parser.add_argument("--record", action="store_true", help="record usage (writes the vault)")
    parser.add_argument("--json", type=Path, help="write per-query times here")
    parser.add_argument(
        "--query-cache", type=Path, help="the queries kept here (made at 1M in ~80 s otherwise)"
    )
    args = parser.parse_args(argv)
    os.environ["HOME"] = str(args.run / "home")
    from memstore.core.config import Settings
    from memstore.ops import tools
    from memstore.service.store import Store
    from memstore.vault.files import Vault

    t0 = time.perf_counter()
    queries = cached_queries(args.size, args.queries, args.query_cache)
    bf.log(f"{len(queries)} queries in {time.perf_counter() - t0:.1f} s")
    root = args.run / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    store = Store(settings, Vault(root))

    def recall(text: str) -> Any:
        if args.record:
            arguments = {"query": text, "workspace": "all"}
            return tools.recall(store, arguments, workspace=None, live=True)
        return store.recall(text, workspace=None, k=5, catch_up=False, tiers=True)

    t0 = time.perf_counter()
    for q in queries[: args.warmup]:
        recall(q.text)
    bf.log(f"warm-up ({args.warmup}) {time.perf_counter() - t0:.1f} s")
    rows: list[dict[str, Any]] = []
    profile = cProfile.Profile() if args.profile else None
    for _ in range(args.repeat):
        for q in queries:
            w0, c0 = time.perf_counter(), time.process_time()
            if profile:
                profile.enable()
            recall(q.text)
            if profile:
                profile.disable()
            rows.append(
                {
                    "query": q.text,
                    "kind": q.category,
                    "wall_ms": (time.perf_counter() - w0) * 1000,
                    "cpu_ms": (time.process_time() - c0) * 1000,
                }
            )
    if profile:
        profile.dump_stats(str(args.profile))
    wall = [r["wall_ms"] for r in rows]
    cpu = [r["cpu_ms"] for r in rows]
    out = {
        "size": args.size,
        "recalls": len(rows),
        "wall": bf.summary(wall),
        "cpu": bf.summary(cpu),
        "cpu_p95": round(bf.pct(cpu, 95), 2),
        "load": os.getloadavg()[0],
    }
    print(json.dumps(out))
    for r in sorted(rows, key=lambda r: -r["cpu_ms"])[:10]:
        print(f"  {r['cpu_ms']:8.1f} ms CPU  {r['kind']:10} {r['query']!r}")
    if args.json:
        args.json.write_text(json.dumps({"summary": out, "rows": rows}, indent=1) + "\n")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
