"""What checking a flat sidecar's term entries costs (index/flat.py `Sidecar._entry`), beside
the read it guards and Whoosh's decode of the same lists: CPU time in one process, each
large segment's every sidecar term read once checked, once as read alone, and by Whoosh.

    .venv/bin/python tests/benchmarks/bench_flat_check.py --docs 30000 --folder /tmp/fc

The index is built once in --folder (synthetic Zipf documents, tests/index/test_pruning.py)
and its sidecars written; later runs reuse it.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=30000, help="documents in the index")
    parser.add_argument("--folder", type=Path, required=True, help="where the index is kept")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the median is shown)")
    args = parser.parse_args()
    from memstore.index import SearchIndex, flat
    from tests.index.test_pruning import _doc

    root = args.folder / f"ix{args.docs}"
    if not root.exists():
        index = SearchIndex.open(root)
        rng = random.Random(1)
        index.apply(_doc(rng, n) for n in range(args.docs))
        index.close()
        flat.complete(root / "whoosh")
    index = SearchIndex.open(root, create=False)
    reader = index.reader.searcher().reader()
    for segment, _ in reader.leaf_readers():
        side = flat.of(segment)
        if side is not None:
            _measure(side, segment, args.rounds)
    index.close()


def _cpu(side: Any, read: Callable[[str, str], Any], *, fresh: bool) -> float:
    """CPU seconds of `read` over every term of the sidecar (its checks forgotten first)."""
    if fresh:
        side._checked.clear()
    started = time.process_time()
    for key in side.directory:
        read(*key)
    return time.process_time() - started


def _measure(side: Any, segment: Any, rounds: int) -> None:
    from memstore.index import postings

    def whoosh(fieldname: str, text: str) -> Any:
        return postings.whoosh_postings(segment, fieldname, text)

    rows: dict[str, list[float]] = {"check": [], "read": [], "whoosh": []}
    for _ in range(rounds):
        rows["check"].append(_cpu(side, side._entry, fresh=True))
        rows["read"].append(_cpu(side, side.postings, fresh=False))
        rows["whoosh"].append(_cpu(side, whoosh, fresh=False))
    count = sum(entry[1] for entry in side.directory.values())
    median = {name: sorted(v)[len(v) // 2] * 1e3 for name, v in rows.items()}
    print(
        f"segment of {segment.doc_count_all()} documents: {len(side.directory)} sidecar "
        f"terms, {count} postings; CPU ms (median of {rounds}): check {median['check']:.2f}, "
        f"read {median['read']:.2f}, Whoosh's decode {median['whoosh']:.1f}"
    )


if __name__ == "__main__":
    main()
