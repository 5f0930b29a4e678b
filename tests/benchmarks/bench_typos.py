#!/usr/bin/env python
"""What typo tolerance costs a recall, on a vault built by bench_read_path.py.

A standalone script (nothing here is named test_*):

    python tests/benchmarks/bench_read_path.py build /tmp/v100k 100000   # once
    python tests/benchmarks/bench_read_path.py reindex /tmp/v100k
    python tests/benchmarks/bench_typos.py /tmp/v100k
    PYTHONPATH=<checkout before> python tests/benchmarks/bench_typos.py /tmp/v100k

It times `Store.recall` (workspace all, k 5, no catch-up, after one pass to warm up) on
300 queries of bench_foundation's mix (`make_queries`, seed+1), split into those whose
terms every one some memory holds and those with a term no memory holds (the mix has
made-up words); then on 100 of its vocabulary queries with one word misspelled (two inner
letters swapped), each paired with the same query spelled right: the stand-in caches are
emptied before each misspelled query, so its time includes finding the stand-in. Times
are CPU milliseconds of this process (other work on a shared machine moves wall time ±50%).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_foundation import SEED, Corpus, make_queries

from memstore.core.config import Settings
from memstore.index import terms
from memstore.service.store import Store

ITEMS = 5000  # the first memories the vault was built from: queries pick words from them


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def line(label: str, values: list[float]) -> str:
    return (
        f"{label:44s} n={len(values):3d}  p50 {statistics.median(values):6.1f} CPU-ms"
        f"  p95 {pct(values, 0.95):6.1f}"
    )


def misspell(text: str, rng: random.Random) -> tuple[str, str, str] | None:
    """Return `text` with one word of 6+ letters misspelled (two inner letters swapped),
    `text` itself and the word."""
    words = text.split()
    long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if not long:
        return None
    i = rng.choice(long)
    word = words[i]
    at = rng.randrange(1, len(word) - 2)
    if word[at] == word[at + 1]:
        return None
    typo = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return " ".join([*words[:i], typo, *words[i + 1 :]]), text, word


def forget_stand_ins(store: Store) -> None:
    """Empty the stand-in caches (absent before typo tolerance)."""
    index = store.indexer.search
    if hasattr(index, "_stand_ins"):
        index._stand_ins.clear()
        from memstore.index.typos import automaton

        automaton.cache_clear()


def timed(store: Store, text: str) -> float:
    """Return the CPU milliseconds of one recall (the machine is shared: wall time wanders)."""
    start = time.process_time()
    store.recall(text, workspace=None, k=5, catch_up=False)
    return 1000 * (time.process_time() - start)


def arguments() -> argparse.Namespace:
    """Read the command line (`--help` prints the module's text)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("vault", type=Path, help="a vault bench_read_path.py built")
    return parser.parse_args()


def main() -> None:
    root = arguments().vault
    corpus = Corpus(SEED)
    items = [corpus.make() for _ in range(ITEMS)]
    queries = [q.text for q in make_queries(items, 300, SEED + 1)]
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    with Store.open(settings) as store:
        store.catch_up()
        index = store.indexer.search
        print(f"{index.count()} memories")
        for text in queries:
            timed(store, text)
        known = [t for t in queries if not index.unknown_terms(t)]
        unknown = [t for t in queries if index.unknown_terms(t)]
        print(line("mix, every term known", [timed(store, t) for t in known]))
        print(line("mix, a term no memory holds (warm caches)", [timed(store, t) for t in unknown]))
        rng = random.Random(SEED)
        pairs = [p for p in (misspell(t, rng) for t in queries) if p][:100]
        right, wrong, fixed, mistaken = [], [], 0, 0
        for typo_text, original, word in pairs:
            right.append(timed(store, original))
            forget_stand_ins(store)
            wrong.append(timed(store, typo_text))
            if hasattr(index, "stand_ins"):
                meant = terms(word)  # its stem: the stand-in is a term of the index
                found = [s for s in index.stand_ins(typo_text) if s.word not in original]
                fixed += any(s.stand_in_term in meant for s in found)
                mistaken += any(s.stand_in_term not in meant for s in found)
        print(line("spelled right", right))
        print(line("one word misspelled, stand-in not cached", wrong))
        added = [w - r for w, r in zip(wrong, right, strict=True)]
        print(line("added by the misspelling (paired)", added))
        print(
            f"misspelled word stood in for by the word meant: {fixed}/{len(pairs)}, "
            f"by another word: {mistaken}/{len(pairs)}"
        )


if __name__ == "__main__":
    main()
