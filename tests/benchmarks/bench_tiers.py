#!/usr/bin/env python
"""Recall across tiers: a personal vault beside two team vaults against one vault of them all.

A standalone script, not a pytest module:

    nice -n 10 python tests/benchmarks/bench_tiers.py                # 10k + 2 x 50k vs 110k
    python tests/benchmarks/bench_tiers.py --quick                   # CI smoke: 100 + 2 x 500

The same generated memories (bench_scale.py's builders, bench_foundation.py's corpus) are
dealt at random into a personal set and two team sets. Each set becomes a bare remote
(`build_remote`: many commits, as a history has them); the personal vault is a clone of its
remote and follows the two teams through `team join` (service/following.py: clone, index),
and the single vault is a clone of one remote holding every memory. Then, in one process,
on the same queries in alternating order, warm:

  * `Store.recall(q, workspace=None, k=5, tiers=True)` on the personal vault, against
    `Store.recall(q, workspace=None, k=5)` on the single vault: p50 / p95 of wall and CPU
    time (time.process_time: the machine is shared), and their ratio (issue 40 asks for
    p95 across tiers <= 1.5 x the single vault's);
  * how the merged list compares with the single index's for the same memories: top-1
    agreement and mean overlap of the top 5, for the merge recall uses (confident first,
    then the per-tier normalised score) and two others (score alone; round robin).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf
import bench_scale

from memstore.core.config import Settings
from memstore.core.model import Hit, Memory
from memstore.service.following import join
from memstore.service.store import Store, init_vault
from memstore.service.tiers import merge_hits, search_teams, settled, tier_stores

K = 5
EVAL_WORKSPACE = "eval"  # the workspace `memstore eval` loads a fixture into
FIXTURES = (
    Path(__file__).resolve().parents[2] / "memstore" / "fixtures" / "recall-eval.json",
    Path(__file__).resolve().parents[1] / "data" / "recall-heldout.json",
)


def settings(root: Path, home: Path) -> Settings:
    env = {**os.environ, "HOME": str(home), "MEMSTORE_NO_DAEMON": "1"}
    env.pop("XDG_DATA_HOME", None)
    return Settings(vault=root, source="bench", session="bench", host="bench", env=env)


def remote_of(tmp: Path, name: str, memories: Sequence[Memory], batch: int, home: Path) -> Path:
    bare = tmp / f"{name}.git"
    seed = tmp / f"{name}-seed"
    bench_scale.build_remote(bare, memories, batch, seed, settings(seed, home))
    shutil.rmtree(seed)
    return bare


def clone_indexed(bare: Path, root: Path, home: Path) -> Store:
    subprocess.run(["git", "clone", "-q", str(bare), str(root)], check=True)
    init_vault(root, settings(root, home))
    store = Store.open(settings(root, home))
    store.reindex()
    return store


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, out


def latency(
    tiered: Store, single: Store, queries: Sequence[bf.Query], warmup: int
) -> dict[str, Any]:
    """Warm recall on both, the same queries, alternating which goes first."""
    for q in queries[:warmup]:
        tiered.recall(q.text, workspace=None, k=K, tiers=True)
        single.recall(q.text, workspace=None, k=K)
    times: dict[str, dict[str, list[float]]] = {
        "tiers": {"wall": [], "cpu": []},
        "single": {"wall": [], "cpu": []},
    }
    runs = {
        "tiers": lambda text: tiered.recall(text, workspace=None, k=K, tiers=True),
        "single": lambda text: single.recall(text, workspace=None, k=K),
    }
    for i, q in enumerate(queries):
        order = ("tiers", "single") if i % 2 == 0 else ("single", "tiers")
        for name in order:
            wall, cpu, _ = timed(lambda run=runs[name], text=q.text: run(text))
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    out: dict[str, Any] = {
        name: {kind: bf.summary(values) for kind, values in kinds.items()}
        for name, kinds in times.items()
    }
    out["p95_ratio_wall"] = round(out["tiers"]["wall"]["p95"] / out["single"]["wall"]["p95"], 3)
    out["p95_ratio_cpu"] = round(out["tiers"]["cpu"]["p95"] / out["single"]["cpu"]["p95"], 3)
    return out


def by_score(answers: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    out: dict[str, Hit] = {}
    for hit in sorted((h for hits in answers for h in hits), key=lambda h: -h.score):
        out.setdefault(hit.id, hit)
    return list(out.values())[:k]


def round_robin(answers: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    out: dict[str, Hit] = {}
    for rank in range(max((len(a) for a in answers), default=0)):
        for hits in answers:
            if rank < len(hits):
                out.setdefault(hits[rank].id, hits[rank])
    return list(out.values())[:k]


def agreement(tiered: Store, single: Store, queries: Sequence[bf.Query]) -> dict[str, Any]:
    """How close each merge of the tiers' answers comes to one index of the same memories."""
    merges = {
        "confident-then-score": merge_hits,
        "score-only": by_score,
        "round-robin": round_robin,
    }
    tally = {name: {"top1": 0, "overlap": 0.0} for name in merges}
    asked = 0
    teams = tier_stores(tiered)
    for q in queries:
        truth = [h.id for h in single.search(q.text, workspace=None, k=K).hits]
        if not truth:
            continue
        asked += 1
        ask = settled(tiered, teams, q.text)
        answers = [tiered.search(ask[""], workspace=None, k=K).hits]
        answers += [r.hits for r in search_teams(teams, ask, workspace=None, k=K, archived=False)]
        for name, merge in merges.items():
            ids = [h.id for h in merge(answers, K)]
            tally[name]["top1"] += bool(ids) and ids[0] == truth[0]
            tally[name]["overlap"] += len(set(ids) & set(truth)) / len(truth)
    return {
        "queries_with_hits": asked,
        **{
            name: {
                "top1_agreement": round(t["top1"] / max(asked, 1), 3),
                "mean_overlap_at_5": round(t["overlap"] / max(asked, 1), 3),
            }
            for name, t in tally.items()
        },
    }


