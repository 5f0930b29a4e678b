"""An add and its contradiction hint, two codes interleaved in one run on one vault (issue 39).

For each round and each `--code NAME=PATH` (PATH first on PYTHONPATH; '' this checkout), on
the same vault, in turn (every other round in the other order):

- in process (a child of that code): `--adds` new memories, each `Store.add` timed (wall and
  CPU) beside the floor (add_floor.floor_commit: a libgit2 blob + trees + commit of the same
  file); then the hint as the code shows it: where `Store.hint` exists, asked after the add
  (its own cost), else the add's own hint (`Writer._contradicted`, timed inside the add);
- `--cli N`: `memstore add` through a running daemon of that code (client wall and CPU from
  wait4, the daemon's CPU per add from /proc), hint included (the CLI prints it);
- `--mcp N`: `memory_add` through `memstore serve` of that code over the real MCP client
  (round trip, hint included; the server's CPU per add from /proc).

Every figure is p50 / p95 over all rounds; the machine's load from other processes is
printed beside.

    cd /tmp && env -u PYTHONDONTWRITEBYTECODE python .../bench_add_ab.py --vault V \\
        --code main=/tmp/add3-main --code branch= --rounds 4 --adds 50 --cli 10 --mcp 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import add_floor
import bench_foundation as bf

HERE = Path(__file__).resolve()


def child(root: Path, adds: int) -> None:
    """In process: print JSON lists of per-add ms (add wall/CPU, hint CPU, floor CPU)."""
    import pygit2

    from memstore.core.config import Settings
    from memstore.service import writer as writer_module
    from memstore.service.store import Store

    inside: dict[str, float] = {}
    own = getattr(writer_module.Writer, "_contradicted", None)
    if own is not None:  # the add looks for its hint itself: time that part

        def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return own(self, *args, **kwargs)
            finally:
                inside["hint"] = inside.get("hint", 0.0) + time.process_time() - start

        writer_module.Writer._contradicted = timed  # type: ignore[attr-defined]
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    rng = random.Random(time.time_ns())
    out: dict[str, list[float]] = {k: [] for k in ("add_wall", "add_cpu", "hint", "floor")}
    repo = pygit2.Repository(str(root))
    with Store.open(settings) as store:
        store.catch_up()
        warm = f"warm up the index and the repository {rng.random()}"
        warmed = store.add(warm, workspace="webshop")
        if hasattr(store, "hint"):
            store.hint(warmed, warm)  # its first imports, as the add's own hint paid them
        for n in range(adds):
            body = add_floor.text(rng, n)
            inside.clear()
            wall, cpu, result = add_floor.measured(
                lambda body=body: store.add(body, workspace="webshop", keywords=("bench",))
            )
            if result.status != "added":
                raise RuntimeError(f"add {n} was {result.status}")
            out["add_wall"].append(wall)
            out["add_cpu"].append(cpu)
            if hasattr(store, "hint"):
                _, hint_cpu, _ = add_floor.measured(lambda r=result, b=body: store.hint(r, b))
                out["hint"].append(hint_cpu)
            else:
                out["hint"].append(inside.get("hint", 0.0) * 1000)
            data = (root / result.path).read_bytes()
            _, floor_cpu, _ = add_floor.measured(
                lambda p=result.path, d=data: floor_commit(repo, p, d)
            )
            out["floor"].append(floor_cpu)
    repo.references.delete(add_floor.FLOOR_REF)
    print(json.dumps(out))


def floor_commit(repo: Any, path: str, data: bytes) -> None:
    """A bare libgit2 commit of one new file beside `path` (the add's: every tree on its way,
    a month's or a day's folder alike), on add_floor.FLOOR_REF, parented on HEAD."""
    import pygit2

    *folders, name = path.split("/")
    name = f"floor-{time.time_ns()}-{name}"
    head = repo.head.peel(pygit2.Commit)
    trees = [head.tree]
    for part in folders:
        parent = trees[-1]
        trees.append(repo[parent[part].id] if parent is not None and part in parent else None)
    entry, mode, child = repo.create_blob(data), pygit2.enums.FileMode.BLOB, name
    for depth in range(len(folders), -1, -1):  # the file's folder first, the root last
        tree = trees[depth]
        builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        builder.insert(child, entry, mode)
        entry, mode = builder.write(), pygit2.enums.FileMode.TREE
        child = folders[depth - 1] if depth else ""
    signature = pygit2.Signature("bench", "bench@example.invalid")
    ref = add_floor.FLOOR_REF
    parents = [repo.references[ref].target] if ref in repo.references else [head.id]
    repo.create_commit(ref, signature, signature, "floor", entry, parents)


def code_env(path: str, home: Path) -> dict[str, str]:
    env = bf.subprocess_env(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (path, str(HERE.parent)) if p)
    return env


def in_process(root: Path, adds: int, path: str, home: Path) -> dict[str, list[float]]:
    argv = [sys.executable, str(HERE), "--child", "--vault", str(root), "--adds", str(adds)]
    done = subprocess.run(
        argv, env=code_env(path, home), cwd=home, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.splitlines()[-1])


def memstore_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "memstore", *args]


def cli_adds(
    root: Path, runs: int, path: str, home: Path, gap: float = 0.0
) -> dict[str, list[float]]:
    """`memstore add` through a daemon of this code: client wall/CPU, daemon CPU per add
    (and with `gap`, its CPU from the add until `gap` seconds after it: its watcher's
    reaction, and any heap settle falling within)."""
    env = code_env(path, home)
    # asked by a process of the daemon's code: a client of other code makes a daemon stop
    ask = "from memstore.ops import client;import sys;r=client.status(sys.argv[1]);"
    ask += "print(int(r is not None and bool((r.data or {}).get('last_catch_up'))))"

    def ready() -> bool:
        done = subprocess.run([sys.executable, "-c", ask, str(root)], env=env, cwd=home,
                              capture_output=True, text=True, check=False)  # fmt: skip
        return done.stdout.strip() == "1"

    rng = random.Random(time.time_ns())
    daemon = subprocess.Popen(
        memstore_argv("daemon", "--vault", str(root), "--idle-exit", "900"), env=env, cwd=home,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=(home / "daemon.log").open("ab"),
    )  # fmt: skip
    out: dict[str, list[float]] = {"wall": [], "cpu": [], "daemon": [], "daemon_after": []}
    try:
        deadline = time.monotonic() + 300
        while not ready():
            if time.monotonic() > deadline or daemon.poll() is not None:
                log = (home / "daemon.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"the daemon did not answer: {log}")
            time.sleep(0.5)
        add_floor.settle(daemon.pid)
        for n in range(2):  # the daemon's first adds open what it needs
            add_floor.run_child(memstore_argv("add", add_floor.text(rng, n), "-w", "webshop",
                                              "--vault", str(root)), env, home)  # fmt: skip
        for n in range(runs):
            before = add_floor.cpu_ticks(daemon.pid)
            argv = memstore_argv(
                "add", add_floor.text(rng, n), "-w", "webshop", "--vault", str(root)
            )
            wall, cpu = add_floor.run_child(argv, env, home)
            out["wall"].append(wall)
            out["cpu"].append(cpu)
            out["daemon"].append(add_floor.cpu_ticks(daemon.pid) - before)
            if gap > 0:
                time.sleep(gap)  # pacing the adds as a person's, not waiting for a result
                out["daemon_after"].append(add_floor.cpu_ticks(daemon.pid) - before)
    finally:
        stop = memstore_argv("daemon", "--stop", "--vault", str(root))
        subprocess.run(stop, env=env, cwd=home, capture_output=True, check=False)
        daemon.wait(60)
    return out


def mcp_adds(root: Path, runs: int, path: str, home: Path) -> dict[str, list[float]]:
    """`memory_add` over the real MCP client to `memstore serve` of this code."""
    from mcp import Client, StdioServerParameters

    env = code_env(path, home)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstore", "serve", "--vault", str(root), "--source", "bench"],
        env=env,
        cwd=str(home),
    )
    rng = random.Random(time.time_ns())
    out: dict[str, list[float]] = {"wall": [], "server": []}

    def server_pid() -> int:
        wanted = f"serve\0--vault\0{root}\0".encode()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    cmd = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                if wanted in cmd:
                    return int(entry.name)
        raise RuntimeError("no memstore serve process")

    async def session() -> None:
        async with Client(params) as client:
            pid = server_pid()
            add_floor.settle(pid)
            for n in range(2):  # its first adds open what it needs, then its catch-ups end
                content = add_floor.text(rng, n)
                await client.call_tool("memory_add", {"content": content, "workspace": "webshop"})
            add_floor.settle(pid)
            for n in range(runs):
                args = {"content": add_floor.text(rng, n), "workspace": "webshop"}
                before = add_floor.cpu_ticks(pid)
                start = time.perf_counter()
                reply = await client.call_tool("memory_add", args)
                out["wall"].append((time.perf_counter() - start) * 1000)
                out["server"].append(add_floor.cpu_ticks(pid) - before)
                if reply.is_error:
                    raise RuntimeError(f"memory_add failed: {reply.content}")

    asyncio.run(session())
    return out


def cell(values: list[float]) -> str:
    return add_floor.cell(values) if values else "     -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--code", action="append", default=[], help="NAME=PATH ('' this one)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--adds", type=int, default=50, help="in-process adds a round")
    parser.add_argument("--cli", type=int, default=0, help="CLI adds through a daemon a round")
    parser.add_argument("--mcp", type=int, default=0, help="MCP memory_add calls a round")
    parser.add_argument(
        "--cli-gap",
        type=float,
        default=0.0,
        help="seconds idle after each CLI add, its daemon's CPU counted until then too",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.vault, args.adds)
        return
    codes = dict(spec.split("=", 1) for spec in args.code) or {"this": ""}
    home = Path(tempfile.mkdtemp(prefix="bench-add-ab-"))
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in codes}
    mark = bf.cpu_mark()
    for round_ in range(args.rounds):
        # every other round in the other order: what one code leaves running (its daemon's
        # git-index staging, a day folder grown) falls on each code alike
        order = list(codes.items())
        for name, path in order[::-1] if round_ % 2 else order:
            parts = [("in", in_process(args.vault, args.adds, path, home))]
            if args.cli:
                parts.append(("cli", cli_adds(args.vault, args.cli, path, home, args.cli_gap)))
            if args.mcp:
                parts.append(("mcp", mcp_adds(args.vault, args.mcp, path, home)))
            for prefix, found in parts:
                for key, values in found.items():
                    figures[name].setdefault(f"{prefix}.{key}", []).extend(values)
            print(
                f"round {round_ + 1} {name} done, load so far {bf.foreign_load(mark)}", flush=True
            )
        report(codes, figures)  # after every round: a run stopped early still says something
    print(f"other processes' load during the run: {bf.foreign_load(mark)}")


def report(codes: dict[str, str], figures: dict[str, dict[str, list[float]]]) -> None:
    rows = (
        ("in.add_cpu", "Store.add, CPU (the write; main: with its hint)"),
        ("in.add_wall", "Store.add, wall"),
        ("in.hint", "the hint's own CPU (branch: Store.hint after)"),
        ("in.floor", "floor: libgit2 blob + trees + commit, CPU"),
        ("cli.wall", "CLI add via daemon, client wall"),
        ("cli.cpu", "CLI add via daemon, client CPU"),
        ("cli.daemon", "CLI add via daemon, daemon CPU per add"),
        ("cli.daemon_after", "  the same until --cli-gap s after it"),
        ("mcp.wall", "MCP memory_add round trip, wall"),
        ("mcp.server", "MCP memory_add, server CPU per add"),
    )
    print(f"{'p50 / p95 ms':52}" + "".join(f"{name:>20}" for name in codes))
    for key, label in rows:
        if any(figures[name].get(key) for name in codes):
            cells = "".join(f"{cell(figures[name].get(key, [])):>20}" for name in codes)
            print(f"{label:52}{cells}")
    for name in codes:
        adds, hints = figures[name].get("in.add_cpu", []), figures[name].get("in.hint", [])
        if adds and hints:
            with_hint = [a + h for a, h in zip(adds, hints, strict=True)]
            if not name.startswith("main"):
                print(f"{name}: Store.add + Store.hint CPU {cell(with_hint)}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
