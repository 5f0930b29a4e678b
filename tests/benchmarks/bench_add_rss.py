"""A daemon's memory and CPU across a burst of adds, for two versions of the code, interleaved.

For each round and each `--code LABEL=DIR` (a source tree put first on PYTHONPATH; `.` for
this checkout), on the same vault: start `memstore daemon`, wait until it answered its first
catch-up and finished its warm-up (`warmed`) and settled, reset its peak RSS
(/proc/PID/clear_refs), then run `--adds` CLI adds through it (one process each,
`-w webshop`), sampling its RSS every 10 ms, wait
`--quiet` seconds (git's index is staged once writes pause), and stop it. Printed per
version: RSS when ready, the highest RSS sampled during the adds and the quiet time, the
kernel's peak (VmHWM) since the reset, RSS at the end, the daemon's CPU per add, and the
client's wall p50 / p95.

    python tests/benchmarks/bench_add_rss.py --vault /tmp/v100k/vault \\
        --code main=/tmp/main-src --code branch=. --adds 40 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf

READY = (
    "import sys\nfrom memstore.ops import client\nr = client.status(sys.argv[1])\n"
    "d = (r.data or {}) if r is not None else {}\n"
    "print(bool(d.get('last_catch_up')) and d.get('warmed', True) is not False)"
)
STOP = "import sys\nfrom memstore.ops import client\nclient.stop(sys.argv[1])"


def asked(env: dict[str, str], home: Path, script: str, vault: Path) -> str:
    """Run a client call in a process of the daemon's own code (identities must match)."""
    done = subprocess.run([sys.executable, "-c", script, str(vault)], env=env, cwd=home,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def one_round(vault: Path, source: Path, adds: int, quiet: float, n0: int) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="bench-add-rss-"))
    env = bf.subprocess_env(home)
    env["PYTHONPATH"] = str(source)
    memstore = [sys.executable, "-m", "memstore"]
    daemon = subprocess.Popen(
        [*memstore, "daemon", "--vault", str(vault), "--idle-exit", "900"], env=env, cwd=home,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=(home / "daemon.log").open("w"),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while True:
            if asked(env, home, READY, vault) == "True":
                break
            if time.monotonic() > deadline or daemon.poll() is not None:
                log = (home / "daemon.log").read_text(errors="replace")[-500:]
                raise RuntimeError(f"the daemon did not answer: {log}")
            time.sleep(0.1)
        settle(daemon.pid)
        add = [*memstore, "add", "--vault", str(vault), "-w", "webshop"]
        subprocess.run(
            [*add, f"rss warm-up add {n0} {time.time_ns()}"], env=env, cwd=home, check=True
        )
        time.sleep(quiet)  # the warm-up's own staging, before the measurement
        ready = rss_kib(daemon.pid)
        Path(f"/proc/{daemon.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
        samples: list[int] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(rss_kib(daemon.pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        cpu0 = cpu_ms(daemon.pid)
        walls = []
        for n in range(adds):
            text = f"rss add {n0 + n}: the deploy {time.time_ns()} waits for review {n}"
            start = time.perf_counter()
            subprocess.run([*add, text], env=env, cwd=home, check=True, capture_output=True)
            walls.append((time.perf_counter() - start) * 1000)
        cpu = cpu_ms(daemon.pid) - cpu0
        time.sleep(quiet)
        stop.set()
        sampler.join()
        return {
            "ready": ready / 1024,
            "sampled_peak": max(samples) / 1024,
            "hwm": rss_kib(daemon.pid, "VmHWM") / 1024,
            "end": rss_kib(daemon.pid) / 1024,
            "cpu_per_add": cpu / adds,
            "p50": statistics.median(walls),
            "p95": pct(walls, 0.95),
        }
    finally:
        asked(env, home, STOP, vault)  # by the same code: another version's client stops it
        daemon.wait(60)


def settle(pid: int, bound_s: float = 120.0) -> None:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        before = cpu_ms(pid)
        time.sleep(0.5)
        if cpu_ms(pid) - before < 25:
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--code", action="append", required=True, help="LABEL=DIR")
    parser.add_argument("--adds", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quiet", type=float, default=3.0)
    args = parser.parse_args()
    codes = {c.split("=", 1)[0]: Path(c.split("=", 1)[1]).resolve() for c in args.code}
    mark = bf.cpu_mark()
    results: dict[str, list[dict[str, float]]] = {label: [] for label in codes}
    n0 = 0
    for _ in range(args.rounds):
        for label, source in codes.items():
            results[label].append(one_round(args.vault, source, args.adds, args.quiet, n0))
            n0 += args.adds + 1
    print(f"{args.adds} CLI adds through a daemon, {args.rounds} rounds interleaved (MiB, ms)")
    keys = ("ready", "sampled_peak", "hwm", "end", "cpu_per_add", "p50", "p95")
    print(f"  {'code':8} " + " ".join(f"{k:>13}" for k in keys))
    for label, rows in results.items():
        for row in rows:
            print(f"  {label:8} " + " ".join(f"{row[k]:13.1f}" for k in keys))
    print(f"other processes' load during the run: {bf.foreign_load(mark)}")


if __name__ == "__main__":
    main()