MERGES: dict[str, Callable[[Sequence[Sequence[Hit]], int], list[Hit]]] = {
    "confident-then-score": merge_hits,
    "score-only": by_score,
    "round-robin": round_robin,
}


def labelled(args: argparse.Namespace, tmp: Path, fixture: Path) -> dict[str, Any]:
    """A labelled fixture's memories dealt at random into three tiers, each padded with
    generated memories (so each tier's idf is its own), against one vault holding all:
    recall@1, recall@5 and MRR@5 of the single vault and of each merge."""
    tmp = tmp / fixture.stem
    home = tmp / "home"
    home.mkdir(parents=True)
    data = json.loads(fixture.read_text(encoding="utf-8"))
    rng = random.Random(args.seed)
    sizes = {"personal": args.pad_personal, "acme": args.pad_team, "infra": args.pad_team}
    pad = [m for _, m in bench_scale.generate(sum(sizes.values()), args.seed + 7)]
    stores: dict[str, Store] = {}
    start = 0
    for name, n in sizes.items():
        chosen = sorted(pad[start : start + n], key=lambda m: m.created)
        start += n
        stores[name] = clone_indexed(
            remote_of(tmp, f"fx-{name}", chosen, 500, home), tmp / f"fx-{name}-v", home
        )
    single = clone_indexed(
        remote_of(tmp, "fx-all", sorted(pad, key=lambda m: m.created), 500, home),
        tmp / "fx-all-v",
        home,
    )
    to_fixture: dict[str, str] = {}
    for item in data["corpus"]:
        tier = rng.choice(list(stores))
        for store in (stores[tier], single):
            added = store.add(
                item["content"],
                workspace=item.get("workspace", EVAL_WORKSPACE),
                kind=item.get("kind", "note"),
                keywords=tuple(item.get("keywords", ())),
            )
        to_fixture[added.id] = item["id"]
    ranked: dict[str, list[list[str]]] = {"single": [], **{name: [] for name in MERGES}}
    wanted = [q for q in data["queries"] if q.get("relevant")]
    for q in wanted:
        hits = single.search(q["text"], workspace=EVAL_WORKSPACE, k=K).hits
        ranked["single"].append([to_fixture.get(h.id, h.id) for h in hits])
        teams = {name: store for name, store in stores.items() if name != "personal"}
        ask = settled(stores["personal"], teams, q["text"])
        answers = [
            store.search(
                ask["" if name == "personal" else name], workspace=EVAL_WORKSPACE, k=K
            ).hits
            for name, store in stores.items()
        ]
        for name, merge in MERGES.items():
            ranked[name].append([to_fixture.get(h.id, h.id) for h in merge(answers, K)])
    for store in (*stores.values(), single):
        store.close()
    out: dict[str, Any] = {"fixture": fixture.name, "queries": len(wanted), "padding": sizes}
    for name, lists in ranked.items():
        ranks = [
            next((i + 1 for i, found in enumerate(ids) if found in q["relevant"]), None)
            for ids, q in zip(lists, wanted, strict=True)
        ]
        out[name] = {
            "recall_at_1": round(sum(1 for r in ranks if r == 1) / len(ranks), 3),
            "recall_at_5": round(sum(1 for r in ranks if r) / len(ranks), 3),
            "mrr_at_5": round(sum(1 / r for r in ranks if r) / len(ranks), 3),
        }
    return out


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    personal_n, team_n = args.personal, args.team
    total = personal_n + 2 * team_n
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    log(f"generating {total} memories …")
    pairs = bench_scale.generate(total, args.seed)
    order = list(range(total))
    random.Random(args.seed).shuffle(order)
    dealt = [pairs[i] for i in order]
    sets = {
        "personal": dealt[:personal_n],
        "acme": dealt[personal_n : personal_n + team_n],
        "infra": dealt[personal_n + team_n :],
    }
    tiered_root, single_root = home / "memstore", tmp / "single"
    if (single_root / ".git").exists():  # --keep: built by an earlier run
        log("reusing the vaults built by an earlier run …")
        tiered = Store.open(settings(tiered_root, home))
        single = Store.open(settings(single_root, home))
        return measure(args, tiered, single, pairs, sizes=(personal_n, team_n, total))
    remotes = {}
    for name, chosen in sets.items():
        log(f"remote {name}: {len(chosen)} memories …")
        memories = sorted((m for _, m in chosen), key=lambda m: m.created)
        remotes[name] = remote_of(tmp, name, memories, args.batch, home)
    log(f"remote all: {total} memories …")
    everything = sorted((m for _, m in pairs), key=lambda m: m.created)
    remotes["all"] = remote_of(tmp, "all", everything, args.batch, home)
    started = time.perf_counter()
    tiered = clone_indexed(remotes["personal"], tiered_root, home)
    for team in ("acme", "infra"):
        log(f"team join {team} …")
        join(tiered, team, str(remotes[team]))
    build_tiers = time.perf_counter() - started
    log("single vault …")
    started = time.perf_counter()
    single = clone_indexed(remotes["all"], single_root, home)
    build_single = time.perf_counter() - started
    result = measure(args, tiered, single, pairs, sizes=(personal_n, team_n, total))
    result["index_build_s"] = {"tiers": round(build_tiers, 1), "single": round(build_single, 1)}
    return result


