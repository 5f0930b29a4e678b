"""What the racy-file rule costs (docs/search.md): a burst of adds, and the catch-ups after a
rebuild whose every file was read within its racy window (the worst case: a clone or a
sync's checkout read at once).

Run it with each checkout first on PYTHONPATH, alternating, each on its own copy of one vault
(`bench_read_path.py build V 10000`, then `cp -a`); it prints CPU time (this process's user +
sys) beside wall time:

    PYTHONPATH=/tmp/racy-main python tests/benchmarks/bench_racy.py /tmp/racy-bench/a adds 40
    PYTHONPATH=$PWD python tests/benchmarks/bench_racy.py /tmp/racy-bench/b adds 40
    PYTHONPATH=$PWD python tests/benchmarks/bench_racy.py /tmp/racy-bench/b after-rebuild
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memstore.core.config import Settings
from memstore.service.store import Store


def _timed(action: Callable[[], Any]) -> tuple[float, float, Any]:
    """Run `action`; return its CPU and wall time (ms) and its result."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = action()
    return 1000 * (time.process_time() - cpu), 1000 * (time.perf_counter() - wall), result


def adds(store: Store, count: int) -> None:
    cpus, walls = [], []
    for n in range(count):
        cpu, wall, _ = _timed(lambda n=n: store.add(f"racy bench heron {n}", workspace="bench"))
        cpus.append(cpu)
        walls.append(wall)
    cpus.sort()
    print(
        f"add CPU p50 {statistics.median(cpus):.1f} ms, p95 {cpus[int(0.95 * len(cpus))]:.1f} ms;"
        f" wall p50 {statistics.median(walls):.1f} ms ({count} adds)"
    )


def after_rebuild(store: Store, root: Path) -> None:
    later = time.time_ns() + 120 * 10**9  # a tick to come: read within its racy window
    files = [p for p in root.rglob("*.md") if ".memstore" not in p.parts and ".git" not in p.parts]
    for path in files:
        os.utime(path, ns=(later, later))
    cpu, wall, result = _timed(store.reindex)
    print(f"reindex of {len(result.updated)} files: CPU {cpu:.0f} ms, wall {wall:.0f} ms")
    for full in (False, True, False):
        with store.vault.lock(5):
            cpu, wall, caught = _timed(lambda full=full: store.indexer.catch_up(full=full))
        kind = "full" if full else "quick"
        print(
            f"next {kind} catch-up: CPU {cpu:.0f} ms, wall {wall:.0f} ms, "
            f"{len(caught.updated)} re-indexed, {store.indexer.search.segment_count()} segments"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("what", choices=["adds", "after-rebuild"])
    parser.add_argument("count", type=int, nargs="?", default=40)
    args = parser.parse_args()
    import memstore

    print(f"code: {Path(memstore.__file__).parent}", file=sys.stderr)
    settings = Settings(vault=args.vault, source="bench", session="bench", host="bench")
    with Store.open(settings) as store:
        store.search("warm", workspace=None, k=1)
        if args.what == "adds":
            adds(store, args.count)
        else:
            after_rebuild(store, args.vault)


if __name__ == "__main__":
    main()
