#!/usr/bin/env python
"""LoCoMo with ranking constants changed in-process: one split, categories 1-4, R@k and MRR.

A standalone script, not a pytest module, for measuring one knob at a time (docs/retrieval.md):

    python tests/benchmarks/bench_locomo_knobs.py                                  # in use
    python tests/benchmarks/bench_locomo_knobs.py memstore.index.reader.BM25_B=0.4
    python tests/benchmarks/bench_locomo_knobs.py --semantic --fixture memstore.catalog.retrieval.SEMANTIC_HEAD=1

Each NAME=VALUE sets a module constant (a Python literal) before any store opens. The
conversations' vaults are built once under --vaults and reused (delete the folder after a
change to how memories are written; --no-sessions builds its own, conv<N>-plain). Tune on the dev split (0-5) only; --split test is the
held-out check. --fixture also runs `memstore eval`'s fixture with the same constants
(recall@1, the paraphrase class, off-corpus silence); --semantic turns the semantic view on
for both (needs the extra).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import sys
import time
from pathlib import Path

from bench_locomo import (
    DEFAULT_DATA,
    DEV,
    TEST,
    build_vault,
    clean_evidence,
    mean,
    measure,
    turns,
    written,
)

from memstore.core.config import SEMANTIC_ON, Settings
from memstore.service.store import Store


def set_constants(assignments: list[str]) -> None:
    for assignment in assignments:
        name, value = assignment.split("=", 1)
        module, attribute = name.rsplit(".", 1)
        loaded = importlib.import_module(module)
        if not hasattr(loaded, attribute):
            raise SystemExit(f"{module} has no {attribute}")
        setattr(loaded, attribute, ast.literal_eval(value))


def locomo(data: Path, split: range, vaults: Path, semantic: str, sessions: bool) -> str:
    samples = json.loads(data.read_text(encoding="utf-8"))
    rows, cpu = [], 0.0
    for number in split:
        items = turns(samples[number]["conversation"])
        known = {dia for dia, _ in items}
        name = f"conv{number}" if sessions else f"conv{number}-plain"
        root, ids = vaults / name, vaults / f"{name}.json"
        settings = Settings(vault=root, source="locomo", session="locomo", host="bench")
        if not ids.exists():
            said = {d: when for d, _, when in written(samples[number]["conversation"])}
            by_id = build_vault(root, items, said if sessions else None)
            ids.write_text(json.dumps(by_id), encoding="utf-8")
            with Store.open(settings) as store:
                store.reindex()
        by_id = json.loads(ids.read_text(encoding="utf-8"))
        settings = Settings(
            vault=root, source="locomo", session="locomo", host="bench", semantic=semantic
        )
        with Store.open(settings) as store:
            for qa in samples[number]["qa"]:
                relevant, _ = clean_evidence(qa.get("evidence", []), known)
                if not relevant or qa["category"] == 5:
                    continue
                started = time.process_time()
                hits = store.search(qa["question"], workspace=None, k=20, catch_up=False).hits
                cpu += time.process_time() - started
                rows.append(measure([by_id[h.id] for h in hits], relevant))
    m = mean(rows)
    return (
        f"LoCoMo {split.start}-{split.stop - 1} cat 1-4 n={len(rows)}: "
        + " ".join(f"{k} {m[k]:.3f}" for k in ("r@1", "r@5", "r@10", "r@20", "mrr"))
        + f"; CPU {1000 * cpu / len(rows):.1f} ms a search"
    )


def fixture(semantic: str) -> str:
    from memstore.cli.evaluation import DEFAULT_FIXTURE, evaluate, load_fixture

    report = evaluate(load_fixture(DEFAULT_FIXTURE), semantic=semantic)
    paraphrases = [q for q in report.queries if "paraphrase" in q.tags]
    first = sum(1 for q in paraphrases if q.rank == 1) / len(paraphrases)
    return (
        f"fixture: recall@1 {report.recall_at_1:.3f}, paraphrase {first:.2f}, "
        f"MRR@5 {report.mrr_at_5:.3f}, off-corpus silent {report.off_corpus_no_confident:.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("constants", nargs="*", metavar="NAME=VALUE")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--vaults", type=Path, default=Path("/tmp/memstore-locomo-vaults"))
    parser.add_argument("--semantic", action="store_true", help="the semantic view on")
    parser.add_argument("--fixture", action="store_true", help="the eval fixture too")
    parser.add_argument(
        "--no-sessions",
        action="store_true",
        help="turns record no session and one date (as before the eighth session)",
    )
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"no LoCoMo data at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    set_constants(args.constants)
    semantic = SEMANTIC_ON if args.semantic else ""
    args.vaults.mkdir(parents=True, exist_ok=True)
    print(" ".join(args.constants) or "constants in use")
    split = DEV if args.split == "dev" else TEST
    print(locomo(args.data, split, args.vaults, semantic, not args.no_sessions))
    if args.fixture:
        print(fixture(semantic))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