def measure(
    args: argparse.Namespace,
    tiered: Store,
    single: Store,
    pairs: Sequence[Any],
    sizes: tuple[int, int, int],
) -> dict[str, Any]:
    """Recall latency (--rounds rounds, each its own p50/p95) and the merged ranking."""
    personal_n, team_n, total = sizes
    queries = bf.make_queries([g for g, _ in pairs], args.queries, args.seed + 1)
    try:
        rounds = []
        for n in range(args.rounds):
            log(f"recall ×{len(queries)} on each, round {n + 1} of {args.rounds} …")
            rounds.append(latency(tiered, single, queries, args.warmup))
        return {
            "sizes": {"personal": personal_n, "team": team_n, "teams": 2, "single": total},
            "recall_ms": rounds[-1],
            "rounds": [{"wall": r["p95_ratio_wall"], "cpu": r["p95_ratio_cpu"]} for r in rounds],
            "ranking": agreement(tiered, single, queries),
        }
    finally:
        tiered.close()
        single.close()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def report(result: dict[str, Any]) -> None:
    sizes, r = result["sizes"], result["recall_ms"]
    print(
        f"personal {sizes['personal']} + {sizes['teams']} team vaults of {sizes['team']} "
        f"vs one vault of {sizes['single']}, k={K}, warm, in-process (ms):"
    )
    for name in ("tiers", "single"):
        wall, cpu = r[name]["wall"], r[name]["cpu"]
        print(
            f"  {name:7} wall p50 {wall['p50']:7.2f}  p95 {wall['p95']:7.2f}   "
            f"cpu p50 {cpu['p50']:7.2f}  p95 {cpu['p95']:7.2f}   (n={wall['n']})"
        )
    print(f"  p95 ratio tiers/single: wall {r['p95_ratio_wall']}, cpu {r['p95_ratio_cpu']}")
    for n, ratios in enumerate(result.get("rounds", []), 1):
        print(f"    round {n}: p95 ratio wall {ratios['wall']}, cpu {ratios['cpu']}")
    ranking = result["ranking"]
    print(f"merged list vs the single index ({ranking['queries_with_hits']} queries with hits):")
    for name, figures in ranking.items():
        if isinstance(figures, dict):
            print(
                f"  {name:22} top-1 agreement {figures['top1_agreement']:.3f}  "
                f"overlap@5 {figures['mean_overlap_at_5']:.3f}"
            )


