"""CPU time of the secret scan over the hand-written corpora, own and held-out: µs a memory.

Run one process per version, alternated, and compare (the scanner is the one first on the
path; main from a `git archive` put first on PYTHONPATH):

    for i in 1 2 3; do
        PYTHONPATH=/tmp/main python tests/benchmarks/bench_secret_scan_cpu.py
        python tests/benchmarks/bench_secret_scan_cpu.py
    done
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from memstore.core.secrets import find_secret_in_fields

DATA = Path(__file__).resolve().parents[1] / "data" / "secrets"
FILES = (
    "secrets",
    "benign",
    *(f"{k}-heldout{n}" for n in (2, 3, 4) for k in ("secrets", "benign")),
)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    items = []
    for name in FILES:
        items += [{x["field"]: x["value"]} for x in json.loads((DATA / f"{name}.json").read_text())]
    for fields in items[:50]:
        find_secret_in_fields(fields)  # warm: patterns compile on first use
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for fields in items:
            find_secret_in_fields(fields)
        best = min(best, (time.process_time() - started) / len(items) * 1e6)
    print(f"{len(items)} memories, best of 5: {best:.0f} µs CPU a memory")


if __name__ == "__main__":
    main()
