#!/usr/bin/env python
"""Does the semantic view help? Lexical recall beside lexical + vector fusion, in one run.

A standalone script, not a pytest module (needs the `semantic` extra: `pip install '.[semantic]'`):

    python tests/benchmarks/bench_semantic.py [--model PATH] [--json out.json]
    python tests/benchmarks/bench_semantic.py --split test   # LoCoMo 6-9: once, at the end

The lexical ranking is Store.search's (nothing of store.py or retrieval.py changes); the
vector ranking is memstore/catalog/semantic.py's over the same vault. Fusions, each cut to the
same k as the lexical reference:

  rrf K w      1/(K + lexical rank) + w/(K + vector rank), hits in any order;
  tiered K w   the same, but lexical hits that are confident stay first;
  fallback     lexical as it is when it has a confident hit, else `tiered 60 1`.

  memstore     what memstore itself answers with the view on (MEMSTORE_SEMANTIC=on: its
               own vectors under .memstore/, its own fusion, retrieval.fuse_similar), so
               the shipped code is measured, not only this script's model of it.

A hit is confident only when the lexical tiers say so (the vector view adds weak hits).
Reported: per fixture class recall@1 and the confident-and-correct share, off-corpus
queries with no confident hit, LoCoMo R@k per split (0-5 dev; 6-9 held out), embedding ms
per memory, and the vector view's added time per recall at `--scale` memories.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_foundation import SEED, Corpus, make_queries, pct, write_vault
from bench_locomo import DEFAULT_DATA, DEV, TEST, build_vault, clean_evidence, mean, measure, turns

from memstore.catalog import semantic
from memstore.cli.evaluation import DEFAULT_FIXTURE, EPOCH, WORKSPACE, _Clock, _load_corpus
from memstore.core.config import SEMANTIC_ON, Settings
from memstore.core.model import GLOBAL
from memstore.service.store import Store

Ranked = list[tuple[str, bool]]  # (memory id, confident), best first
DEPTH = 20  # candidates taken from each view before fusing
STRATEGIES = (
    "rrf 60 1",
    "tiered 60 1",
    "tiered 60 0.5",
    "tiered 60 0.25",
    "tiered 10 1",
    "fallback",
)


def fuse(
    lexical: Ranked,
    vector: Sequence[str],
    strategy: str,
    corrections: dict[str, list[str]] | None = None,
) -> Ranked:
    """Rank by reciprocal-rank fusion of the two lists (see the module docstring); a
    memory another corrects goes just below its correction again (recall's step 8)."""
    if strategy == "lexical":
        return lexical
    if strategy == "fallback":
        if any(confident for _, confident in lexical):
            return lexical
        strategy = "tiered 60 1"
    return below_corrections(_rrf(lexical, vector, strategy), corrections or {})


def below_corrections(ranked: Ranked, corrections: dict[str, list[str]]) -> Ranked:
    """Move each memory that a listed memory corrects to just below that correction."""
    present = {i for i, _ in ranked}
    out: Ranked = []
    emitted: set[str] = set()
    waiting: dict[str, Ranked] = {}

    def emit(item: tuple[str, bool]) -> None:
        out.append(item)
        emitted.add(item[0])
        for held in waiting.pop(item[0], []):
            emit(held)

    for item in ranked:
        pending = [c for c in corrections.get(item[0], []) if c in present and c not in emitted]
        if pending:
            waiting.setdefault(pending[0], []).append(item)
        else:
            emit(item)
    for held in waiting.values():
        out.extend(held)
    return out


def _rrf(lexical: Ranked, vector: Sequence[str], strategy: str) -> Ranked:
    kind, k, weight = strategy.split()
    rrf_k, w = float(k), float(weight)
    confident = dict(lexical)
    lex_rank = {i: r for r, (i, _) in enumerate(lexical, 1)}
    vec_rank = {i: r for r, i in enumerate(vector, 1)}
    score: dict[str, float] = {}
    for i, r in lex_rank.items():
        score[i] = 1 / (rrf_k + r)
    for i, r in vec_rank.items():
        score[i] = score.get(i, 0.0) + w / (rrf_k + r)

    def order(i: str) -> tuple[bool, float, int]:
        tier = kind == "tiered" and not confident.get(i, False)
        return (tier, -score[i], lex_rank.get(i, 10**6))

    return [(i, confident.get(i, False)) for i in sorted(score, key=order)]


def vector_index(store: Store, folder: Path, embedder: semantic.Embedder) -> semantic.VectorIndex:
    index = semantic.VectorIndex.open(folder, embedder)
    memories = {e.path: (e.hash, e.workspace) for e in store.indexer.entries()}
    index.sync(memories, lambda path: store.vault.read(path).body)
    return index


def single_embed_ms(
    embedder: semantic.Embedder, texts: Sequence[str], rounds: int = 3
) -> dict[str, dict[str, float]]:
    """Embed each text alone, as an add does: wall and CPU ms (CPU minds other load less)."""
    wall, cpu = [], []
    with semantic._one_blas_thread():
        for _ in range(rounds):
            for text in texts:
                started, cpu_started = time.perf_counter(), time.thread_time()
                embedder.embed([text])
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.thread_time() - cpu_started) * 1000)
    return {"wall": stats(wall), "cpu": stats(cpu)}


