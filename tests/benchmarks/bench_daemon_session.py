"""The daemon through a working session on kept vaults (issue 39 part 5: the daemon at a million).

For each vault, phase by phase and the vaults taking turns (one load for all): the daemon
started the way a session starts it (a first `memstore search` with none running), when it
answers and when its warm-up is done; CLI searches through it (client wall); MCP
`memory_recall` through `memstore serve` (the real mcp client; serve hands each call to the
daemon); CLI adds through it; then idle while its watcher ticks (`tidy`: counters, background
segment merges). The daemon's RSS is sampled every second throughout (peak = VmHWM).

    python tests/benchmarks/bench_daemon_session.py --exe EXE \\
        --vault 1m=/tmp/daemon1m-1m:/tmp/recall1m2-q1m.json \\
        --vault 100k=/tmp/daemon1m-100k:/tmp/recall1m2-q100000.json --idle 360 --json OUT

Each vault folder holds `vault/` and `home/` (a bench_scale.py --keep run, or a copy of one);
the query file is bench_recall_scale.py's --query-cache. EXE runs memstore. The vaults are
written (adds, counters): use copies.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf
import bench_mcp
from bench_scale import mcp_recalls, resident

TOPICS = ("retry budget", "cache eviction", "deploy window", "queue depth", "token lifetime")


class Run:
    """One vault's daemon through the session."""

    def __init__(self, name: str, folder: Path, queries: list[bf.Query], exe: str) -> None:
        self.name, self.folder, self.queries, self.exe = name, folder, queries, exe
        self.root = folder / "vault"
        self.env = {**os.environ, "HOME": str(folder / "home")}
        for var in ("PYTHONPATH", "MEMSTORE_NO_DAEMON", "PYTHONDONTWRITEBYTECODE"):
            self.env.pop(var, None)
        self.res: dict[str, Any] = {"vault": str(self.root)}
        self.pid: int | None = None
        self.samples: list[tuple[float, float]] = []  # (seconds since start, RSS MiB)
        self._stop = threading.Event()
        self._t0 = time.monotonic()

    def cli(self, *args: str, timeout: float = 600) -> tuple[float, int]:
        t = time.perf_counter()
        done = subprocess.run(
            [self.exe, *args], env=self.env, cwd="/tmp", capture_output=True, timeout=timeout
        )
        return (time.perf_counter() - t) * 1000, done.returncode

    def status(self) -> dict[str, Any] | None:
        done = subprocess.run(
            [self.exe, "status", "--json", "--vault", str(self.root)],
            env=self.env,
            cwd="/tmp",
            capture_output=True,
            timeout=120,
            text=True,
        )
        try:
            found = json.loads(done.stdout)
        except ValueError:
            return None
        return found if isinstance(found, dict) and found.get("running") else None

    def start(self) -> None:
        wall, _rc = self.cli("search", self.queries[0].text, "--vault", str(self.root))
        self.res["first_search_ms"] = round(wall, 1)
        t = time.perf_counter()
        bf.wait_for(lambda: self.status() is not None, 900, f"the {self.name} daemon", 0.2)
        self.res["daemon_answers_after_s"] = round(time.perf_counter() - t, 1)
        self.pid = int((self.status() or {})["pid"])
        self.res["at_first_answer"] = resident(self.pid)
        threading.Thread(target=self._sample, daemon=True).start()
        bf.wait_for(lambda: bool((self.status() or {}).get("warmed")), 1800, "the warm-up", 1.0)
        self.res["warmed_after_s"] = round(time.perf_counter() - t, 1)
        self.res["when_warmed"] = resident(self.pid)

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            rss = resident(self.pid or 0).get("rss_mib")
            if rss is None:
                return
            self.samples.append((round(time.monotonic() - self._t0, 1), rss))

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def searches(self, count: int) -> None:
        argvs = [("search", q.text, "--vault", str(self.root)) for q in self.queries[1 : count + 1]]
        walls = [self.cli(*argv)[0] for argv in argvs]
        if walls:  # --searches 0: nothing to sum up
            self.res["cli_search_ms"] = bf.summary(walls)

    def recalls(self, count: int, warmup: int, label: str) -> None:
        params = bench_mcp.server_params(self.exe, self.root, self.env, Path("/tmp"))
        cpu = self.cpu_s()
        found = asyncio.run(mcp_recalls(params, self.queries[:count], warmup, 900))
        found["daemon_cpu_s"] = round(self.cpu_s() - cpu, 2)
        self.res[f"mcp_recall_{label}"] = found

    def adds(self, count: int) -> None:
        walls = []
        stamp = int(time.time())
        for n in range(count):
            text = f"the {TOPICS[n % 5]} of the bench{stamp} service is {n + 3} after change {n}"
            wall, rc = self.cli("add", text, "-w", "webshop", "--vault", str(self.root))
            if rc:
                raise RuntimeError(f"add failed ({rc}) on {self.name}")
            walls.append(wall)
        if walls:  # --adds 0: nothing to sum up
            self.res["cli_add_ms"] = bf.summary(walls)

    def idle(self, seconds: float) -> None:
        cpu = self.cpu_s()
        self.res["before_idle"] = resident(self.pid or 0)
        time.sleep(seconds)
        self.res["idle_cpu_s"] = round(self.cpu_s() - cpu, 2)
        self.res["after_idle"] = resident(self.pid or 0)

    def stop(self) -> None:
        self.res["daemon_cpu_s"] = round(self.cpu_s(), 1)
        self.res["rss_samples"] = self.samples
        self._stop.set()
        t = time.perf_counter()
        self.cli("daemon", "--stop", "--vault", str(self.root))
        self.res["stop_ms"] = round((time.perf_counter() - t) * 1000, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--exe", required=True, help="the memstore command")
    parser.add_argument(
        "--vault", action="append", required=True, help="NAME=FOLDER:QUERIES (repeat)"
    )
    parser.add_argument("--searches", type=int, default=30)
    parser.add_argument("--recalls", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--adds", type=int, default=30)
    parser.add_argument("--idle", type=float, default=360.0, help="idle seconds (tidy: 300)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs = []
    for spec in args.vault:
        name, _, rest = spec.partition("=")
        folder, _, qfile = rest.partition(":")
        found = json.loads(Path(qfile).read_text())
        queries = [bf.Query(text, kind) for text, kind in found["queries"]]
        runs.append(Run(name, Path(folder), queries, args.exe))
    load: list[float] = [round(os.getloadavg()[0], 1)]

    def phase(label: str, step: Any) -> None:
        for run in runs:
            print(f"{time.strftime('%H:%M:%S')} {run.name}: {label} …", file=sys.stderr, flush=True)
            step(run)
            load.append(round(os.getloadavg()[0], 1))

    try:
        phase("start", Run.start)
        phase("CLI searches", lambda r: r.searches(args.searches))
        phase("MCP recalls", lambda r: r.recalls(args.recalls, args.warmup, "first"))
        phase("CLI adds", lambda r: r.adds(args.adds))
        phase("MCP recalls again", lambda r: r.recalls(args.recalls, args.warmup, "after_adds"))
        # idle together: each daemon's watcher ticks on its own clock
        print(f"{time.strftime('%H:%M:%S')} idle {args.idle:.0f} s …", file=sys.stderr, flush=True)
        threads = [threading.Thread(target=r.idle, args=(args.idle,)) for r in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(args.idle + 120)
        load.append(round(os.getloadavg()[0], 1))
        phase(
            "MCP recalls after idle", lambda r: r.recalls(args.recalls, args.warmup, "after_idle")
        )
    finally:
        for run in runs:
            if run.pid is not None:
                run.stop()
    out = {"load": load, **{run.name: run.res for run in runs}}
    for run in runs:
        brief = {k: v for k, v in run.res.items() if k != "rss_samples"}
        peak = max((rss for _, rss in run.samples), default=None)
        print(json.dumps({run.name: {**brief, "sampled_peak_rss_mib": peak}}))
    print(json.dumps({"load": load}))
    if args.json:
        args.json.write_text(json.dumps(out) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
