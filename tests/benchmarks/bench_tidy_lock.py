"""What a long-running shell's tidy costs on a kept bench_scale vault, and what a writer meets
meanwhile: `Store.tidy()` in a thread (as the watcher runs it every five minutes) while another
process tries `memstore add` (no daemon) every 25 s; stopped after --limit seconds.

    PYTHONPATH=SOURCES python tests/benchmarks/bench_tidy_lock.py \
        --run /tmp/m1-tmp/memstore-scale-1000000-… --limit 200

Writes to the vault: the adds are real (one memory each, workspace webshop), and a tidy
that finishes compacts the index. A tidy still running at --limit is stopped by ending the
process (the next command heals what it leaves).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path


def add(root: Path, text: str) -> tuple[int, float, str]:
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1"}
    argv = [sys.executable, "-m", "memstore", "add", text, "-w", "webshop", "--vault", str(root)]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd="/tmp")
    return done.returncode, time.perf_counter() - t0, (done.stderr or done.stdout).strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="a kept bench_scale run folder")
    parser.add_argument("--limit", type=float, default=200.0, help="seconds before stopping")
    args = parser.parse_args()
    os.environ["HOME"] = str(args.run / "home")
    from memstore.core.config import Settings
    from memstore.service.store import Store
    from memstore.vault.files import Vault

    root = args.run / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    store = Store(settings, Vault(root))
    index = store.indexer.search
    print(f"segments {index.segment_count()}, needs compacting {index.needs_compacting()}")
    done: dict[str, float] = {}

    def tidy() -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        store.tidy()
        done["wall"], done["cpu"] = time.perf_counter() - wall, time.thread_time() - cpu

    t0 = time.perf_counter()
    thread = threading.Thread(target=tidy, daemon=True)
    thread.start()
    n = 0
    while time.perf_counter() - t0 < args.limit:
        thread.join(timeout=5 if n else 3)
        if not thread.is_alive():
            break
        n += 1
        status, seconds, said = add(root, f"tidy lock note {n} at {time.time():.0f} about kafka")
        print(
            f"t={time.perf_counter() - t0:6.1f} s add rc={status} {seconds:5.1f} s {said[:140]!r}"
        )
        time.sleep(max(0.0, 20 - seconds))
    if thread.is_alive():
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(
            f"tidy still running after {time.perf_counter() - t0:.0f} s (CPU "
            f"{time.process_time():.0f} s, peak RSS {peak} MiB); stopping it",
            flush=True,
        )
        os._exit(3)
    print(f"tidy done: wall {done['wall']:.2f} s, CPU {done['cpu']:.2f} s")
    print(f"segments now {store.indexer.search.segment_count()}")
    status, seconds, _ = add(root, f"tidy lock note after at {time.time():.0f} about redis")
    print(f"add after it: rc={status} {seconds:.1f} s")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
