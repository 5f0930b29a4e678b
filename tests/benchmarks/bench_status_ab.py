#!/usr/bin/env python
"""A sync's status of every file alone, main vs branch alternated: CPU and wall at N.

    python tests/benchmarks/bench_status_ab.py VAULT main=/tmp/main-sources branch=$PWD --rounds 3

Each round runs `GitRepo.changed_paths()` (git's own status in a large vault, as sync asks
it) once per code, each in a process of its own with that code first on PYTHONPATH; CPU is
the process's and its git child's. Run it from outside the checkout (cd /tmp).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
from memstore.vault.git import GitRepo
repo = GitRepo.open(Path(sys.argv[1]))
repo.status_env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "")}
t0 = time.perf_counter()
paths = repo.changed_paths()
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "paths": len(paths)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("vault")
    parser.add_argument("code", nargs="+", metavar="NAME=DIR")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    codes = dict(c.split("=", 1) for c in args.code)
    for i in range(args.rounds):
        for name, sources in codes.items():
            env = {**os.environ, "PYTHONPATH": sources}
            load = os.getloadavg()[0]
            done = subprocess.run(
                [sys.executable, "-c", CHILD, args.vault],
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            figures = (
                json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-400:]}
            )
            print(json.dumps({"round": i + 1, "code": name, "load": round(load, 1), **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