def stats(values: Sequence[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(pct(values, 50), 2), "p95": round(pct(values, 95), 2)}


# --- the eval fixture ----------------------------------------------------------------------


def turned_on(store: Store, choice: str) -> Store:
    """The same store, answering as it does with MEMSTORE_SEMANTIC on (or this model)."""
    store.settings = replace(store.settings, semantic=choice)
    return store


def run_fixture(
    embedder: semantic.Embedder, fixture_path: Path, tmp: Path, choice: str
) -> dict[str, Any]:
    fixture = json.loads(fixture_path.read_text(encoding="utf-8"))
    clock = _Clock()
    settings = Settings(vault=tmp / "eval", source="eval", session="eval", host="eval")
    with Store.open(settings, create=True, clock=clock) as store:
        to_fixture = _load_corpus(store, fixture["corpus"], clock)
        clock.now = EPOCH
        path_to_id = {e.path: to_fixture.get(e.id, e.id) for e in store.indexer.entries()}
        corrections: dict[str, list[str]] = {}
        for entry in store.indexer.entries():
            for old in entry.supersedes:
                corrections.setdefault(to_fixture.get(old, old), []).append(
                    to_fixture.get(entry.id, entry.id)
                )
        index = vector_index(store, tmp / "eval-vectors", embedder)
        embed_ms = single_embed_ms(embedder, [m["content"] for m in fixture["corpus"]])
        rows, vector_ms, top_cos = [], [], []
        for query in fixture["queries"]:
            reference = store.search(query["text"], workspace=WORKSPACE, k=5, catch_up=False)
            deep = store.search(query["text"], workspace=WORKSPACE, k=DEPTH, catch_up=False)
            started = time.perf_counter()
            found = index.hits(query["text"], DEPTH, {WORKSPACE, GLOBAL})
            vector_ms.append((time.perf_counter() - started) * 1000)
            vector = [path_to_id[path] for path, _ in found]
            top_cos.append((bool(query.get("relevant")), found[0][1] if found else 0.0))
            lexical = [(to_fixture.get(h.id, h.id), not h.weak) for h in deep.hits]
            ranked = {"lexical": [(to_fixture.get(h.id, h.id), not h.weak) for h in reference.hits]}
            ranked["vector only"] = [(i, False) for i in vector]
            for strategy in STRATEGIES:
                ranked[strategy] = fuse(lexical, vector, strategy, corrections)
            settings = store.settings
            product = turned_on(store, choice).search(
                query["text"], workspace=WORKSPACE, k=5, catch_up=False
            )
            store.settings = settings
            ranked["memstore"] = [(to_fixture.get(h.id, h.id), not h.weak) for h in product.hits]
            rows.append((query, {name: r[:5] for name, r in ranked.items()}))
    return {
        "strategies": {name: fixture_scores(rows, name) for name in rows[0][1]},
        "embed_ms_per_memory": embed_ms,
        "vector_view_ms_per_query": stats(vector_ms),
        "top_cosine": cosine_split(top_cos),
        "queries": [
            {
                "id": q["id"],
                "tags": q.get("tags", []),
                "rank": {n: first(q, r) for n, r in by.items()},
            }
            for q, by in rows
        ],
    }


def first(query: dict[str, Any], ranked: Ranked) -> int | None:
    """1-based rank of the first relevant memory (None: not in the list, or off-corpus)."""
    return next((n for n, (i, _) in enumerate(ranked, 1) if i in query.get("relevant", [])), None)


def fixture_scores(
    rows: list[tuple[dict[str, Any], dict[str, Ranked]]], name: str
) -> dict[str, Any]:
    def summary(items: list[tuple[dict[str, Any], Ranked]]) -> dict[str, Any]:
        ranks = [first(q, r) for q, r in items]
        return {
            "n": len(items),
            "r@1": round(sum(1 for x in ranks if x == 1) / len(items), 3),
            "r@5": round(sum(1 for x in ranks if x) / len(items), 3),
            "mrr@5": round(sum(1 / x for x in ranks if x) / len(items), 3),
            "confident_correct": round(
                sum(1 for (q, r), x in zip(items, ranks, strict=True) if x == 1 and r[0][1])
                / len(items),
                3,
            ),
        }

    answerable = [(q, r[name]) for q, r in rows if q.get("relevant")]
    off = [r[name] for q, r in rows if not q.get("relevant")]
    tags = sorted({t for q, _ in answerable for t in q.get("tags", [])})
    return {
        "all": summary(answerable),
        "by_class": {
            t: summary([(q, r) for q, r in answerable if t in q.get("tags", [])]) for t in tags
        },
        "off_corpus_no_confident": round(
            sum(1 for r in off if not any(c for _, c in r)) / len(off), 3
        ),
    }


def cosine_split(pairs: list[tuple[bool, float]]) -> dict[str, Any]:
    """Top vector cosine for answerable vs off-corpus queries: can it tell them apart?"""
    ans = [c for a, c in pairs if a]
    off = [c for a, c in pairs if not a]
    return {
        "answerable_p10_p50": [round(pct(ans, 10), 3), round(pct(ans, 50), 3)],
        "off_corpus_p50_p90": [round(pct(off, 50), 3), round(pct(off, 90), 3)],
    }


# --- LoCoMo --------------------------------------------------------------------------------


def run_locomo(
    embedder: semantic.Embedder, data: Path, split: range, tmp: Path, choice: str
) -> dict[str, Any]:
    samples = json.loads(data.read_text(encoding="utf-8"))
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    vector_ms: list[float] = []
    for number in split:
        items = turns(samples[number]["conversation"])
        known = {dia for dia, _ in items}
        root = tmp / f"conv{number}"
        by_id = build_vault(root, items)
        settings = Settings(vault=root, source="locomo", session="locomo", host="bench")
        with Store.open(settings) as store:
            store.reindex()
            by_path = {e.path: by_id[e.id] for e in store.indexer.entries()}
            index = vector_index(store, tmp / f"conv{number}-vectors", embedder)
            for qa in samples[number]["qa"]:
                relevant, _ = clean_evidence(qa.get("evidence", []), known)
                if not relevant:
                    continue
                group = "cat 5" if qa["category"] == 5 else "cat 1-4"
                hits = store.search(qa["question"], workspace=None, k=DEPTH, catch_up=False).hits
                started = time.perf_counter()
                found = index.hits(qa["question"], DEPTH)
                vector_ms.append((time.perf_counter() - started) * 1000)
                lexical = [(by_id[h.id], not h.weak) for h in hits]
                vector = [by_path[path] for path, _ in found]
                for name in ("lexical", "vector only", *STRATEGIES):
                    if name == "vector only":
                        ranked = vector
                    else:
                        ranked = [i for i, _ in fuse(lexical, vector, name)]
                    rows.setdefault((name, group), []).append(measure(ranked[:DEPTH], relevant))
                settings = store.settings
                product = turned_on(store, choice).search(
                    qa["question"], workspace=None, k=DEPTH, catch_up=False
                )
                store.settings = settings
                ranked = [by_id[h.id] for h in product.hits]
                rows.setdefault(("memstore", group), []).append(measure(ranked, relevant))
        shutil.rmtree(root, ignore_errors=True)
        print(f"LoCoMo conversation {number} done (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    return {
        "split": f"{split.start}-{split.stop - 1}",
        "results": {f"{n}|{g}": {**mean(r), "n": len(r)} for (n, g), r in sorted(rows.items())},
        "vector_view_ms_per_query": stats(vector_ms),
    }


# --- time at scale -------------------------------------------------------------------------


def run_scale(
    embedder: semantic.Embedder, n: int, count: int, tmp: Path, choice: str
) -> dict[str, Any]:
    root = tmp / "scale"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    items = write_vault(root, n, Corpus(SEED), settings)
    queries = [q.text for q in make_queries(items, count, SEED + 1)]
    with Store.open(settings) as store:
        store.reindex()
        started = time.perf_counter()
        index = vector_index(store, tmp / "scale-vectors", embedder)
        embed_s = time.perf_counter() - started
        for text in queries[:20]:  # warm both views
            store.search(text, workspace=None, k=5, catch_up=False)
            index.hits(text, DEPTH)
        lexical_ms, both_ms, vector_ms, vector_cpu = [], [], [], []
        for text in queries:
            started = time.perf_counter()
            store.search(text, workspace=None, k=5, catch_up=False)
            middle, cpu = time.perf_counter(), time.thread_time()
            index.hits(text, DEPTH)
            done = time.perf_counter()
            vector_cpu.append((time.thread_time() - cpu) * 1000)
            lexical_ms.append((middle - started) * 1000)
            vector_ms.append((done - middle) * 1000)
            both_ms.append((done - started) * 1000)
        product = product_costs(store, queries, choice)
    return {
        "memories": n,
        "embed_all_s": round(embed_s, 1),
        "search_ms": stats(lexical_ms),
        "search_plus_vector_ms": stats(both_ms),
        "vector_view_ms": stats(vector_ms),
        "vector_view_cpu_ms": stats(vector_cpu),
        "p95_added_ms": round(pct(both_ms, 95) - pct(lexical_ms, 95), 2),
        **product,
    }


def product_costs(store: Store, queries: Sequence[str], choice: str) -> dict[str, Any]:
    """memstore's own search and add, view off and on, interleaved query by query: what
    turning the view on adds to a recall and to a write (a resident store, as the daemon)."""
    off = store.settings
    on = replace(off, semantic=choice)
    started = time.perf_counter()
    store.settings = on
    store.search("warm", workspace=None, k=5, catch_up=False)  # loads, embeds what is missing
    first_sync_s = time.perf_counter() - started
    times: dict[bool, list[float]] = {False: [], True: []}
    for text in queries:
        for semantic_on in (False, True):
            store.settings = on if semantic_on else off
            started = time.perf_counter()
            store.search(text, workspace=None, k=5, catch_up=False)
            times[semantic_on].append((time.perf_counter() - started) * 1000)
    adds: dict[bool, list[float]] = {False: [], True: []}
    for n in range(40):
        for semantic_on in (False, True):
            store.settings = on if semantic_on else off
            text = f"bench add {n} {semantic_on}: the semantic view embeds a new memory on write"
            started = time.perf_counter()
            store.add(text, workspace="bench")
            adds[semantic_on].append((time.perf_counter() - started) * 1000)
            if not semantic_on:  # the view falls behind the index: in step again
                store.settings = on
                store.search("catch up", workspace=None, k=1, catch_up=False)
    store.settings = off
    return {
        "memstore_first_sync_s": round(first_sync_s, 1),
        "memstore_search_off_ms": stats(times[False]),
        "memstore_search_on_ms": stats(times[True]),
        "memstore_p95_added_ms": round(pct(times[True], 95) - pct(times[False], 95), 2),
        "memstore_add_off_ms": stats(adds[False]),
        "memstore_add_on_ms": stats(adds[True]),
    }


# --- report --------------------------------------------------------------------------------


def print_report(report: dict[str, Any]) -> None:
    print(f"model {report['model']} (load {report['model_load_s']} s); {report['load']}")
    fixture = report.get("fixture")
    if fixture:
        classes = sorted(fixture["strategies"]["lexical"]["by_class"])
        print("\neval fixture: recall@1 / confident-and-correct, per class")
        print(
            f"{'strategy':14} {'all':>11} "
            + " ".join(f"{c[:11]:>11}" for c in classes)
            + "  off-silent"
        )
        for name, row in fixture["strategies"].items():
            cells = [row["all"], *(row["by_class"][c] for c in classes)]
            print(
                f"{name:14} "
                + " ".join(f"{c['r@1']:.2f}/{c['confident_correct']:.2f}".rjust(11) for c in cells)
                + f"  {row['off_corpus_no_confident']:.3f}"
            )
        print(
            f"embed ms per memory {fixture['embed_ms_per_memory']}; vector view per query {fixture['vector_view_ms_per_query']}"
        )
        print(f"top cosine: {fixture['top_cosine']}")
    locomo = report.get("locomo")
    if locomo:
        print(f"\nLoCoMo conversations {locomo['split']}")
        print(
            f"{'strategy':14} {'group':8} {'n':>5} "
            + " ".join(f"{m:>7}" for m in ("r@1", "r@5", "r@10", "r@20", "mrr"))
        )
        for key, row in locomo["results"].items():
            name, group = key.split("|")
            print(
                f"{name:14} {group:8} {row['n']:5d} "
                + " ".join(f"{row[m]:7.3f}" for m in ("r@1", "r@5", "r@10", "r@20", "mrr"))
            )
        print(f"vector view per query {locomo['vector_view_ms_per_query']}")
    scale = report.get("scale")
    if scale:
        print(f"\nat {scale['memories']} memories: {scale}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a model folder (default: the extra's model)")
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--split",
        choices=("dev", "test", "none"),
        default="dev",
        help="LoCoMo conversations 0-5 (dev) or the held-out 6-9 (test)",
    )
    parser.add_argument(
        "--scale", type=int, default=10000, help="memories for the timing (0: skip)"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-fixture", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not semantic.is_installed():
        print(f"the semantic extra is not installed; run: {semantic.EXTRA_HINT}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    embedder = semantic.load_embedder(args.model)
    embedder.embed(["warm"])
    report: dict[str, Any] = {
        "model": embedder.name,
        "model_load_s": round(time.perf_counter() - started, 2),
        "load": f"load average at start {os.getloadavg()[0]:.2f} (2 cores)",
    }
    tmp = Path(tempfile.mkdtemp(prefix="memstore-semantic-"))
    sections: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    choice = SEMANTIC_ON if args.model is None else str(args.model.resolve())
    if not args.no_fixture:
        sections.append(("fixture", lambda: run_fixture(embedder, args.fixture, tmp, choice)))
    if args.split != "none" and not args.data.exists():
        print(f"no LoCoMo data at {args.data}; pass --data PATH or --split none", file=sys.stderr)
        return 2
    if args.split != "none":
        split = DEV if args.split == "dev" else TEST
        sections.append(("locomo", lambda: run_locomo(embedder, args.data, split, tmp, choice)))
    if args.scale:
        sections.append(
            ("scale", lambda: run_scale(embedder, args.scale, args.queries, tmp, choice))
        )
    try:
        for name, section in sections:
            report[name] = section()
            report[name]["load_after"] = round(os.getloadavg()[0], 2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
