"""Recall's answers on a kept bench_scale vault, written as JSON to compare two codes: each
query's hits (id, score to six decimals, neighbours, corrections) and its message.

    PYTHONPATH=MAIN python tests/benchmarks/bench_recall_same.py --run RUN --size N --out a.json
    PYTHONPATH=BRANCH python tests/benchmarks/bench_recall_same.py --run RUN --size N --out b.json
    cmp a.json b.json

Read-only (no recall counters are recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf
from bench_recall_scale import items_of


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="a kept bench_scale run folder")
    parser.add_argument("--size", type=int, required=True, help="the run's --sizes")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    os.environ["HOME"] = str(args.run / "home")
    from memstore.core.config import Settings
    from memstore.service.store import Store
    from memstore.vault.files import Vault

    queries = bf.make_queries(items_of(args.size), 150, bf.SEED * 7 + args.size)
    root = args.run / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    store = Store(settings, Vault(root))
    out = []
    for q in queries[: args.queries]:
        result = store.recall(q.text, workspace=None, k=5, catch_up=False, tiers=True)
        hits = [
            [h.id, round(h.score, 6), list(h.neighbors), list(h.superseded_by)] for h in result.hits
        ]
        out.append([q.text, hits, str(result.message)[:200]])
    args.out.write_text(json.dumps(out, indent=0) + "\n", encoding="utf-8")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
