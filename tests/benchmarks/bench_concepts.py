#!/usr/bin/env python
"""Concept expansion measured on every recall set in one process, one row per setting.

A standalone script, not a pytest module (docs/retrieval.md, "Concepts"):

    python tests/benchmarks/bench_concepts.py                       # off (before) and in use
    python tests/benchmarks/bench_concepts.py --locomo dev,test     # LoCoMo splits too
    python tests/benchmarks/bench_concepts.py --setting memstore.catalog.retrieval.CONCEPT_BOOST=0.5

Each row sets its NAME=VALUE constants in-process (the first row, "off", sets
CONCEPT_BOOST=0: no concept is searched), then runs `memstore eval`'s fixture (recall@1,
the paraphrase class, MRR@5, confident & correct first hits, off-corpus silence), the
held-out check (tests/data/recall-heldout.json), the multilingual fixture, the prompt-hook
benchmark (precision, answered, silent, stale) and, with --locomo, LoCoMo categories 1-4
(R@1, R@10, MRR; vaults built once under --vaults).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bench_hook
from bench_locomo import DEFAULT_DATA, DEV, TEST
from bench_locomo_knobs import locomo, set_constants

from memstore.cli.evaluation import DEFAULT_FIXTURE, evaluate, load_fixture

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = {
    "eval": DEFAULT_FIXTURE,
    "held-out": DATA / "recall-heldout.json",
    "multilingual": DATA / "multilingual-recall.json",
}
OFF = "memstore.catalog.retrieval.CONCEPT_BOOST=0"
DEFAULTS: dict[str, object] = {}


def fixture_line(name: str, path: Path) -> str:
    report = evaluate(load_fixture(path))
    paraphrases = [q for q in report.queries if "paraphrase" in q.tags]
    first = sum(1 for q in paraphrases if q.rank == 1) / max(len(paraphrases), 1)
    missed = [q.id for q in report.queries if q.relevant and q.rank != 1]
    return (
        f"  {name}: recall@1 {report.recall_at_1:.3f}, paraphrase {first:.2f}, "
        f"MRR@5 {report.mrr_at_5:.3f}, confident & correct {report.confident_correct_first:.3f}, "
        f"off-corpus silent {report.off_corpus_no_confident:.3f}; not first: {' '.join(missed)}"
    )


def hook_line() -> str:
    by_vault = bench_hook.run(bench_hook.VAULTS)
    found = [o for outcomes in by_vault.values() for o in outcomes]
    f = bench_hook.summarize(found)
    return (
        f"  hook: precision {f['precision']:.3f}, answered {f['answered']:.3f}, "
        f"silent {f['silent']:.3f}, stale {f['superseded_without_correction']} "
        f"({f['injected']} injected, {f['wrong']} wrong)"
    )


def timing_line(vault: Path, rounds: int = 3) -> str:
    """CPU ms per recall (p50 / p95) on `vault` (bench_read_path.py build|reindex) of the
    eval fixture's and the hook benchmark's texts: prompts that name concepts."""
    from memstore.core.config import Settings
    from memstore.service.store import Store

    texts = [q["text"] for q in load_fixture(DEFAULT_FIXTURE)["queries"]]
    texts += [p.text for p in bench_hook.load_prompts()]
    settings = Settings(vault=vault, source="bench", session="bench", host="bench")
    times: list[float] = []
    with Store.open(settings) as store:
        for text in texts:  # warm the caches once
            store.recall(text, workspace=None, k=5, catch_up=False)
        for _ in range(rounds):
            for text in texts:
                started = time.process_time()
                store.recall(text, workspace=None, k=5, catch_up=False)
                times.append(1000 * (time.process_time() - started))
    times.sort()
    return (
        f"  recall at {vault.name}: {len(texts)} texts x {rounds}, CPU p50 "
        f"{times[len(times) // 2]:.2f} ms, p95 {times[int(0.95 * len(times))]:.2f} ms"
    )


def remember_defaults(settings: list[list[str]]) -> None:
    import importlib

    for assignment in (a for row in settings for a in row):
        name = assignment.split("=", 1)[0]
        module, attribute = name.rsplit(".", 1)
        DEFAULTS.setdefault(name, getattr(importlib.import_module(module), attribute))


def restore_defaults() -> None:
    set_constants([f"{name}={value!r}" for name, value in DEFAULTS.items()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", action="append", default=[], help="NAME=VALUE[,NAME=VALUE]")
    parser.add_argument("--locomo", default="", help="dev, test or dev,test")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--vaults", type=Path, default=Path("/tmp/memstore-locomo-vaults"))
    parser.add_argument("--no-hook", action="store_true")
    parser.add_argument("--no-fixtures", action="store_true")
    parser.add_argument("--timing", type=Path, help="a vault of bench_read_path.py to time")
    args = parser.parse_args(argv)
    rows = [[OFF], [], *([s for s in a.split(",") if s] for a in args.setting)]
    remember_defaults(rows)
    args.vaults.mkdir(parents=True, exist_ok=True)
    for row in rows:
        restore_defaults()
        set_constants(row)
        print(" ".join(row) or "in use", flush=True)
        for name, path in FIXTURES.items() if not args.no_fixtures else ():
            print(fixture_line(name, path), flush=True)
        if args.timing:
            print(timing_line(args.timing), flush=True)
        if not args.no_hook:
            print(hook_line(), flush=True)
        for split in (s for s in args.locomo.split(",") if s):
            print("  " + locomo(args.data, DEV if split == "dev" else TEST, args.vaults, ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
