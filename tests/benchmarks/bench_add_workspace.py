"""CPU per call of an add's workspace choice from a folder: `workspace_at` (what an add
called before it checked for another vault) beside `ops.lean.add_workspace` (which also
refuses a folder of another vault), alternated in one process, three rounds.

    python tests/benchmarks/bench_add_workspace.py --vault ~/memstore --cwd ~/code/shop/src
"""

from __future__ import annotations

import argparse
import resource
from collections.abc import Callable
from pathlib import Path

from memstore.core.repo_name import workspace_at
from memstore.ops.lean import add_workspace


def cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True, help="the vault in use")
    parser.add_argument("--cwd", type=Path, required=True, help="the folder an add runs in")
    parser.add_argument("--calls", type=int, default=5000, help="calls per round and path")
    args = parser.parse_args()
    vault, cwd = args.vault.expanduser(), args.cwd.expanduser()
    paths: dict[str, Callable[[], object]] = {
        "workspace_at (before)": lambda: workspace_at(vault, cwd) or "global",
        "add_workspace (now)": lambda: add_workspace(vault, cwd, None),
    }
    for round_ in range(3):
        for name, call in paths.items():
            start = cpu_s()
            for _ in range(args.calls):
                call()
            print(f"round {round_} {name}: {(cpu_s() - start) / args.calls * 1e6:.1f} µs CPU")


if __name__ == "__main__":
    main()
