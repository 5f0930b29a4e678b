#!/usr/bin/env python
"""Sync benchmark: a 10k-memory vault, a bare remote on disk, two clones as two machines.

A standalone script, not a pytest module:

    python tests/benchmarks/bench_sync.py [--size 10000] [--changed 1000]

Measures, for machine B:
  * sync bringing in N changed memories that machine A pushed (fast-forward), including
    the index catch-up — target <= 5 s for 1,000 changes in a 10k vault;
  * the same when B has local changes of its own (a real merge commit);
  * a no-op sync (nothing changed anywhere) — target <= 0.5 s; in-process and via the CLI;
  * plain `git fetch` + `git merge --ff-only` of the same change as a reference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf

from memstore.core.config import Settings
from memstore.service.store import Store, init_vault

TARGETS = {"sync_changed_s": 5.0, "sync_noop_s": 0.5}


def settings(path: Path, host: str) -> Settings:
    return Settings(
        vault=path, source="bench", session=f"bench-{host}", host=host, env=dict(os.environ)
    )


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def change(store: Store, count: int, stamp: str) -> None:
    """Append a line to `count` memories' bodies (as an editor would) — no commit."""
    for path in sorted(store.vault.scan())[:count]:
        file = store.vault.path(path)
        file.write_text(
            file.read_text(encoding="utf-8") + f"Checked again {stamp}.\n", encoding="utf-8"
        )


def timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=1_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memstore-bench-sync-"))
    try:
        remote = tmp / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        a_root, b_root = tmp / "a", tmp / "b"
        print(f"generating {args.size} memories …", file=sys.stderr)
        bf.write_vault(a_root, args.size, bf.Corpus(bf.SEED + args.size), settings(a_root, "a"))
        a = Store.open(settings(a_root, "a"))
        a.reindex()
        a.set_remote(str(remote))
        a.sync()
        git(tmp, "clone", "-q", str(remote), str(b_root))
        init_vault(b_root, settings(b_root, "b"))
        b = Store.open(settings(b_root, "b"))
        b.reindex()
        results: dict[str, float] = {}

        change(a, args.changed, "by A, round 1")
        a.sync()
        results["sync_changed_s"], (outcome, _, caught) = timed(b.sync)
        assert outcome.merge == "fast-forward" and len(caught.updated) == args.changed, (
            outcome,
            caught,
        )

        change(a, args.changed, "by A, round 2")
        a.sync()
        change(b, 10, "by B")
        results["sync_merge_s"], (outcome, _, caught) = timed(b.sync)
        assert outcome.merge == "merged", outcome

        noop = [timed(b.sync)[0] for _ in range(10)]
        results["sync_noop_s"] = statistics.median(noop)
        env = {**os.environ, "MEMSTORE_VAULT": str(b_root)}
        cli = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run(["memstore", "sync"], env=env, check=True, capture_output=True)
            cli.append(time.perf_counter() - start)
        results["sync_noop_cli_s"] = statistics.median(cli)

        # Reference: the same kind of change pulled by plain git (no merge rules, no index).
        change(a, args.changed, "by A, round 3")
        a.sync()
        c_root = tmp / "c"
        git(tmp, "clone", "-q", str(remote), str(c_root))
        git(c_root, "reset", "-q", "--hard", "HEAD~1")
        results["git_pull_ff_reference_s"], _ = timed(
            lambda: git(c_root, "pull", "-q", "--ff-only")
        )
        a.close()
        b.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nsync benchmark: {args.size} memories, {args.changed} changed, bare remote on disk")
    rows = [
        (
            "sync bringing in changes (fast-forward + index)",
            "sync_changed_s",
            TARGETS["sync_changed_s"],
        ),
        ("sync with changes on both sides (merge commit)", "sync_merge_s", None),
        ("no-op sync, in process (median of 10)", "sync_noop_s", TARGETS["sync_noop_s"]),
        ("no-op `memstore sync`, CLI (median of 5)", "sync_noop_cli_s", TARGETS["sync_noop_s"]),
        ("reference: plain `git pull --ff-only` of the same size", "git_pull_ff_reference_s", None),
    ]
    for label, key, target in rows:
        verdict = "" if target is None else ("  met" if results[key] <= target else "  MISSED")
        limit = "" if target is None else f"  (target <= {target:g} s)"
        print(f"  {label:55s} {results[key]:7.2f} s{limit}{verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
