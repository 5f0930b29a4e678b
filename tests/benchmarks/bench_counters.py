#!/usr/bin/env python
"""Recall counters before and after issue 39, in one run: git growth and files written per
1,000 recalls, `daemon --stop` after a working session, readers right after a flush.

A standalone script (nothing here is named test_*). Build a vault once (bench_read_path),
extract the old code, then run; each code tree works on its own copy of the vault:

    python tests/benchmarks/bench_read_path.py build /tmp/v10k 10000
    python tests/benchmarks/bench_read_path.py reindex /tmp/v10k
    mkdir -p /tmp/counters-before && git archive 4530b3c memstore index | tar -x -C /tmp/counters-before
    python tests/benchmarks/bench_counters.py /tmp/v10k --before /tmp/counters-before

The working session is simulated with a clock the script moves: 1,000 recalls over an
8-hour day (hits of 60 real searches, repeated with a Zipf-like skew, as an agent returns to
the same few topics), the daemon's periodic flush every 5 minutes, the daemon stopped every
2 hours, and one sync's flush at the end. `daemon --stop` is timed as a process (the CLI's
own start included) with 800 memories' counters pending and with none; readers are fresh
in-process stores (catch-up + search, CPU time) right after an 800-file flush and without one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
AFTER = HERE.parents[2]
QUERY_WORDS = (
    "nginx upload limit", "pnpm lockfile", "postgres migration timeout", "redis cache eviction",
    "deploy staging approval", "jwt token expiry", "docker build cache", "flaky test retry",
    "kafka consumer lag", "terraform state lock", "s3 bucket policy", "oauth callback url",
    "webpack bundle size", "grpc deadline exceeded", "cron job timezone", "ssl certificate renew",
)  # fmt: skip
RECALLS, DAY_S, TICK_S, STOP_EVERY_S, PENDING_AT_STOP = 1000, 8 * 3600, 300, 2 * 3600, 800


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


def settings(root: Path) -> Any:
    from memstore.core.config import Settings

    return Settings(vault=root, source="bench", session="bench", host="bench")


def git_figures(root: Path, since: str) -> dict[str, int]:
    def out(*args: str, data: str | None = None) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, input=data, capture_output=True, text=True, check=True
        ).stdout

    objects = "".join(
        f"{line.split()[0]}\n"
        for line in out("rev-list", "--objects", f"{since}..HEAD").splitlines()
    )
    sizes = out("cat-file", "--batch-check=%(objectsize)", data=objects) if objects else ""
    disk = sum(f.stat().st_size for f in (root / ".git").rglob("*") if f.is_file())
    return {
        "commits": len(out("rev-list", f"{since}..HEAD").split()),
        "object_bytes": sum(int(s) for s in sizes.split()),
        "git_disk_bytes": disk,
    }


def session(root: Path) -> dict[str, Any]:
    """1,000 recalls over a simulated day; return git growth and files written."""
    import random

    from memstore.service.store import Store

    try:
        from memstore.vault.usage import FLUSH_EVERY_S as every  # after issue 39
    except ImportError:
        every = None
    clock = Clock()
    with Store.open(settings(root), clock=clock) as store:
        store.catch_up()
        rng = random.Random(39)
        queries = [f"{a} {b.split()[0]}" for a in QUERY_WORDS for b in QUERY_WORDS][::4][:60]
        hits = [[h.id for h in store.search(q, workspace=None, k=5).hits] for q in queries]
        hits = [h for h in hits if h]
        start = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        disk = git_figures(root, start)["git_disk_bytes"]
        written, flushes, cpu = 0, 0, 0.0
        step = DAY_S / RECALLS
        next_tick, next_stop = TICK_S, STOP_EVERY_S
        elapsed = 0.0

        def flush(all_pending: bool) -> None:
            nonlocal written, flushes, cpu
            began = time.process_time()
            n = store.flush_usage() if all_pending or every is None else store.flush_usage(every)
            cpu += time.process_time() - began
            written += n
            flushes += bool(n)

        for _ in range(RECALLS):
            index = min(int(rng.paretovariate(1.2)) - 1, len(hits) - 1)
            store.usage.record(hits[index], store.writer.timestamp())
            elapsed += step
            clock.now += timedelta(seconds=step)
            if elapsed >= next_tick:  # the daemon's watcher: store.tidy's flush
                flush(all_pending=False)
                next_tick += TICK_S
            if elapsed >= next_stop:  # before issue 39 the daemon's exit wrote all pending
                if every is None:
                    flush(all_pending=True)
                next_stop += STOP_EVERY_S
        flush(all_pending=True)  # the day's sync
        figures = git_figures(root, start)
    figures["git_disk_bytes"] -= disk
    return {**figures, "files_written": written, "flush_cpu_s": round(cpu, 2)}


def pend(root: Path, count: int) -> None:
    """Count one recall of `count` memories (a working session's worth), unwritten."""
    from memstore.service.store import Store

    with Store.open(settings(root)) as store:
        entries = store.indexer.manifest.entries()
        step = max(1, len(entries) // count)
        store.usage.record([e.id for e in entries[::step][:count]], store.writer.timestamp())


def flush_all(root: Path) -> int:
    from memstore.service.store import Store

    with Store.open(settings(root)) as store:
        return store.flush_usage()


def stop_time(root: Path, env: dict[str, str]) -> dict[str, Any]:
    """Start a daemon, wait until it answers, and time `memstore daemon --stop` (a process)."""
    sock = root / ".memstore" / "daemon.sock"
    command = [sys.executable, "-m", "memstore", "daemon", "--vault", str(root)]
    # cwd: `python -m` puts the current folder first on sys.path, before PYTHONPATH
    daemon = subprocess.Popen(
        [*command, "--idle-exit", "600"], env=env, stderr=subprocess.DEVNULL, cwd=root
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(sock))
            break
        except OSError:
            time.sleep(0.05)
    head = _head(root)
    began = time.perf_counter()
    said = subprocess.run([*command, "--stop"], env=env, check=True, capture_output=True, cwd=root)
    took = time.perf_counter() - began
    daemon.wait(timeout=120)
    if b"stopped the daemon" not in said.stdout:
        raise SystemExit(f"daemon --stop found no daemon: {said.stdout!r}")
    return {"s": round(took, 2), "wrote_files": _head(root) != head}


def _head(root: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def readers(root: Path, runs: int = 8) -> dict[str, Any]:
    """Fresh stores, one after another: catch-up + search CPU ms, folders listed again."""
    from memstore.service.store import Store
    from memstore.vault.files import Vault

    listed: list[str] = []
    original = Vault.scan_folder

    def scan_folder(self: Vault, folder: str, *args: Any, **kwargs: Any) -> Any:
        listed.append(folder)
        return original(self, folder, *args, **kwargs)

    Vault.scan_folder = scan_folder  # type: ignore[method-assign]
    cpu, folders = [], []
    for n in range(runs):
        listed.clear()
        began = time.process_time()
        with Store.open(settings(root)) as store:
            store.search(QUERY_WORDS[n % len(QUERY_WORDS)], workspace=None, k=5)
        cpu.append(round(1000 * (time.process_time() - began)))
        folders.append(len(listed))
    return {"cpu_ms": cpu, "folders_listed": folders}


def worker(root: Path) -> dict[str, Any]:
    """Everything for the code this process imports, on its own copy `root`."""
    env = {k: v for k, v in os.environ.items() if k != "MEMSTORE_NO_DAEMON"}
    figures: dict[str, Any] = {"session": session(root)}
    pend(root, PENDING_AT_STOP)
    figures["stop_pending"] = stop_time(root, env)
    flush_all(root)  # whatever the stop left
    figures["stop_nothing_pending"] = stop_time(root, env)
    figures["readers_quiet"] = readers(root)
    pend(root, PENDING_AT_STOP)
    began = time.perf_counter()
    figures["flush_800_s"] = (flush_all(root), round(time.perf_counter() - began, 1))
    figures["readers_right_after_flush"] = readers(root)
    return figures


def run_tree(code: Path, vault: Path, work: Path, label: str) -> dict[str, Any]:
    copy = work / label
    shutil.copytree(vault, copy, symlinks=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, str(HERE), "--worker", str(copy)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{label} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def per_thousand(figures: dict[str, Any]) -> dict[str, Any]:
    s = figures["session"]
    return {k: round(v * 1000 / RECALLS) if isinstance(v, int) else v for k, v in s.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--before", type=Path, help="a tree of the old code (memstore/, index/)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.vault)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-counters-") as tmp:
        trees = [("after", AFTER)] + ([("before", args.before)] if args.before else [])
        results = {label: run_tree(code, args.vault, Path(tmp), label) for label, code in trees}
    print(f"vault {args.vault}; {RECALLS} recalls over {DAY_S // 3600} h, flush tick {TICK_S} s")
    for label, figures in results.items():
        print(f"\n[{label}] per 1,000 recalls: {per_thousand(figures)}")
        for key, value in figures.items():
            if key != "session":
                print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
