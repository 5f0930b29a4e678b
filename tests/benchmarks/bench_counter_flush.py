"""A sync's counter flush alone on a kept vault: wall, CPU and the folders it lists again.

Records one recall of N random memories, then times `Store.flush_usage()` (every pending
count, as a sync flushes them) in this process, counting the folders a catch-up lists
(`Vault.scan_folder`). The code measured is whatever `memstore` imports first: put a
`git archive` of each commit first on PYTHONPATH and alternate them (docs/benchmarks.md,
"Ninth session: a million in day folders"):

    git archive 478eb8e memstore index | tar -x -C /tmp/flush-main
    PYTHONPATH=/tmp/flush-main python tests/benchmarks/bench_counter_flush.py VAULT 600 21

The vault is changed: the flush commits the counters into the files.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from pathlib import Path
from typing import Any

from memstore.core.config import Settings
from memstore.service.store import Store
from memstore.vault.files import Vault


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("recalls", type=int, help="memories given one pending recall")
    parser.add_argument("seed", type=int, help="picks the memories (vary it between runs)")
    args = parser.parse_args()
    listed: list[str] = []
    real = Vault.scan_folder

    def counting(self: Vault, where: str, *rest: Any, **named: Any) -> Any:
        listed.append(where)
        return real(self, where, *rest, **named)

    Vault.scan_folder = counting  # type: ignore[method-assign]
    settings = Settings(vault=args.vault, source="bench", session="flush", host="bench-host")
    with Store.open(settings) as store:
        with store.transaction(catch_up=False):
            ids = [entry.id for entry in store.indexer.entries()]
        chosen = random.Random(args.seed).sample(ids, args.recalls)
        store.usage.record(chosen, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        listed.clear()
        cpu, wall = cpu_s(), time.perf_counter()
        flushed = store.flush_usage()
        wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
    figures = {"flushed": flushed, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    print(json.dumps({**figures, "folders_listed": len(listed)}))


if __name__ == "__main__":
    main()
