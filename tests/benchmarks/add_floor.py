"""Issue 39's add figures on an existing vault, each beside its reference from the same run.

Run through `bench_add_scale.py --vault PATH [--adds N] [--cli N] [--localmem 'CMD {text}']`
(or this script with the same options).
Every figure is wall and CPU time (this process's, or a child's from `wait4`; a daemon's from
/proc), p50 / p95:

- in-process `Store.add` (a new memory each time, in `webshop`, contradiction hints on)
  alternating with the floor: a bare libgit2 blob + trees + commit of a file of the same size
  at the same depth, on the same repository (committed to refs/bench/floor, removed after,
  so the vault's history is untouched);
- the parts of an add by owner (CPU, p50 and mean);
- with `--cli N`: `memstore add` through a running daemon (client process, and the daemon's
  own CPU per add), `memstore add` with MEMSTORE_NO_DAEMON=1 (and how long after it git's
  index is staged by the child it leaves), `python -c pass`, an FTS5 process inserting one
  row into a table of the vault's texts (what an SQLite memory's CLI add is without its
  embedding), and the `--localmem` command when one is given.

localmem 0.1.2 (PyPI) has no add command (init, serve, stats, ...), and its store loads a
sentence-transformers model from the Hugging Face hub, which this machine cannot reach; pass
`--localmem` where it runs to print it beside the rest.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_foundation as bf
import pygit2

from memstore.core.config import Settings
from memstore.ops import client
from memstore.service.store import Store

# (module, class, method, label): CPU time spent in each during an add, by owner.
PARTS = (
    ("memstore.service.maintenance", "Maintenance", "heal", "lock-time heal (git debris, lag)"),
    ("memstore.catalog.indexer", "Indexer", "catch_up", "index: workspace catch-up"),
    ("memstore.catalog.indexer", "Indexer", "by_hash", "index: duplicate lookup"),
    ("memstore.catalog.indexer", "Indexer", "by_id_prefix", "index: free id lookup"),
    ("memstore.service.writer", "Writer", "_contradicted", "contradiction hint (search)"),
    ("memstore.index.reader", "IndexReader", "_open_searcher", "  of which: searcher opened"),
    ("memstore.catalog.indexer", "Indexer", "record_all", "index: the new document"),
    ("memstore.vault.git", "GitRepo", "commit", "git: blob, trees, commit"),
    ("memstore.vault.git", "GitRepo", "secrets_among", "git: the file's secret check (HEAD)"),
    ("memstore.vault.staging", "IndexStager", "later", "git index: staging scheduled"),
    ("memstore.service.transaction", "Transaction", "note_writing", "write journal (2 writes)"),
    ("memstore.vault.files", "Vault", "write_bytes_atomic", "file: atomic write (fsync)"),
    ("memstore.service.transaction", "Transaction", "commit_edits", "outside-edit check"),
)
FLOOR_REF = "refs/bench/floor"
FTS_ADD = (
    "import sqlite3,sys\n"
    "c=sqlite3.connect(sys.argv[1])\n"
    "c.execute('PRAGMA journal_mode=WAL')\n"
    "with c:\n"
    "    c.execute('INSERT INTO mem VALUES (?,?,?,?)',(sys.argv[2],'webshop',sys.argv[3],''))\n"
    "print('stored',sys.argv[2])\n"
)
Timing = tuple[list[float], list[float]]  # wall ms, CPU ms


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def cell(values: list[float]) -> str:
    return f"{statistics.median(values):6.1f} / {pct(values, 0.95):6.1f}" if values else "-"


def text(rng: random.Random, n: int) -> str:
    words = [rng.choice(bf.TOPICS[t]["words"]) for t in rng.sample(sorted(bf.TOPICS), 4)]
    return f"timed add {n}: {' '.join(words)} behaves differently after the upgrade #{rng.random()}"


def floor_commit(repo: Any, month: str, name: str, data: bytes) -> None:
    """A bare libgit2 commit of one new file at <workspace>/<month>/<name>: blob, the three
    trees on its way, a commit (on FLOOR_REF, parented on HEAD)."""
    head = repo.head.peel(pygit2.Commit)
    blob = repo.create_blob(data)
    trees: list[Any] = [head.tree]
    for part in ("webshop", month):
        parent = trees[-1]
        trees.append(repo[parent[part].id] if parent is not None and part in parent else None)
    month_builder = repo.TreeBuilder(trees[2]) if trees[2] is not None else repo.TreeBuilder()
    month_builder.insert(name, blob, pygit2.enums.FileMode.BLOB)
    ws_builder = repo.TreeBuilder(trees[1]) if trees[1] is not None else repo.TreeBuilder()
    ws_builder.insert(month, month_builder.write(), pygit2.enums.FileMode.TREE)
    root_builder = repo.TreeBuilder(trees[0])
    root_builder.insert("webshop", ws_builder.write(), pygit2.enums.FileMode.TREE)
    signature = pygit2.Signature("bench", "bench@example.invalid")
    parents = [repo.references[FLOOR_REF].target] if FLOOR_REF in repo.references else [head.id]
    repo.create_commit(FLOOR_REF, signature, signature, "floor", root_builder.write(), parents)


def measured(action: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, result


def in_process(root: Path, adds: int) -> None:
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    spent: dict[str, float] = {}
    for module, cls, name, label in PARTS:
        owner = getattr(importlib.import_module(module), cls)
        if hasattr(owner, name):  # the hint left the add in the ninth session: Store.hint
            setattr(owner, name, _cpu_timed(spent, label, getattr(owner, name)))
    rng = random.Random(time.time_ns())  # new texts each run: a repeat would be a duplicate
    add: Timing = ([], [])
    floor: Timing = ([], [])
    parts: dict[str, list[float]] = {label: [] for *_, label in PARTS}
    hinted = 0
    hints: list[float] = []  # Store.hint's CPU after each add, where the code has it
    repo = pygit2.Repository(str(root))
    with Store.open(settings) as store:
        store.catch_up()  # open the index outside the measurement
        store.add(f"warm up the index and the repository {rng.random()}", workspace="webshop")
        for n in range(adds):
            body = text(rng, n)
            spent.clear()
            wall, cpu, result = measured(
                lambda body=body: store.add(body, workspace="webshop", keywords=("bench",))
            )
            add[0].append(wall)
            add[1].append(cpu)
            if hasattr(store, "hint"):  # asked after the add returned, as its callers do
                _, cpu, result = measured(lambda r=result, b=body: store.hint(r, b))
                hints.append(cpu)
            hinted += bool(result.contradicts)
            if result.status != "added":
                raise RuntimeError(f"add {n} was {result.status}, not a new memory")
            for label in parts:
                parts[label].append(spent.get(label, 0.0) * 1000)
            data = (root / result.path).read_bytes()
            month = result.path.split("/")[1]
            name = f"floor-{n}-{rng.randrange(10**9)}.md"
            wall, cpu, _ = measured(lambda m=month, f=name, d=data: floor_commit(repo, m, f, d))
            floor[0].append(wall)
            floor[1].append(cpu)
    repo.references.delete(FLOOR_REF)
    folder = root / "webshop" / month
    width = sum(1 for name in os.listdir(folder) if not name.startswith("."))
    print(f"the adds' folder webshop/{month} holds {width:,} files (its tree is written whole)")
    print(
        f"in-process, {adds} adds ({hinted} reported a contradiction)   wall p50 / p95 ms"
        "     CPU p50 / p95 ms"
    )
    print(f"  Store.add                                     {cell(add[0])}     {cell(add[1])}")
    print(f"  floor: libgit2 blob + trees + commit          {cell(floor[0])}     {cell(floor[1])}")
    if hints:
        print(f"  Store.hint after the add (CPU)                            {cell(hints)}")
    print("  parts of Store.add (CPU ms)                      p50   mean")
    for label, values in parts.items():
        print(f"    {label:40} {statistics.median(values):7.2f} {statistics.mean(values):6.2f}")
    rest = [
        cpu - sum(parts[label][i] for label in parts if not label.startswith(" "))
        for i, cpu in enumerate(add[1])
    ]
    print(f"    {'everything else':40} {statistics.median(rest):7.2f} {statistics.mean(rest):6.2f}")


def _cpu_timed(spent: dict[str, float], label: str, method: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return method(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - start

    return wrapper


def run_child(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Run a process; return its wall ms and CPU ms (user + system, from wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{argv[:3]} failed: {err.decode(errors='replace')[:300]}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def cpu_ticks(pid: int) -> float:
    """CPU ms a process has used so far (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def settle(pid: int, bound_s: float = 120.0) -> None:
    """Wait until a process uses less than 5% of a core over half a second."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        before = cpu_ticks(pid)
        time.sleep(0.5)
        if cpu_ticks(pid) - before < 25:
            return


def ready(reply: client.Reply | None) -> bool:
    return reply is not None and bool((reply.data or {}).get("last_catch_up"))


def fts_table(root: Path, db_path: Path) -> int:
    """An FTS5 table of the vault's texts (porter unicode61), as bench_scale builds it."""
    db = sqlite3.connect(db_path)
    db.execute(
        "CREATE VIRTUAL TABLE mem USING fts5(path UNINDEXED, workspace UNINDEXED, content, "
        "keywords, tokenize='porter unicode61')"
    )
    rows = []
    for path in root.rglob("*.md"):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith("."):
            body = path.read_text(encoding="utf-8").split("---", 2)[-1]
            rows.append((rel, rel.split("/")[0], body, ""))
    with db:
        db.executemany("INSERT INTO mem VALUES (?, ?, ?, ?)", rows)
    db.close()
    return len(rows)


def cli(root: Path, runs: int, localmem: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-add-cli-"))
    exe = bf.memstore_command()
    env = bf.subprocess_env(tmp)
    env_nd = {**env, "MEMSTORE_NO_DAEMON": "1"}
    rng = random.Random(time.time_ns() + 1)
    rows: dict[str, Timing] = {}

    def timed_runs(label: str, argv: Callable[[int], list[str]], run_env: dict[str, str]) -> None:
        rows[label] = ([], [])
        for n in range(runs):
            wall, cpu = run_child(argv(n), run_env, tmp)
            rows[label][0].append(wall)
            rows[label][1].append(cpu)

    def add_argv(n: int) -> list[str]:
        return [exe, "add", text(rng, n), "-w", "webshop", "--vault", str(root)]

    timed_runs("python -c pass (interpreter floor)", lambda n: [sys.executable, "-c", "pass"], env)
    lag = root / ".git" / "memstore-index-lag"
    staged: list[float] = []
    rows["memstore add, no daemon"] = ([], [])
    for n in range(runs):
        wall, cpu = run_child(add_argv(n), env_nd, tmp)
        rows["memstore add, no daemon"][0].append(wall)
        rows["memstore add, no daemon"][1].append(cpu)
        start = time.perf_counter()
        while lag.exists() and time.perf_counter() - start < 10:
            time.sleep(0.005)
        staged.append((time.perf_counter() - start) * 1000)
    daemon = subprocess.Popen(
        [exe, "daemon", "--vault", str(root), "--idle-exit", "900"], env=env, cwd=tmp,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not ready(client.status(root)):  # answering, its first catch-up done
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise RuntimeError("the daemon did not answer")
            time.sleep(0.1)
        settle(daemon.pid)  # its second catch-up (a full compare) ends before the adds
        for n in range(2):  # unmeasured: the daemon's first add opens what it needs
            run_child(add_argv(n), env, tmp)
        before = cpu_ticks(daemon.pid)
        timed_runs("memstore add, daemon running (client)", add_argv, env)
        daemon_cpu = (cpu_ticks(daemon.pid) - before) / runs
    finally:
        client.stop(root)
        daemon.wait(60)
    db = tmp / "fts.sqlite"
    fts_rows = fts_table(root, db)
    timed_runs(
        f"FTS5 process: insert 1 row into {fts_rows:,} (WAL)",
        lambda n: [sys.executable, "-c", FTS_ADD, str(db), f"k{n}", text(rng, n)],
        env,
    )
    if localmem:
        timed_runs(
            "localmem (--localmem)",
            lambda n: [a.replace("{text}", text(rng, n)) for a in shlex.split(localmem)],
            env,
        )
    print(
        f"CLI, {runs} runs each                                 wall p50 / p95 ms"
        "     CPU p50 / p95 ms (the process)"
    )
    for label, (wall, cpu) in rows.items():
        print(f"  {label:50} {cell(wall)}     {cell(cpu)}")
    print(f"  the daemon's own CPU per add (mean)                 {daemon_cpu:6.1f} ms")
    print(
        f"  no daemon: git's index staged (by the child) {cell(staged)} ms after the command ended"
    )


def run(root: Path, adds: int, runs: int, localmem: str) -> None:
    mark = bf.cpu_mark()
    memories = sum(1 for _ in root.glob("[!.]*/**/*.md"))
    print(f"vault {root}: {memories:,} memories; code {bf.code_fingerprint(bf.source_base())}")
    in_process(root, adds)
    if runs:
        cli(root, runs, localmem)
    print(f"other processes' load during the run: {bf.foreign_load(mark)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vault", type=Path, required=True, help="an existing vault to add to")
    parser.add_argument("--adds", type=int, default=60, help="in-process adds of each kind")
    parser.add_argument("--cli", type=int, default=0, help="CLI adds of each kind")
    parser.add_argument("--localmem", default="", help="with --cli: 'CMD {text}' to compare")
    args = parser.parse_args()
    run(args.vault, args.adds, args.cli, args.localmem)


if __name__ == "__main__":
    main()
