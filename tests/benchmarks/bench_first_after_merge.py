"""The first search through the daemon after a background merge swapped in a large segment.

Per round and code (the codes take turns): the vault's index put back as it was (`--pristine`,
a copy of `.memstore/index` with segments due to merge), the daemon started and warmed, one
tier merged and swapped in by another process (index/merging.py, the branch's code for every
round: the merge is not what is compared), the daemon left until its CPU settles (what it
does after the swap), then the first CLI searches through it of `--query` (ties at the last
place: the merged segment's key order is read) — client wall and the daemon's CPU.

    python tests/benchmarks/bench_first_after_merge.py --folder /tmp/daemon1m-1m42 \\
        --pristine /tmp/daemon1m-1m42-index-pristine --code main=EXE --code branch=EXE \\
        --query "tests fix" --query "lock fix" --rounds 2

FOLDER holds `vault/` and `home/`; EXE runs memstore with the code compared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

MERGE = """
import sys, time
from pathlib import Path
from memstore.core.config import Settings
from memstore.index import SearchIndex
from memstore.service.store import Store
vault = Path(sys.argv[1])
settings = Settings(vault=vault, source="bench")
with Store.open(settings) as store:
    search = store.indexer.search
    chosen = search.merge_plan()
    t = time.perf_counter()
    built = search.build_merge(chosen)
    with store.transaction(catch_up=False, serialize=False):
        own = SearchIndex.open(search.root, create=False)
        try:
            assert own.swap_in(built)
        finally:
            own.close()
    print(len(chosen), round(time.perf_counter() - t, 1))
"""


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(exe: str, args: list[str], env: dict[str, str], timeout: float = 900) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(
        [exe, *args], env=env, cwd="/tmp", capture_output=True, text=True, timeout=timeout
    )
    return (time.perf_counter() - t) * 1000, done.stdout


def status(exe: str, vault: Path, env: dict[str, str]) -> dict:
    try:
        found = json.loads(run(exe, ["status", "--json", "--vault", str(vault)], env, 120)[1])
    except ValueError:
        return {}
    return found if isinstance(found, dict) and found.get("running") else {}


def wait(condition, timeout: float, what: str, poll: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout:.0f} s")
        time.sleep(poll)


def settle(pid: int, quiet_s: float = 3.0, timeout: float = 600.0) -> float:
    """Wait until the daemon used under 2% of a core for `quiet_s`; return its CPU meanwhile."""
    start = last = cpu_s(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = cpu_s(pid)
        if now - last < 0.02 * quiet_s:
            break
        last = now
    return round(cpu_s(pid) - start, 2)


def one_round(name: str, exe: str, args: argparse.Namespace, merge_exe: str) -> dict:
    vault = args.folder / "vault"
    env = {**os.environ, "HOME": str(args.folder / "home")}
    for var in ("PYTHONPATH", "MEMSTORE_NO_DAEMON", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    run(exe, ["daemon", "--stop", "--vault", str(vault)], env)
    index = vault / ".memstore" / "index"
    shutil.rmtree(index)
    shutil.copytree(args.pristine, index, symlinks=True)
    run(exe, ["search", args.query[0], "--vault", str(vault)], env)  # starts the daemon
    wait(lambda: bool(status(exe, vault, env).get("warmed")), 1800, "the warm-up")
    pid = int(status(exe, vault, env)["pid"])
    out: dict = {"code": name, "warm_cpu_s": round(cpu_s(pid), 1)}
    settle(pid)
    merged = subprocess.run(
        [merge_exe, "-c", MERGE, str(vault)],
        env={**env, "PYTHONPATH": args.merge_code},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if merged.returncode:
        raise RuntimeError(merged.stderr)
    out["merge"] = merged.stdout.strip()
    out["daemon_cpu_after_swap_s"] = settle(pid)
    for q in args.query:
        before = cpu_s(pid)
        wall, _ = run(exe, ["search", q, "--vault", str(vault)], env)
        out[f"first {q!r}"] = {
            "wall_ms": round(wall, 1),
            "daemon_cpu_ms": round((cpu_s(pid) - before) * 1000),
        }
    for q in args.query:
        before = cpu_s(pid)
        wall, _ = run(exe, ["search", q, "--vault", str(vault)], env)
        out[f"again {q!r}"] = {
            "wall_ms": round(wall, 1),
            "daemon_cpu_ms": round((cpu_s(pid) - before) * 1000),
        }
    out["load"] = round(os.getloadavg()[0], 1)
    run(exe, ["daemon", "--stop", "--vault", str(vault)], env)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--pristine", type=Path, required=True, help="a copy of .memstore/index")
    parser.add_argument("--code", action="append", required=True, help="NAME=EXE (repeat)")
    parser.add_argument("--query", action="append", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--merge-code", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    codes = [spec.partition("=")[::2] for spec in args.code]
    results = []
    for n in range(args.rounds):
        for name, exe in codes if n % 2 == 0 else codes[::-1]:
            print(
                f"{time.strftime('%H:%M:%S')} round {n + 1}: {name} …", file=sys.stderr, flush=True
            )
            results.append(one_round(name, exe, args, sys.executable))
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
