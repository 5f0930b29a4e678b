#!/usr/bin/env python
"""CPU (user + sys) of one in-process `memstore add` of an N KB text, after a warm-up add.

    PYTHONPATH=CODE python tests/benchmarks/bench_add_text_size.py 96 gizmo   # or prose

`gizmo` is h-trial13's text ('gizmo ' repeated: the secret scan's worst joins), `prose`
words and punctuation. A fresh vault in a temporary HOME, no daemon; alternate main and a
branch (`git archive` of each) and compare CPU, not wall time, on a busy machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import tempfile

TEXT = (
    "the cache warms from replica at boot; deploy steps: run make release, then tag v1.2.3 "
    "(see docs/ops.md) and retry"
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="CPU of one in-process memstore add of an N KB text, after a warm-up add.",
        epilog="example: PYTHONPATH=CODE python tests/benchmarks/bench_add_text_size.py 96 gizmo",
    )
    parser.add_argument("kb", type=int, help="the text's size in KB")
    parser.add_argument("shape", choices=("gizmo", "prose"), help="'gizmo ' repeated, or prose")
    args = parser.parse_args()
    kb, shape = args.kb, args.shape
    home = tempfile.mkdtemp(prefix="bench-add-size-")
    vault = os.path.join(home, "vault")
    os.environ.update(HOME=home, MEMSTORE_VAULT=vault, MEMSTORE_DAEMON="off")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        os.environ.pop(name, None)
    for key, value in (("user.name", "Bench"), ("user.email", "bench@example.com")):
        subprocess.run(["git", "config", "--global", key, value], check=True)
    from memstore import launcher

    def run(*args: str) -> None:
        sys.argv = ["memstore", *args]
        with contextlib.suppress(SystemExit):
            launcher.main()

    if shape == "gizmo":
        text = ("gizmo " * (kb * 1024 // 6 + 1))[: kb * 1024]
    else:
        rng, words = random.Random(kb), TEXT.split()
        text = " ".join(rng.choice(words) for _ in range(kb * 1024 // 5))[: kb * 1024]
    run("init", vault)
    run("add", "-w", "ws", "warm-up memory about the nginx upload limit")
    before = os.times()
    run("add", "-w", "ws", text)
    after = os.times()
    cpu = (after.user - before.user) + (after.system - before.system)
    print(f"{kb} KB {shape}: {cpu:.3f} s CPU", file=sys.stderr)


if __name__ == "__main__":
    main()
