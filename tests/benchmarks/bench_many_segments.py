"""A tie of 40,000 documents and typo walks over 40 segments: recall's costs that grow with
a million-memory index's size and segment count, measured without one (issue 39, part 5).

    python tests/benchmarks/bench_many_segments.py --index /tmp/many-segments/ix --build
    PYTHONPATH=/tmp/main-sources python tests/benchmarks/bench_many_segments.py --index /tmp/many-segments/ix

`--build` writes 40 segments of 1,000 documents (one commit each): every document holds
"the retry budget" and six random words. The search part prints the CPU of three searches
of the tie (limit 30) and of three unknown words' typo walks (80 term tables), and the
first keys found, to compare two checkouts on one index.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from memstore.index import Document, SearchIndex

LETTERS = "abcdefgilmnoprstu"
UNKNOWN = ("bldgetprsaxx", "mopsaltirex", "gratulopsis")


def build(root: Path) -> None:
    rng = random.Random(7)
    index = SearchIndex.open(root)
    numbers = list(range(40_000))
    rng.shuffle(numbers)
    for start in range(0, 40_000, 1_000):
        index.apply(
            [
                Document(
                    f"ws/{n:06d}.md",
                    f"{n:08x}",
                    "ws",
                    "note",
                    "the retry budget "
                    + " ".join(
                        "".join(rng.choice(LETTERS) for _ in range(rng.randint(5, 12)))
                        for _ in range(6)
                    ),
                )
                for n in numbers[start : start + 1_000]
            ]
        )
    index.close()


def measure(root: Path) -> None:
    index = SearchIndex.open(root)
    print("segments", len(index.reader.searcher().reader().leaf_readers()))
    for label, texts in (("tie of 40,000", ["retry budget"] * 3), ("typo walk", list(UNKNOWN))):
        times, keys = [], []
        for text in texts:
            started = time.process_time()
            hits = index.search(text, limit=30, typos=True)
            times.append(round((time.process_time() - started) * 1000, 1))
            keys = [h.document.key for h in hits[:3]]
        print(f"{label}: CPU ms {times}, first keys {keys}")
    index.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--build", action="store_true")
    args = parser.parse_args()
    if args.build:
        build(args.index)
    else:
        measure(args.index)
    return 0


if __name__ == "__main__":
    sys.exit(main())
