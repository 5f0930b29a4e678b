"""A session's first search when the 5-minute comparison of every file is due (issue 39).

A search without a watcher compares every file with the index once the last comparison is
5 minutes old (docs/search.md, rule 1), which a session's first search almost always
meets. One that will start the daemon leaves that comparison to the daemon and compares
only its hits' files. This runs the same search, on the same code and vault, round by
round: with `MEMSTORE_NO_DAEMON=1` (rule 1 as before: every file compared) and with daemons
allowed (the comparison left to the daemon the search starts), the last comparison made old
before each run (`full-at` 0 in the manifest) and any daemon stopped after it. Reports each
search process's CPU (user + system of the waited child; the daemon it starts is not
waited for, so not counted) and wall time.

    env -u PYTHONDONTWRITEBYTECODE python tests/benchmarks/bench_first_search_due.py \\
        --vault /tmp/defer/v --rounds 7
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run `memstore ARGS`; return its CPU and wall time in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "memstore", *args], env=env, cwd="/", capture_output=True, text=True
    )
    wall = (time.monotonic() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"memstore {' '.join(args)} failed: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return cpu, wall


def stop_daemon(vault: Path, env: dict[str, str]) -> None:
    """Stop the vault's daemon, and date its spawn mark back so the next search may start one."""
    from memstore.ops import client

    subprocess.run(
        [sys.executable, "-m", "memstore", "daemon", "--stop", "--vault", str(vault)],
        env=env,
        capture_output=True,
    )
    deadline = time.monotonic() + 30
    while client.is_running(vault) and time.monotonic() < deadline:
        time.sleep(0.05)
    mark = vault / ".memstore" / client.SPAWN_MARK
    if mark.exists():
        os.utime(mark, (0, 0))


def make_comparison_due(vault: Path) -> None:
    with sqlite3.connect(vault / ".memstore" / "index" / "manifest.sqlite") as db:
        db.execute("UPDATE meta SET value = '0' WHERE name = 'full-at'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--query", default="redis cache eviction")
    options = parser.parse_args()
    vault = options.vault.resolve()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTORE_")}
    args = ["search", options.query, "--vault", str(vault)]
    run(args, {**env, "MEMSTORE_NO_DAEMON": "1"})  # warm-up (a rebuild if the format changed)
    ways = {"no daemon (rule 1: every file compared)": {"MEMSTORE_NO_DAEMON": "1"}}
    ways["daemons allowed (comparison left to the daemon)"] = {}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for _ in range(options.rounds):
        for name, extra in ways.items():
            stop_daemon(vault, env)
            make_comparison_due(vault)
            figures[name].append(run(args, {**env, **extra}))
    stop_daemon(vault, env)
    for name, pairs in figures.items():
        cpu = [c for c, _ in pairs]
        wall = [w for _, w in pairs]
        print(
            f"{name}: CPU median {statistics.median(cpu):.0f} ms (min {min(cpu):.0f}, "
            f"max {max(cpu):.0f}), wall median {statistics.median(wall):.0f} ms"
        )


if __name__ == "__main__":
    main()
