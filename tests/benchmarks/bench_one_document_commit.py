"""What the index's commit of one new document costs (an add's), by how the segment is written.

Builds an index of `--base` generated documents in a scratch folder, then commits one new
document at a time through `SearchIndex.apply` (with an add's `limitmb`), alternating the
ways of writing it so each sees the same load: `disk` (the commit's temporary files in a
folder Whoosh makes and removes, as before the eighth session), `memory` (kept in memory:
bulk.TermWriter's `temp_in_memory`, what an add does now) and `memory, files` (also not
assembled into one compound file: measured, not adopted). CPU and wall ms, p50 / mean.

    python tests/benchmarks/bench_one_document_commit.py --base 2000 --commits 150
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_foundation as bf

from memstore.index import Document, SearchIndex, bulk

WAYS = {"disk": (False, True), "memory": (True, True), "memory, files": (True, False)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=150, help="of each way")
    args = parser.parse_args()
    corpus = bf.Corpus(seed=5)

    def document(n: int) -> Document:
        g = corpus.make()
        return Document(
            f"{g.workspace}/m-{n}.md", f"{n:08x}", g.workspace, "note", g.body, g.keywords
        )

    root = Path(tempfile.mkdtemp(prefix="bench-one-commit-"))
    index = SearchIndex.open(root / "index")
    index.apply([document(n) for n in range(args.base)])
    way = {"memory": True, "compound": True}
    made = bulk.TermWriter.__init__

    def init(self: Any, ix: Any, **kwargs: Any) -> None:
        kwargs["temp_in_memory"] = way["memory"] and kwargs.get("temp_in_memory", False)
        made(self, ix, compound=way["compound"], **kwargs)

    bulk.TermWriter.__init__ = init  # type: ignore[method-assign]
    timings: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in WAYS}
    n = args.base
    for _ in range(args.commits):
        for name, (memory, compound) in WAYS.items():
            way.update(memory=memory, compound=compound)
            doc = document(n)
            n += 1
            cpu, wall = time.process_time(), time.perf_counter()
            index.apply([doc], new={doc.key}, limitmb=64)  # an add's budget
            timings[name][0].append((time.process_time() - cpu) * 1000)
            timings[name][1].append((time.perf_counter() - wall) * 1000)
    index.close()
    shutil.rmtree(root, ignore_errors=True)
    print(f"{args.commits} one-document commits each, base {args.base:,}: CPU / wall ms")
    for name, (cpu_ms, wall_ms) in timings.items():
        print(
            f"  {name:14} CPU p50 {statistics.median(cpu_ms):5.2f} mean {statistics.mean(cpu_ms):5.2f}"
            f"   wall p50 {statistics.median(wall_ms):6.2f} mean {statistics.mean(wall_ms):6.2f}"
        )


if __name__ == "__main__":
    main()
