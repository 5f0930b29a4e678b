#!/usr/bin/env python
"""What contradiction hints cost an add: `Store.add` p50/p95 and the hint step alone.

Two ways of adding, each `--adds` times on the same vault of `--memories` generated
memories (the corpus of bench_foundation.py, built once under `--root` and reused):

- *back to back*: add after add, nothing in between. Every add changes the index, so the
  hint's search opens a new searcher each time (the worst case);
- *after a recall*: a recall of the memory's first sentence before each add, as an agent
  recalls before it stores (the searcher is current; the hint pays for its query alone).

The hint step is `Store._contradicted`, timed by a wrapper when the code has it. To compare
with code before the hints, run the same command with that code first on sys.path, from
outside the checkout:

    python tests/benchmarks/bench_hint_cost.py --memories 3000 --adds 60 --root /tmp/hints
    git archive HEAD memstore index | tar -x -C /tmp/head
    cd /tmp && PYTHONPATH=/tmp/head:/work/main python /work/main/tests/benchmarks/bench_hint_cost.py \\
        --memories 3000 --adds 60 --root /tmp/hints
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import memstore
from memstore.core.config import Settings
from memstore.service.store import Store
from tests.benchmarks.bench_foundation import Corpus
from tests.service.test_curation_scale import large_vault

WARM_UP = 5  # adds left out of the figures (first index reads, caches)


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
    }


def measure(vault: Path, adds: int, *, recall_first: bool, seed: int) -> dict[str, Any]:
    """Time `adds` new memories added to `vault`, each after a recall when `recall_first`."""
    spent: list[float] = []
    counting = False  # past the warm-up
    # The step's owner: the store's writer part (issue 37), else the store itself.
    try:
        owner = importlib.import_module("memstore.service.writer").Writer
    except ImportError:
        owner = Store
    inner = getattr(owner, "_contradicted", None)
    if inner is not None:

        def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(self, *args, **kwargs)
            finally:
                if counting:
                    spent.append(time.perf_counter() - start)

        owner._contradicted = timed
    corpus, tag = Corpus(seed), uuid.uuid4().hex[:6]  # new texts every run: no duplicates
    made = [corpus.make() for _ in range(adds + WARM_UP)]
    times: list[float] = []
    hinted = 0
    settings = Settings(vault=vault, source="bench", session="bench", host="bench")
    try:
        with Store.open(settings) as store:
            store.catch_up()
            for i, generated in enumerate(made):
                counting = i >= WARM_UP
                if recall_first:
                    first = generated.body.split(".")[0]
                    store.recall(first, workspace=generated.workspace, k=5)
                start = time.perf_counter()
                result = store.add(f"{generated.body} ({tag} {i})", workspace=generated.workspace)
                if i >= WARM_UP:
                    times.append(time.perf_counter() - start)
                    hinted += bool(getattr(result, "contradicts", ()))
    finally:
        if inner is not None:
            owner._contradicted = inner
    figures: dict[str, Any] = {"add": _ms(times), "adds_with_a_hint": hinted}
    if spent:  # traces skip the step: fewer than the adds
        figures["hint_step"] = _ms(spent)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description="Time Store.add with and without hints.")
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--adds", type=int, default=60)
    parser.add_argument("--root", type=Path, default=Path("/tmp/memstore-hints"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    vault = args.root / f"v{args.memories}"
    if not vault.exists():
        args.root.mkdir(parents=True, exist_ok=True)
        large_vault(vault, args.memories)
    code = Path(memstore.__file__).resolve().parent
    for recall_first in (False, True):
        figures = measure(vault, args.adds, recall_first=recall_first, seed=args.seed)
        way = "after a recall" if recall_first else "back to back"
        print(json.dumps({"code": str(code), "memories": args.memories, "way": way, **figures}))


if __name__ == "__main__":
    main()
