#!/usr/bin/env python
"""Team benchmark (issue 40): a team vault of 100k memories, 20 members sharing, syncs timed.

A standalone script, not a pytest module:

    python tests/benchmarks/bench_team.py [--size 100000] [--members 20] [--rounds 5]
    python tests/benchmarks/bench_team.py --quick          # smoke run: 2,000 memories

1. The team's host is a bare repository holding `--size` generated memories
   (bench_scale.py's corpus and remote builder: commits of `--batch` memories).
2. A measured member joins it: a personal vault whose memstore.toml follows the team, the
   team cloned and indexed (timed once: what `team join` costs).
3. `--rounds` rounds: in each, each of `--members` simulated members gets one share merged
   on the host (one commit per member on main, with the trailers a share writes, as a
   reviewer's merge leaves it; bench_scale.push_adds). Then the measured member syncs its
   team tier as `memstore sync` does (the tiers half's pull_teams: fetch, merge, the index
   caught up) and marks the personal copies the team now holds (shared_marks), each timed
   apart. A sync with nothing new is timed too.
4. The measured member shares one memory (fetch, plan against the 100k tier, one commit,
   push a branch) and reviews that branch; `memstore check` runs over a plain checkout.

Timings on a shared machine are noisy: each figure is the median of its runs, with the CPU
time of this process beside the wall time (a sync's git runs in child processes, whose
CPU is reported apart).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale

from memstore.core.config import Settings
from memstore.core.vault_config import VaultConfig, format_vault_config
from memstore.service.proposal_review import review_branch
from memstore.service.proposals import push_proposal, refresh_team
from memstore.service.shared_marks import mark_shared
from memstore.service.store import Store, init_vault
from memstore.service.teams import clone_path
from memstore.service.vault_check import check_vault


def timed(fn: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    """Run `fn`; return its wall, CPU and child-process CPU seconds, and its result."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "git_cpu_s": (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime),
    }, result


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(r[key] for r in runs), 3) for key in runs[0]}


def team_pull(personal: Store, team: Store) -> Any:
    """The team tier's part of `memstore sync`: the tiers half's pull when it is there."""
    try:
        from memstore.service.following import pull_teams
    except ImportError:
        return refresh_team(team)
    return pull_teams(personal)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="2,000 memories, 2 rounds")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if args.quick:
        args.size, args.rounds = 2_000, 2
    tmp = Path(tempfile.mkdtemp(prefix="bench-team-"))
    try:
        figures = run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"size": args.size, "members": args.members, "rounds": args.rounds}
    extra = args.members * args.rounds + 10
    pairs = bench_scale.generate(args.size + extra, 4040 + args.size)
    memories = [m for _, m in pairs]
    team_memories, later = memories[: args.size], memories[args.size :]
    bare = tmp / "team.git"
    seed_settings = Settings(vault=tmp / "seed", source="bench", session="b", host="bench")
    log(f"building the team's host: {args.size:,} memories …")
    step, built = timed(
        lambda: bench_scale.build_remote(
            bare, team_memories, args.batch, tmp / "seed", seed_settings
        )
    )
    out["remote"] = {**built, "build_s": round(step["wall_s"], 1)}

    home = tmp / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    settings = Settings(
        vault=home / "memstore", source="cli", session="bench", host="member-0", env=env
    )
    init_vault(settings.vault, settings)
    url = str(bare)
    (settings.vault / "memstore.toml").write_text(
        format_vault_config(VaultConfig(teams={"acme": url})), encoding="utf-8"
    )
    clone = clone_path(settings, "acme", url)
    clone.parent.mkdir(parents=True)
    log("joining: clone and index the team vault …")

    def join() -> None:
        subprocess.run(["git", "clone", "-q", url, str(clone)], check=True, env=env)
        init_vault(clone, replace(settings, vault=clone))
        with Store.open(replace(settings, vault=clone)) as team:
            team.catch_up()

    step, _ = timed(join)
    out["join"] = {k: round(v, 2) for k, v in step.items()}

    with Store.open(settings) as personal, Store.open(replace(settings, vault=clone)) as team:
        pulls, marks = [], []
        for round_no in range(args.rounds):
            batch = later[: args.members]
            later = later[args.members :]
            bench_scale.push_adds(bare, batch)  # each member's share, merged on the host
            pulls.append(timed(lambda: team_pull(personal, team))[0])
            marks.append(timed(lambda: mark_shared(personal, {"acme": team}))[0])
            log(
                f"round {round_no + 1}: pull {pulls[-1]['wall_s']:.2f} s, mark {marks[-1]['wall_s']:.2f} s"
            )
        out["sync_after_members_shared"] = {"pull": median(pulls), "mark": median(marks)}
        idle_pulls = [timed(lambda: team_pull(personal, team))[0] for _ in range(3)]
        idle_marks = [timed(lambda: mark_shared(personal, {"acme": team}))[0] for _ in range(3)]
        out["sync_nothing_new"] = {"pull": median(idle_pulls), "mark": median(idle_marks)}
        memory = later[0]
        added = personal.add(memory.body, workspace=memory.workspace)
        step, shared = timed(lambda: push_proposal(personal, team, "acme", [added.id]))
        out["share"] = {k: round(v, 3) for k, v in step.items()}
        step, review = timed(lambda: review_branch(team, "acme", shared.branch))
        out["review"] = {k: round(v, 3) for k, v in step.items()}
        out["review_memories"] = len(review.memories)
    checkout = tmp / "checkout"
    subprocess.run(["git", "clone", "-q", url, str(checkout)], check=True, env=env)
    step, checked = timed(lambda: check_vault(checkout))
    out["check"] = {**{k: round(v, 2) for k, v in step.items()}, "files": checked.files}
    out["check"]["findings"] = len(checked.findings)
    return out


def log(message: str) -> None:
    print(f"[bench_team] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
