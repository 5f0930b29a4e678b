"""How soon a tier merge's build stops when its store closes, beside the whole build.

Builds (once, in FOLDER) an index of six segments of PER documents each, above the commits'
merge size: a tier due to merge (index/merging.py). Then, RUNS times interleaved: the whole
build of the merged segment by its helper process (wall, and the helper's CPU), and the same
build stopped 1 s in by a `Stopper` (what `Store.close` does to a background merge): how long
after the stop the build returned, and whether its folder was left.

    python tests/benchmarks/bench_merge_stop.py /tmp/merge-stop-ix --per 3000 --runs 2
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import threading
import time
from pathlib import Path

from memstore.index import SearchIndex, engine, merging
from memstore.index.parts import Stopper
from tests.index.test_pruning import _doc


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="the index (built here the first time)")
    parser.add_argument("--per", type=int, default=3000, help="documents per segment")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--stop-after", type=float, default=1.0, help="seconds into the build")
    args = parser.parse_args()
    engine.MERGE_MAX_DOCS = merging.MERGE_MAX_DOCS = 500  # the product's value, said here
    if not (args.folder / "whoosh").exists():
        built = SearchIndex.open(args.folder)
        rng = random.Random(1)
        for batch in range(merging.LARGE_TIER):
            built.apply([_doc(rng, batch * args.per + n) for n in range(args.per)])
        built.close()
    index = SearchIndex.open(args.folder, create=False)
    chosen = index.merge_plan()
    print(f"{index.segment_count()} segments, {len(chosen)} chosen to merge")
    for _ in range(args.runs):
        cpu, start = _children_cpu(), time.monotonic()
        whole = index.build_merge(chosen)
        assert whole is not None
        print(
            f"whole build: {time.monotonic() - start:.2f} s, helper CPU {_children_cpu() - cpu:.2f} s"
        )
        shutil.rmtree(whole.folder)
        stopper = Stopper()
        timer = threading.Timer(args.stop_after, stopper.stop)
        start = time.monotonic()
        timer.start()
        stopped = index.build_merge(chosen, stopper)
        after = time.monotonic() - start - args.stop_after
        left = [p.name for p in args.folder.glob("merging-*")]
        print(
            f"stopped {args.stop_after:.0f} s in: {stopped} {after * 1000:.0f} ms after the stop, left {left}"
        )
    index.close()


if __name__ == "__main__":
    main()
