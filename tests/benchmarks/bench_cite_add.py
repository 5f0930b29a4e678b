#!/usr/bin/env python
"""What the citations an add records by itself cost it: add_cites per text, warm and cold.

A standalone script, not a pytest module:

    nice -n 10 .venv/bin/python tests/benchmarks/bench_cite_add.py [--repo PATH] [--rounds 200]

`--repo` is the git checkout the adds are made in (default: this checkout, whose source files
the texts name). For each text it prints the CPU time (time.process_time, not wall time: the
machine is shared) of `add_cites` with and without the automatic part, median of `--rounds`
calls in one process (warm: the tree-sitter grammar loaded), then the first call in a fresh
interpreter (cold: what a one-shot `memstore add` pays, grammar load included), and what an
in-process Store.add costs beside it in the same process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TEXTS = {
    "no code named": "staging deploys need approval from @maria before 5pm",
    "a path only": "the schema lives in docs/file-format.md; keep it in step with the codec",
    "path + symbol": "parse_spec in memstore/catalog/citing.py splits PATH:SYMBOL at the last colon",
    "symbol, big file": "chunk_source in memstore/catalog/chunking.py cuts long classes into members",
    "two files, names": (
        "merge_cites (memstore/core/citations.py) and merge_memory in memstore/core/merge.py "
        "must agree on the newer anchor"
    ),
    "names, no path": "CiteChecker.check caches by mtime_ns and size; explain is lazy",
    "missing path": "src/upload.py raises TooLarge in handle_upload",
}


def per_call(function, rounds: int) -> float:
    """Median CPU milliseconds of `function()` over `rounds` calls."""
    times = []
    for _ in range(rounds):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


# what the add path has imported before it looks for citations (memstore/ops/lean.py)
COLD = """
import sys, time
from pathlib import Path
from memstore.core.config import Settings
from memstore.core.model import GLOBAL
from memstore.core.repo_name import workspace_at
workspace_at(Path(sys.argv[1]), Path(sys.argv[2]))  # the add's workspace, detected first
start = time.process_time()
from memstore.ops.add_cites import add_cites
cites = add_cites(Path(sys.argv[1]), sys.argv[2], [], sys.argv[3])
print((time.process_time() - start) * 1000, len(cites))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    from memstore.catalog.citing import definitions
    from memstore.core.config import Settings
    from memstore.ops.add_cites import add_cites
    from memstore.service.store import Store
    from memstore.service.vault_init import init_vault

    with tempfile.TemporaryDirectory() as scratch:
        vault = Path(scratch) / "vault"
        settings = Settings(vault=vault, source="bench", session="bench", host="bench")
        init_vault(vault, settings)
        print(f"repository: {args.repo}; CPU ms, median of {args.rounds} calls")
        print(f"{'text':<18} {'cites':>5} {'auto warm':>10} {'off warm':>9} {'auto cold':>10}")
        for name, text in TEXTS.items():
            cites = add_cites(vault, args.repo, [], text)

            def auto(t: str = text) -> None:
                definitions.cache_clear()  # each call parses its files again, as each add does
                add_cites(vault, args.repo, [], t)

            warm = per_call(auto, args.rounds)
            off = per_call(
                lambda t=text: add_cites(vault, args.repo, [], t, auto=False), args.rounds
            )
            # as installed: bytecode compiled once (PYTHONDONTWRITEBYTECODE would compile each run)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            command = [sys.executable, "-c", COLD, str(vault), str(args.repo), text]
            for _ in range(2):
                done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            cold = done.stdout.split()
            print(f"{name:<18} {len(cites):>5} {warm:>10.3f} {off:>9.3f} {float(cold[0]):>10.2f}")
        with Store.open(settings) as store:
            texts = iter(range(10**6))
            add = per_call(
                lambda: store.add(f"benchmark memory number {next(texts)}", workspace="bench"),
                max(20, args.rounds // 10),
            )
        print(f"for scale: one in-process Store.add (no cites) {add:.2f} ms CPU")


if __name__ == "__main__":
    main()
