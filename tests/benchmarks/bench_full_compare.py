#!/usr/bin/env python
"""A full catch-up's comparison on an existing vault: memory and CPU, folder at a time or whole.

A standalone script (issue 39, a million memories):

    python tests/benchmarks/bench_full_compare.py VAULT [--runs 3] [--ways folders whole apart]

Read-only (but `apart`): it opens the vault's manifest (any format: nothing is rebuilt) and compares every file with the manifest the way
`Updater.full` does now (`compare.compare_all`: a folder at a time, only the differences kept) and
the way it did before (the whole listing beside the whole record, `plan_catch_up`), each in
a fresh process, alternating; it prints the peak RSS above the process's size with the
index open, and the CPU time of the comparison. Nothing is indexed or written. `apart`
is a daemon's comparison now (`compare.compare`: no lock, a connection of its own) and
then what it holds the store for (`recheck` of the plan, and the manifest's folder times
and HEAD written, as `Updater.apply_compared` does; the plan's files are not indexed):
the CPU of each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ONE = """
import json, resource, sys, time
from pathlib import Path
from memstore.catalog.compare import compare, compare_all, recheck
from memstore.catalog.memory_manifest import Folders, MemoryManifest, create_tables
from memstore.catalog.plan import plan_catch_up, settle_all
from memstore.vault.files import Vault

def rss_mib():
    with open("/proc/self/status", encoding="utf-8") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024

vault = Vault(Path(sys.argv[1]))
path = vault.state_dir / "index" / "manifest.sqlite"
manifest = MemoryManifest.open(path, create_tables)
before = rss_mib()
started = time.process_time()
held = None
if sys.argv[2] == "whole":
    on_disk = vault.scan(None, folders={})
    plan = plan_catch_up(on_disk, manifest.fingerprints(None))
elif sys.argv[2] == "apart":
    compared = compare(vault, path, None)
    plan = compared.plan
    cpu = time.process_time() - started
    recheck(vault, manifest, compared)
    meta = {"full-at": f"{compared.started / 1e9:.3f}", "git": " ".join(map(str, compared.head))}
    mtimes = settle_all(compared.folders, compared.started)
    manifest.write([], [], Folders(mtimes, replaced=""), meta)
    held = round(time.process_time() - started - cpu, 3)
else:
    plan, _ = compare_all(vault, manifest, None, None, {})
if held is None:
    cpu = time.process_time() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"way": sys.argv[2], "cpu_s": round(cpu, 2), "held_cpu_s": held,
                  "rss_before_mib": round(before),
                  "peak_above_mib": round(peak - before), "added": len(plan.added),
                  "changed": len(plan.changed), "removed": len(plan.removed)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ways", nargs="+", default=["folders", "whole"])
    args = parser.parse_args()
    results: dict[str, list[dict[str, object]]] = {way: [] for way in args.ways}
    for _ in range(args.runs):
        for way in args.ways:
            done = subprocess.run(
                [sys.executable, "-c", ONE, str(args.vault), way],
                capture_output=True,
                text=True,
                check=True,
            )
            results[way].append(json.loads(done.stdout))
            print(done.stdout.strip(), flush=True)
    load = Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3]
    print(json.dumps({"load": load, "at": time.strftime("%H:%M UTC", time.gmtime())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
