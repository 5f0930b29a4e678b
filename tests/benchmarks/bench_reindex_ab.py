"""`memstore reindex` of one vault by two or more codes, alternated in one run (issue 39, reindex).

For each round and each `--code NAME=PATH` (PATH first on PYTHONPATH), in turn: a whole
`memstore reindex --quiet` of `--vault` (the daemon kept out), its wall time, the CPU of
the command and its helper processes (user + sys, from wait4) and its peak RSS, with the
1-minute load before and after. `--busy` keeps a core busy meanwhile (`python3 -c "while
True: pass"`, started from this process: the same session and autogroup as the rebuilds).
Give the vault's file count (`--files`) to print CPU per file.

    cd /tmp && python .../bench_reindex_ab.py --vault /tmp/lean-100k --files 100565 \\
        --code main=/tmp/reindex5-main --code branch=/tmp/reindex5-branch --rounds 2 [--busy]

Run it from outside a checkout (or `python -m memstore` imports the checkout it is run in).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def reindex(vault: str, code: str) -> tuple[float, float, int]:
    """Reindex `vault` with `code` first on PYTHONPATH; return wall, CPU (s) and peak RSS (MiB)."""
    env = {**os.environ, "PYTHONPATH": code, "MEMSTORE_NO_DAEMON": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "memstore", "reindex", "--vault", vault, "--quiet"], env=env
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"reindex with {code} failed ({status})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", required=True)
    parser.add_argument("--code", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--files", type=int, default=0, help="the vault's memories (µs a file)")
    parser.add_argument("--busy", action="store_true", help="keep a core busy meanwhile")
    args = parser.parse_args()
    codes = [spec.split("=", 1) for spec in args.code]
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        for number in range(1, args.rounds + 1):
            for name, path in codes:
                before = os.getloadavg()[0]
                wall, cpu, rss = reindex(args.vault, path)
                per_file = f", {cpu / args.files * 1e6:.0f} µs a file" if args.files else ""
                print(
                    f"round {number} {name}{' (a core busy)' if spinner else ''}: "
                    f"wall {wall:.1f} s, CPU {cpu:.1f} s{per_file}, peak RSS {rss} MiB, "
                    f"load {before:.1f}-{os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


if __name__ == "__main__":
    main()
