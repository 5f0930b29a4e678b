#!/usr/bin/env python
"""Recall latency while a watcher compares every file, beside the same recalls with none.

A standalone script (issue 39, a million memories: the daemon's full comparison ran under
the store's mutex, which recall takes):

    python tests/benchmarks/bench_reconcile_recall.py VAULT [--code DIR ...] [--queries 200]

For each source tree (`--code`, default this checkout; e.g. a `git archive` of main beside
this one), in a fresh process with that tree first on PYTHONPATH: open the vault's store,
run `--queries` recalls (at most `--budget` seconds of them; as the daemon's: no catch-up of their own) with nothing else running ("quiet"), then the same recalls while
another thread compares every file with the index again and again (50 ms apart), the way that code's
watcher does (`Maintenance.reconcile` where it exists, else `catch_up(wait=True)` with
the vault marked watched). Prints p50 / p95 / max of the recalls' wall time per phase,
how many comparisons ran and their mean wall time, and the load. The vault's files are
not changed (a comparison records folder times in the index's manifest: use a copy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ONE = r"""
import json, random, re, statistics, sys, threading, time
from pathlib import Path
from memstore.core.config import Settings
from memstore.service.store import Store
from memstore.vault.files import Vault

root, count, budget = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
store = Store(Settings(vault=root, source="bench", session="bench", host="bench"), Vault(root))
store.catch_up()
rows = store.indexer.manifest.query("SELECT path FROM files ORDER BY path")
picked = random.Random(39).sample([r[0] for r in rows], count)
queries = []
for path in picked:
    words = re.findall(r"[a-z]{5,}", (root / path).read_text(encoding="utf-8").split("---")[-1].lower())
    queries.append(" ".join(words[:3]) or "deploy")

def recalls():
    times, begun = [], time.perf_counter()
    for query in queries:
        if time.perf_counter() - begun > budget:
            break
        started = time.perf_counter()
        store.recall(query, workspace=None, k=5, catch_up=False)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"runs": len(times), "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1), "max_ms": round(times[-1], 1)}

for query in queries[:20]:
    store.recall(query, workspace=None, k=5, catch_up=False)  # warm
quiet = recalls()
stop, compared = threading.Event(), []
apart = hasattr(store.maintenance, "reconcile")

def compare_loop():
    with store.vault.watching():
        while not stop.is_set():
            started = time.perf_counter()
            store.maintenance.reconcile() if apart else store.catch_up(wait=True)
            compared.append(time.perf_counter() - started)
            time.sleep(0.05)  # a recall waiting for the mutex gets it (a lock is not fair)

thread = threading.Thread(target=compare_loop, daemon=True)
thread.start()
while not compared:  # the first comparison done: they now run back to back
    time.sleep(0.01)
busy = recalls()
stop.set()
thread.join()
import memstore
print(json.dumps({"memstore": memstore.__file__, "apart": apart, "quiet": quiet, "comparing": busy, "comparisons": len(compared),
                  "compare_mean_s": round(statistics.mean(compared), 2), "queries": count}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--code", type=Path, nargs="+", default=[Path(__file__).parents[2]])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--budget", type=float, default=180.0, help="seconds of recalls a phase")
    args = parser.parse_args()
    for code in args.code:
        env = {**os.environ, "PYTHONPATH": str(code.resolve())}
        done = subprocess.run(
            [sys.executable, "-c", ONE, str(args.vault), str(args.queries), str(args.budget)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=code,  # `-c` puts the working folder first on sys.path
        )
        print(json.dumps({"code": str(code), **json.loads(done.stdout)}), flush=True)
    load = Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3]
    print(json.dumps({"load": load, "at": time.strftime("%H:%M UTC", time.gmtime())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