def report_fixtures(found: list[dict[str, Any]]) -> None:
    for one in found:
        pad = one["padding"]
        print(
            f"{one['fixture']}: {one['queries']} queries; tiers padded with "
            f"{pad['personal']} / {pad['acme']} / {pad['infra']} generated memories:"
        )
        for name in ("single", *MERGES):
            r = one[name]
            print(
                f"  {name:22} recall@1 {r['recall_at_1']:.3f}  recall@5 {r['recall_at_5']:.3f}  "
                f"MRR@5 {r['mrr_at_5']:.3f}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--personal", type=int, default=10_000)
    parser.add_argument("--team", type=int, default=50_000, help="memories in each team vault")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="CI smoke: 100 + 2 x 500")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--rounds", type=int, default=3, help="latency rounds in the run")
    parser.add_argument(
        "--keep",
        type=Path,
        help="build in (and keep) this folder; a later run given it reuses the vaults",
    )
    parser.add_argument(
        "--fixtures",
        action="store_true",
        help="only the labelled fixtures' recall, merged vs one vault (no 110k build)",
    )
    parser.add_argument("--pad-personal", type=int, default=1000)
    parser.add_argument("--pad-team", type=int, default=3000)
    args = parser.parse_args(argv)
    if args.quick:
        args = replace_args(args, personal=100, team=500, queries=60, warmup=10, batch=100)
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="bench-tiers-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        if args.fixtures:
            result = {"fixtures": [labelled(args, tmp, fixture) for fixture in FIXTURES]}
        else:
            result = run(args, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.fixtures:
        report_fixtures(result["fixtures"])
    else:
        report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


def replace_args(args: argparse.Namespace, **values: Any) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), **values})


if __name__ == "__main__":
    sys.exit(main())
