"""Recall's answers on a kept bench_scale vault, written as JSON to compare two codes: each
query's hits (id, score as hex, corrections), its message, the BM25 search's 30 best (key,
score as hex: every word, and any word) and, last, the hits' neighbours.

    PYTHONPATH=MAIN python tests/benchmarks/bench_recall_same.py --run RUN --size N --out a.json
    PYTHONPATH=BRANCH python tests/benchmarks/bench_recall_same.py --run RUN --size N --out b.json
    cmp a.json b.json   # or compare all but the neighbours (a change of rule changes those)

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
    from memstore.index import Query
    from memstore.service.store import Store
    from memstore.vault.files import Vault

    queries = bf.make_queries(items_of(args.size), 150, bf.SEED * 7 + args.size)
    root = args.run / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    store = Store(settings, Vault(root))
    out = []
    index = store.indexer.search
    for q in queries[: args.queries]:
        result = store.recall(q.text, workspace=None, k=5, catch_up=False, tiers=True)
        hits = [[h.id, h.score.hex(), list(h.superseded_by)] for h in result.hits]
        neighbours = [list(h.neighbors) for h in result.hits]
        # BM25 alone, as recall asks it: every word, and any word (its rarest), 30 best
        bm25 = [
            [[h.document.key, h.score.hex()] for h in index.search(Query.of(q.text), **how)]
            for how in ({"limit": 30, "typos": True}, {"limit": 30, "any_term": True})
        ]
        out.append([q.text, hits, str(result.message)[:200], bm25, neighbours])
    args.out.write_text(json.dumps(out, indent=0) + "\n", encoding="utf-8")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
