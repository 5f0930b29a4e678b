"""A session's first CLI calls without a daemon: `memstore search`, `add`, the prompt hook (issue 39).

Runs each command as its own process (`MEMSTORE_NO_DAEMON=1`, byte code allowed), one
version of the code after the other, round by round, so every version meets the same
machine state; `python -c pass` runs beside them as the interpreter's floor. Reports the
median and minimum of each process's CPU time (user + system, from the kernel's rusage of
the waited child) and its wall time. The first round warms the page cache and is dropped.

    git archive main memstore index | tar -x -C /tmp/first-base     # the code before
    env -u PYTHONDONTWRITEBYTECODE python tests/benchmarks/bench_first_call.py \\
        --vault /tmp/first-100k --runs 10 --code main=/tmp/first-base --code branch= search add

`--code NAME=DIR` puts DIR first on PYTHONPATH (empty: the installed memstore); DIR may
instead be another installation's `memstore` executable (its venv, say one `pip install .`
made, as pipx does: non-editable), run as it is. Each add
writes one memory to the vault (in workspace `webshop`); `hook` is the prompt hook with
an agent's payload on stdin (its work runs in a child the hook waits for: counted). `--phases` instead runs each
command's steps in one process per run (as the launcher does, collector paused while
importing, the launcher's pattern and generated-code caches installed where that version
has them) and reports the CPU of each: the interpreter, launcher and client's imports,
the store's, the command.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUERIES = (
    "postgres connection pool timeout",
    "deploy pipeline rollback",
    "redis cache eviction",
    "auth token refresh",
    "billing invoice retry",
    "mobile app crash login",
    "docs site build",
    "kafka consumer lag",
    "terraform state lock",
    "webshop checkout",
    "rate limit api gateway",
    "database migration failed",
)


def command(op: str, exe: str, vault: str, name: str, round_: int) -> list[str]:
    query = QUERIES[round_ % len(QUERIES)]
    if op == "search":
        return [exe, "search", query, "--vault", vault]
    if op == "add":
        text = f"first-call timing {name} {round_} {time.time_ns()}: the {query} needs a check"
        return [exe, "add", text, "-w", "webshop", "--vault", vault]
    if op == "hook":  # the prompt hook: its payload (payload_of) on stdin
        return [exe, "hook", "prompt", "--vault", vault]
    if op == "pass":
        return [sys.executable, "-c", "pass"]
    raise ValueError(op)


def payload_of(op: str, round_: int) -> bytes:
    """What the command reads on stdin: an agent's prompt for the hook, else nothing."""
    if op != "hook":
        return b""
    prompt = f"why does the {QUERIES[round_ % len(QUERIES)]} keep failing?"
    return json.dumps({"prompt": prompt, "cwd": "/"}).encode()


# One no-daemon command in this process, its steps timed (the launcher's order).
PHASES = """
import gc, json, os, sys, time
T = time.process_time
started = T()
from memstore import launcher  # its caches, where the version has them (as it runs them)
for cache in ("_cache_patterns", "_cache_generated_code"):
    getattr(launcher, cache, lambda: None)()
gc.disable()
from memstore.ops import client, lean, registry
options = T()
import memstore.service.store
gc.enable()
gc.freeze()
imported = T()
op, argv = sys.argv[1], json.loads(sys.argv[2])
request = client.Request(op, argv, os.getcwd(), dict(os.environ), b"")
opener = getattr(lean, "open_one_shot", lean.open_in_process)  # the launcher's
reply = registry.RUNNERS[registry.Op(op)](request, opener)
done = T()
print(json.dumps({"client": options - started, "store": imported - options,
                  "command": done - imported, "modules": len(sys.modules)}))
"""


def phases(op: str, vault: str, name: str, round_: int, env: dict[str, str]) -> dict[str, float]:
    """CPU ms of each step of one command run in a fresh process (PHASES)."""
    argv = command(op, "", vault, name, round_)[1:]
    done = subprocess.run(
        [sys.executable, "-c", PHASES, op, json.dumps(argv[1:])],
        env={**env, "OPENBLAS_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: v * 1000 if k != "modules" else v for k, v in found.items()}


def timed(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[float, float]:
    """Run one process (and what it waits for); return its CPU and wall time in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, input=stdin)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[1:3]} failed: {done.stderr.decode()[-600:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu * 1000, wall * 1000


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--vault", required=True, type=Path)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--code", action="append", required=True, help="NAME=DIR (DIR may be empty)")
    p.add_argument("--exe", default=str(Path(sys.executable).with_name("memstore")))
    p.add_argument("--json", type=Path)
    p.add_argument("--phases", action="store_true", help="each step's CPU, in one process")
    p.add_argument("ops", nargs="+", choices=("search", "add", "hook"))
    args = p.parse_args()
    codes = [tuple(c.split("=", 1)) for c in args.code]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["MEMSTORE_NO_DAEMON"] = "1"
    if args.phases and "hook" in args.ops:
        p.error("--phases times search and add (a hook's work runs in a child process)")
    if args.phases:
        for op in args.ops:
            for name, path in codes:
                code_env = {**env, "PYTHONPATH": path} if path else env
                steps = [phases(op, str(args.vault), name, r, code_env) for r in range(args.runs)]
                medians = {k: statistics.median([step[k] for step in steps]) for k in steps[0]}
                print(f"{op} {name}: " + ", ".join(f"{k} {v:.0f}" for k, v in medians.items()))
        return 0
    runs: dict[str, list[tuple[float, float]]] = {}
    for round_ in range(args.runs + 1):
        for op in args.ops:
            for name, path in codes:
                exe, path = (path, "") if Path(path).is_file() else (args.exe, path)
                code_env = {**env, "PYTHONPATH": path} if path else env
                argv = command(op, exe, str(args.vault), name, round_)
                figures = timed(argv, code_env, payload_of(op, round_))
                if round_:
                    runs.setdefault(f"{op} {name}", []).append(figures)
        figures = timed(command("pass", "", "", "", round_), env)
        if round_:
            runs.setdefault("python -c pass", []).append(figures)
    load = os.getloadavg()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}")
    print(f"{'':24} {'CPU median':>10} {'(min)':>6} {'wall median':>12} {'(min)':>7}  n")
    for label, found in runs.items():
        cpu, wall = [f[0] for f in found], [f[1] for f in found]
        print(
            f"{label:24} {statistics.median(cpu):8.0f} ms {min(cpu):4.0f} "
            f"{statistics.median(wall):10.0f} ms {min(wall):5.0f}  {len(found)}"
        )
    if args.json:
        args.json.write_text(json.dumps({"load": load, "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
