"""MCP `memory_recall` over stdio on a kept bench_scale vault: the real mcp client and a
`memstore serve` answering in process (MEMSTORE_NO_DAEMON=1), the MCP phase's queries, wall
p50 / p95 — bench_scale.py's MCP phase without its adds, so another's vault stays as it was
(recall counters aside).

    python tests/benchmarks/bench_recall_mcp.py --exe EXE --run RUN --size N [--json OUT]

EXE runs memstore (a script `exec env PYTHONPATH=SOURCES python -m memstore "$@"` picks the code).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_mcp
from bench_recall_scale import cached_queries
from bench_scale import mcp_recalls


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--exe", required=True, help="the memstore command to serve with")
    parser.add_argument("--run", type=Path, required=True, help="a kept bench_scale run folder")
    parser.add_argument("--size", type=int, required=True, help="the run's --sizes")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--query-cache", type=Path, help="bench_recall_scale.py's")
    args = parser.parse_args()
    queries = cached_queries(args.size, args.queries, args.query_cache)
    env = {**os.environ, "HOME": str(args.run / "home"), "MEMSTORE_NO_DAEMON": "1"}
    env.pop("PYTHONPATH", None)
    params = bench_mcp.server_params(args.exe, args.run / "vault", env, Path("/tmp"))
    before = os.getloadavg()[0]
    found = asyncio.run(mcp_recalls(params, queries, args.warmup, 600))
    found["load"] = [round(before, 1), round(os.getloadavg()[0], 1)]
    print(json.dumps(found))
    if args.json:
        args.json.write_text(json.dumps(found) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
