#!/usr/bin/env python
"""The sync that brings in another clone's adds, alone: wall time and CPU at N memories.

A standalone script (issue 39: the figure that broke first on the way to a million):

    python tests/benchmarks/bench_sync_new.py --size 100000 --cache /tmp/million-remotes
    python tests/benchmarks/bench_sync_new.py --size 100000 --from-git 4530b3c   # A/B
    python tests/benchmarks/bench_sync_new.py --size 1000000 --reuse /tmp/million-remotes/run-1m \
        --rounds 1 --profile /tmp/sync-1m.prof     # a vault bench_scale.py --keep left
    python tests/benchmarks/bench_sync_new.py --size 100000 --reuse DIR --rounds 1 --stage-only
    python tests/benchmarks/bench_sync_new.py --size 100000 --reuse DIR --rounds 4 --packed-remote \
        --code main=/tmp/main-sources --code branch=   # the remote packed, as a host keeps it
    python tests/benchmarks/bench_sync_new.py --size 1000000 --reuse DIR --rounds 4 --recalls 600 \
        --code main=/tmp/main-sources --code branch=   # A/B, alternated, on one vault
        # the round up to its sync: bench_sync_ab.py times syncs of copies of DIR

The vault is made as bench_scale.py makes it (a remote of N memories in commits of 500,
then `memstore init` + `remote add` + `sync`). Each round: one local `memstore add` (so
the sync merges), another clone's `--new` adds pushed to the remote (one commit each),
then `memstore sync` with no daemon, timed: wall, CPU (user + sys of it and its git
children) and peak RSS. CPU is the figure to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf
import bench_scale as bs


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_round(
    s: bs.Sized, bare: Path, new: int, i: int, profile: Path | None = None
) -> dict[str, Any]:
    note = [s.exe, "add", f"local note {i}: the deploy step flakes on Mondays", "-w", "global"]
    _, _, done = bs.run_one([*note, "--vault", str(s.root)], s.env_nd, s.tmp)
    if done.returncode != 0:
        raise RuntimeError(f"memstore add failed: {done.stderr.strip()[:400]}")
    memories = bs.as_memories(s.take_fresh(new), s.last_created, s.ids)
    s.last_created = memories[-1].created
    pushed = bs.push_adds(bare, memories)
    if s.args.packed_remote:  # as a hosted remote keeps it: one pack, bitmaps, commit-graph
        pushed["remote_packed_s"] = pack_remote(bare)
    if s.args.stage_only:  # the sync is bench_sync_ab.py's to run, on copies
        return {"staged": str(s.tmp), **pushed}
    if s.args.recalls:
        pending_recalls(s, s.args.recalls, i)
    if s.args.full_first:
        full_comparison(s)
    env, code = s.env_nd, ""
    if s.args.code:  # rounds alternate between the sources named (A/B on one vault)
        code, sources = s.args.code[i % len(s.args.code)].split("=", 1)
        places = [p for p in (sources, env.get("PYTHONPATH", "")) if p]
        env = {**env, "PYTHONPATH": os.pathsep.join(places)}
    cpu = children_cpu()
    load = os.getloadavg()[0]
    argv = [s.exe, "sync", "--vault", str(s.root)]
    if profile is not None:  # the sync's own process under cProfile (its git children not)
        argv = [sys.executable, "-m", "cProfile", "-o", f"{profile}.{i + 1}", *argv]
    ms, rss, done = bs.run_one(argv, env, s.tmp, timeout=s.args.clone_timeout)
    if done.returncode != 0:
        raise RuntimeError(f"memstore sync failed: {done.stderr.strip()[:400]}")
    arrived = sum((s.root / bs.memory_path(m)).is_file() for m in memories)
    return {
        "code": code or "this",
        "load": [round(load, 1), round(os.getloadavg()[0], 1)],  # before and after
        "wall_s": round(ms / 1000, 2),
        "cpu_s": round(children_cpu() - cpu, 2),
        "peak_rss_mib": round(rss / 1024, 1),
        "arrived": arrived,
        "output": done.stdout.strip().splitlines()[-3:],
        **pushed,
    }


def pack_remote(bare: Path) -> float:
    """Pack the bare remote as a hosted one keeps it (untimed in the sync's figures): the
    other clone's commits arrive here as loose objects, which a push to a real server never
    leaves (it keeps the pack it received, repacks later and serves with bitmaps). Return
    the seconds it took."""
    import subprocess

    t0 = time.perf_counter()
    (bare / "gc.log").unlink(missing_ok=True)  # a day-old refusal would stop git gc --auto
    for argv in (["repack", "-a", "-d", "-b", "-q"], ["commit-graph", "write", "--reachable"]):
        subprocess.run(["git", "-C", str(bare), *argv], check=True, capture_output=True)
    return round(time.perf_counter() - t0, 2)


def pending_recalls(s: bs.Sized, count: int, i: int) -> None:
    """Leave one recall of `count` memories pending, as a session's recalls do: the sync
    flushes them into their files first (at 1M the eighth session's sync had 606)."""
    from memstore.vault.usage import Usage

    ids = random.Random(i).sample(sorted(s.ids), count)
    usage = Usage(s.root / ".memstore" / "usage.sqlite")
    try:
        usage.record(ids, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    finally:
        usage.close()


def full_comparison(s: bs.Sized) -> None:
    """Compare every file with the index now, untimed: a sync that falls on the
    five-minutely full comparison (`FULL_EVERY_S`) pays ~10 s more CPU at 1M, and which
    round of an A/B falls on it is chance."""
    from memstore.service.store import Store

    with Store.open(s.settings) as store:
        store.catch_up(full=True)


def parse_args(raw: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--new", type=int, default=1000, help="adds the other clone pushes")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=500, help="memories per commit on the remote")
    parser.add_argument("--clone-timeout", type=float, default=3600.0)
    parser.add_argument("--cache", type=Path, help="keep and reuse the generated remotes here")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--no-snapshot", action="store_true")
    parser.add_argument("--from-git", metavar="REV", help="measure the sources committed at REV")
    parser.add_argument(
        "--reuse", type=Path, metavar="DIR", help="sync the vault a kept bench_scale.py run left"
    )
    parser.add_argument(
        "--recalls", type=int, default=0, help="memories with a recall pending before each sync"
    )
    parser.add_argument("--profile", type=Path, help="cProfile each sync into PROFILE.<round>")
    parser.add_argument(
        "--full-first",
        action="store_true",
        help="before each timed sync, run the five-minutely comparison of every file untimed "
        "(so no round of an A/B pays it by chance)",
    )
    parser.add_argument(
        "--code",
        action="append",
        metavar="NAME=DIR",
        help="round i's sync runs the sources in DIR (first on PYTHONPATH; '' this code), "
        "taking turns: --code main=/tmp/main --code branch= alternates on one vault",
    )
    parser.add_argument(
        "--packed-remote",
        action="store_true",
        help="after the other clone's push, pack the bare remote (repack -adb, commit-graph), "
        "untimed: a hosted remote's state rather than loose objects",
    )
    parser.add_argument(
        "--stage-only",
        action="store_true",
        help="make the round's local add and the other clone's push, then stop before the sync "
        "(with --keep or --reuse: bench_sync_ab.py syncs copies of that folder)",
    )
    return parser.parse_args(raw)


def reused(s: bs.Sized, rounds: int, new: int) -> tuple[list[bf.Generated], Path]:
    """The memories and remote of a kept run (`bench_scale.py --keep`), its vault as it is;
    the new memories skip those earlier runs added."""
    pairs = bs.generate(s.n, bf.SEED + s.n)
    s.last_created = pairs[-1][1].created
    s.ids = {m.id for _, m in pairs}
    items = [g for g, _ in pairs]
    # Earlier runs on this vault took the pool's first memories: draw more until enough are
    # left (a pool that ran dry made a round sync fewer than --new without a word).
    count = 5 * rounds * new + 5000
    while True:
        s.fresh = bs.not_added_yet(s, bs.fresh_memories(items, s.n, count))
        if len(s.fresh) >= rounds * new:
            return items, s.tmp / "remote.git"
        count *= 2


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    args = parse_args(raw)
    meta = bs.run_meta(args, bs.enter_sources(args, raw, __file__))
    tmp = args.reuse or Path(tempfile.mkdtemp(prefix=f"memstore-sync-new-{args.size}-"))
    try:
        s = bs.sized(args.size, args, tmp)
        mark = bf.cpu_mark()
        if args.reuse:
            _, bare = reused(s, args.rounds, args.new)
            s.res["clone"] = {"reused_run": str(tmp)}
        else:
            items, bare = bs.prepare_remote(s, args.cache)
            bs.clone_vault(s, bare)
            s.fresh = bs.fresh_memories(items, s.n, args.new * args.rounds)
        rounds = []
        for i in range(args.rounds):
            s.log(f"round {i + 1}: another clone pushes {args.new} adds, then memstore sync …")
            rounds.append(one_round(s, bare, args.new, i, args.profile))
            s.log(f"round {i + 1}: {rounds[-1]}")
        result = {"meta": meta, "n": s.n, "clone": s.res["clone"], "rounds": rounds}
        result["other_processes"] = bf.foreign_load(mark)
    finally:
        if not args.keep and not args.reuse:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    bf.log(f"done in {time.perf_counter() - started:.0f} s")
    sys.exit(code)
