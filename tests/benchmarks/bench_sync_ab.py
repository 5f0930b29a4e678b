#!/usr/bin/env python
"""The same sync of new memories, A/B: copies of one staged vault synced by each variant.

    python tests/benchmarks/bench_sync_new.py --size 100000 --cache DIR --keep --rounds 1
    python tests/benchmarks/bench_sync_new.py --size 100000 --reuse RUN --rounds 1 --stage-only
    python tests/benchmarks/bench_sync_ab.py --staged RUN --work /tmp/ab --runs 2 \
        --code main=/tmp/main-src --code branch=/work/checkout --git-pull

RUN is a kept `bench_sync_new.py` run whose last round stopped before its sync (a local
add in the vault; the other clone's adds on the remote). Each trial copies the vault, its
home and the remote into `--work` (the vault's remote pointed at the copy), refreshes
git's index there (a copy changes every file's ctime and inode; untimed), then times
`python -m memstore sync` with the variant's sources first on PYTHONPATH, or `git pull`
(`--git-pull`: plain git with memstore's merge driver, the same commits). Variants run
interleaved. Every git process each one starts is logged (command line, wall, user and
system CPU, peak RSS: a `git` on PATH that runs the real one under GNU time), as is the
CPU of the sync and all its children. `--config KEY=VALUE` sets git config in the copied
vault before the sync (e.g. index.version=4), for every variant.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

GIT = shutil.which("git") or "/usr/bin/git"
GNU_TIME = Path("/usr/bin/time")
WRAPPER = """#!/bin/sh
exec {time} -a -o "$BENCH_GIT_LOG" -f "%e %U %S %M | $*" {git} "$@"
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def copy_run(staged: Path, dest: Path) -> Path:
    """Copy the staged vault, home and remote to `dest`; return the vault's copy."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for part in ("vault", "home", "remote.git"):
        if (staged / part).exists():
            subprocess.run(["cp", "-a", str(staged / part), str(dest / part)], check=True)
    vault = dest / "vault"
    for line in git(vault, "remote").stdout.split():
        git(vault, "remote", "set-url", line, str(dest / "remote.git"))
    git(vault, "update-index", "-q", "--refresh")  # a copy's new ctimes: hashed once, untimed
    return vault


class InPlace:
    """The staged run itself, put back after each trial (`--in-place`: copying a large
    vault takes minutes on a busy disk): git's refs reset to the staged commits, the work
    tree reset, memstore's index folder restored from a copy made once."""

    def __init__(self, staged: Path) -> None:
        self.staged = staged
        self.vault = staged / "vault"
        self.heads = {
            "vault": git(self.vault, "rev-parse", "HEAD").stdout.strip(),
            "tracking": git(self.vault, "rev-parse", "refs/remotes/origin/main").stdout.strip(),
            "remote": git(staged / "remote.git", "rev-parse", "refs/heads/main").stdout.strip(),
        }
        self.kept = staged / "memstore-state.kept"
        if not self.kept.exists():
            subprocess.run(["cp", "-a", str(self.vault / ".memstore"), str(self.kept)], check=True)

    def restore(self) -> Path:
        git(self.vault, "reset", "-q", "--hard", self.heads["vault"])
        git(self.vault, "clean", "-q", "-fd", "--", ".")
        git(self.vault, "update-ref", "refs/remotes/origin/main", self.heads["tracking"])
        git(self.staged / "remote.git", "update-ref", "refs/heads/main", self.heads["remote"])
        shutil.rmtree(self.vault / ".memstore")
        subprocess.run(["cp", "-a", str(self.kept), str(self.vault / ".memstore")], check=True)
        return self.vault


def git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GIT, "-C", str(where), *args], capture_output=True, text=True, check=False
    )


def read_log(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        head, _, argv = line.partition(" | ")
        parts = head.split()
        if len(parts) != 4 or not parts[0].replace(".", "").isdigit():
            continue  # GNU time's own notes (a non-zero exit)
        wall, user, system, rss = parts
        rows.append(
            {
                "argv": argv.strip(),
                "wall_s": float(wall),
                "cpu_s": round(float(user) + float(system), 2),
                "rss_mib": round(int(rss) / 1024, 1),
            }
        )
    return rows


def one_trial(args: argparse.Namespace, label: str, source: str | None, n: int) -> dict[str, Any]:
    dest = args.work / f"{label}-{n}"
    if args.in_place:
        dest.mkdir(parents=True, exist_ok=True)
        vault = args.in_place.restore()
    else:
        vault = copy_run(args.staged, dest)
    for setting in args.config:
        key, _, value = setting.partition("=")
        git(vault, "config", key, value)
    bin_dir = args.work / "bin"
    log = dest / "git.log"
    env = {
        **os.environ,
        "HOME": str((args.staged if args.in_place else dest) / "home"),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "BENCH_GIT_LOG": str(log),
        "MEMSTORE_NO_DAEMON": "1",
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if source is None:
        argv = ["git", "-C", str(vault), "pull", "--quiet", "--no-rebase", "--no-edit"]
    else:
        env["PYTHONPATH"] = source
        argv = [sys.executable, "-m", "memstore", "sync", "--vault", str(vault)]
    cpu = children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=args.work, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    used = children_cpu() - cpu
    gits = read_log(log)
    result = {
        "variant": label,
        "trial": n,
        "rc": done.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(used, 2),
        "git_wall_s": round(sum(g["wall_s"] for g in gits), 2),
        "git_cpu_s": round(sum(g["cpu_s"] for g in gits), 2),
        "git": gits,
        "head_files": len(git(vault, "ls-files").stdout.splitlines()) if args.count else None,
        "output": (done.stdout + done.stderr).strip().splitlines()[-3:],
        "load": os.getloadavg()[0],
    }
    if not args.keep and not args.in_place:
        shutil.rmtree(dest, ignore_errors=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--staged", type=Path, required=True, help="a kept, staged run folder")
    parser.add_argument("--work", type=Path, required=True, help="where the copies go")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--code", action="append", default=[], metavar="LABEL=SRC", help="sources to time"
    )
    parser.add_argument("--git-pull", action="store_true", help="also time plain `git pull`")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--count", action="store_true", help="count the synced files")
    parser.add_argument("--keep", action="store_true", help="keep each trial's copy")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="sync the staged run itself, put back after each trial",
    )
    args = parser.parse_args()
    args.in_place = InPlace(args.staged) if args.in_place else None
    bin_dir = args.work / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "git"
    wrapper.write_text(WRAPPER.format(time=GNU_TIME, git=GIT), encoding="utf-8")
    wrapper.chmod(0o755)
    variants: list[tuple[str, str | None]] = [
        (label, src) for label, _, src in (c.partition("=") for c in args.code)
    ]
    if args.git_pull:
        variants.append(("git-pull", None))
    results = []
    for n in range(args.runs):
        for label, source in variants:
            result = one_trial(args, label, source, n)
            results.append(result)
            print(
                f"{label} #{n}: wall {result['wall_s']} s, CPU {result['cpu_s']} s "
                f"(git: wall {result['git_wall_s']} s, CPU {result['git_cpu_s']} s), "
                f"rc {result['rc']}, load {result['load']:.1f}",
                flush=True,
            )
            if result["rc"]:
                print("    " + "\n    ".join(result["output"]), flush=True)
            for g in result["git"]:
                print(
                    f"    {g['wall_s']:6.2f} s {g['cpu_s']:6.2f} CPU {g['rss_mib']:7.1f} MiB  "
                    f"{g['argv'][:150]}",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
