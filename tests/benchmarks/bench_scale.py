#!/usr/bin/env python
"""Scale benchmark for memstore: every figure of issue 12 at 1k, 10k and 100k beside SQLite FTS5.

A standalone script, not a pytest module:

    python tests/benchmarks/bench_scale.py [--sizes 1000 10000 100000] [--json out.json]
    python tests/benchmarks/bench_scale.py --quick          # CI-sized smoke run, < 60 s

For each size N the vault is made the way a user gets one, not as a compacted copy:

  1. a bare remote gets N generated memories (bench_foundation.py's corpus) in commits of
     `--batch` memories each, in the layout the code under test writes, with created
     dates rising through the history;
  2. the measured vault is `memstore init` + `memstore remote add` + `memstore sync`
     (timed): the index is built by the sync's catch-up;
  3. it is topped up with `--adds` real in-process `Store.add`s (the add figure).

Then, on that vault and the same queries, beside SQLite FTS5 (porter unicode61) built
from the same files in the same run:

  * no daemon (MEMSTORE_NO_DAEMON=1): warm in-process `Store.search` p50/p95; cold
    `memstore search` median and the peak RSS of that process; CLI `memstore add`;
  * `memstore reindex` memories/s, `memstore audit` and `memstore dedupe --list` times
    (each stopped after `--upkeep-timeout` seconds, and said so);
  * with the resident index daemon running (when the code has one, else "n/a (no
    daemon)"): cold `memstore search` median and the client's peak RSS; warm recall p95
    through the lean client; CLI `memstore add` median; the daemon's RSS;
  * `memory_recall` p95 over stdio with the real mcp client, and the RSS (and PSS) of
    three `memstore serve` processes on the vault plus the daemon's;
  * how busy other processes kept the machine (bench_foundation's foreign-load account).

Slow phases are bounded by `--phase-budget` seconds (at least `--min-runs` runs); the
report gives every figure's run count. Like bench_foundation.py it runs from a copy of
the sources taken at start, and removes its temporary folders at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import importlib
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf
import bench_mcp

from memstore.core.codec import content_hash, derive_id, render_memory, slugify
from memstore.core.config import Settings
from memstore.core.model import Memory
from memstore.service.store import Store, init_vault
from memstore.vault.files import Vault

NO_DAEMON_ENV = "MEMSTORE_NO_DAEMON"
MIB = 1024 * 1024
NA_DAEMON = "n/a (no daemon)"
SOURCES = ("claude-code", "codex", "cli", "cursor")


# --- the remote: N memories in many commits ----------------------------------------------


def memory_path(memory: Memory) -> str:
    """Where the code under test puts a new memory (flat `<workspace>/<slug>-<id>.md` before
    the sharded layout's `memstore.service.store.memory_path` existed)."""
    store = importlib.import_module("memstore.service.store")
    layout = getattr(store, "memory_path", None)
    if layout is not None:
        return str(layout(memory))
    return f"{memory.workspace}/{slugify(memory.body)}-{memory.id}.md"


def generate(n: int, seed: int) -> list[tuple[bf.Generated, Memory]]:
    """N distinct memories with unique ids, created dates in rising order."""
    corpus = bf.Corpus(seed)
    seen: set[tuple[str, str]] = set()
    ids: set[str] = set()
    out: list[tuple[bf.Generated, Memory]] = []
    while len(out) < n:
        g = corpus.make()
        if (g.workspace, g.body) in seen:
            continue
        seen.add((g.workspace, g.body))
        length = 8
        while (memory_id := derive_id(g.workspace, g.body, length)) in ids:
            length += 2
        ids.add(memory_id)
        memory = Memory(
            id=memory_id,
            workspace=g.workspace,
            body=g.body,
            kind=g.kind,
            keywords=g.keywords,
            source=corpus.rng.choice(SOURCES),
            created="",
            seen=corpus.rng.choice((1, 1, 1, 2, 3)),
        )
        out.append((g, memory))
    stamps = sorted(corpus.created() for _ in out)
    return [(g, _with_created(m, s)) for (g, m), s in zip(out, stamps, strict=True)]


def _with_created(memory: Memory, stamp: str) -> Memory:
    from dataclasses import replace

    return replace(memory, created=stamp)


class TreeWriter:
    """Add files to a bare repository's tree, rewriting only the folders a batch touches."""

    def __init__(self, repo: Any, root_tree: Any) -> None:
        self.repo = repo
        self.root = root_tree

    def add(self, files: dict[str, bytes]) -> Any:
        nested: dict[str, Any] = {}
        for path, data in files.items():
            node = nested
            *folders, name = path.split("/")
            for folder in folders:
                node = node.setdefault(folder, {})
            node[name] = self.repo.create_blob(data)
        self.root = self._write(self.root, nested)
        return self.root

    def _write(self, tree_id: Any, changes: dict[str, Any]) -> Any:
        import pygit2

        tree = self.repo.get(tree_id) if tree_id is not None else None
        builder = self.repo.TreeBuilder(tree) if tree is not None else self.repo.TreeBuilder()
        for name, change in changes.items():
            if isinstance(change, dict):
                old = tree[name].id if tree is not None and name in tree else None
                builder.insert(name, self._write(old, change), pygit2.GIT_FILEMODE_TREE)
            else:
                builder.insert(name, change, pygit2.GIT_FILEMODE_BLOB)
        return builder.write()


def build_remote(
    bare: Path, memories: Sequence[Memory], batch: int, seed_vault: Path, settings: Settings
) -> dict[str, Any]:
    """A bare remote whose history is a `memstore init` then `batch`-sized commits of memories.

    The commits are streamed through `git fast-import` (one pack, trees written as deltas):
    writing a million loose blobs and rewritten folder trees through libgit2 took most of an
    hour on a busy machine, fast-import minutes.
    """
    import pygit2

    init_vault(seed_vault, settings)
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", str(seed_vault), str(bare)],
        check=True,
        capture_output=True,
    )
    repo = pygit2.Repository(str(bare))
    branch, parent = repo.head.name, str(repo.head.target)
    paths: list[str] = []
    importer = subprocess.Popen(
        ["git", "-C", str(bare), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert importer.stdin is not None
    for start in range(0, len(memories), batch):
        chunk = memories[start : start + batch]
        files = {memory_path(m): render_memory(m).encode("utf-8") for m in chunk}
        paths.extend(files)
        stamp = int(datetime.fromisoformat(chunk[-1].created.replace("Z", "+00:00")).timestamp())
        message = (
            f"add: {len(chunk)} memories ({start + 1}–{start + len(chunk)})\n\n"
            f"Memstore-Source: {chunk[0].source}\nMemstore-Session: bench-{start // batch}\n"
            "Memstore-Host: bench-remote\n"
        ).encode()
        who = f"bench <bench@example.invalid> {stamp} +0000".encode()
        out = [b"commit ", branch.encode(), b"\nauthor ", who, b"\ncommitter ", who]
        out += [b"\ndata %d\n" % len(message), message]
        if start == 0:
            out.append(f"from {parent}\n".encode())
        for path, data in files.items():
            out += [b"M 100644 inline ", path.encode("utf-8"), b"\ndata %d\n" % len(data), data]
            out.append(b"\n")
        importer.stdin.write(b"".join(out) + b"\n")
    importer.stdin.write(b"done\n")
    importer.stdin.close()
    if importer.wait() != 0:
        err = importer.stderr.read().decode("utf-8", "replace") if importer.stderr else ""
        raise RuntimeError(f"git fast-import failed: {err[-600:]}")
    # a hosted remote keeps its objects packed; loose ones would make every fetch pack them
    subprocess.run(["git", "-C", str(bare), "repack", "-a", "-d", "-q"], check=True)
    folders = {p.rsplit("/", 1)[0] for p in paths}
    sizes: dict[str, int] = {}
    for p in paths:
        folder = p.rsplit("/", 1)[0]
        sizes[folder] = sizes.get(folder, 0) + 1
    return {
        "commits": -(-len(memories) // batch),
        "folders": len(folders),
        "largest_folder": max(sizes.values(), default=0),
        "sample_path": paths[0] if paths else "",
    }


def push_adds(bare: Path, memories: Sequence[Memory]) -> dict[str, Any]:
    """What `len(memories)` `memstore add`s on another clone push: one commit per memory,
    `add(<workspace>): …` with the trailers an add writes, on the remote's branch."""
    import pygit2

    t0 = time.perf_counter()
    repo = pygit2.Repository(str(bare))
    branch = repo.head.name
    parent = repo.head.target
    writer = TreeWriter(repo, repo[parent].tree.id)
    for m in memories:
        tree = writer.add({memory_path(m): render_memory(m).encode("utf-8")})
        stamp = int(datetime.fromisoformat(m.created.replace("Z", "+00:00")).timestamp())
        sig = pygit2.Signature("other", "other@example.invalid", stamp, 0)
        message = (
            f"add({m.workspace}): {m.body[:60]}\n\n"
            "Memstore-Source: cli\nMemstore-Session: other-1\nMemstore-Host: other-machine\n"
        )
        parent = repo.create_commit(branch, sig, sig, message, tree, [parent])
    return {"commits": len(memories), "push_s": round(time.perf_counter() - t0, 2)}


def as_memories(items: Sequence[bf.Generated], after: str, taken: set[str]) -> list[Memory]:
    """`items` as memories created one minute apart after `after` (ids unique in `taken`)."""
    start = datetime.fromisoformat(after.replace("Z", "+00:00"))
    out = []
    for i, g in enumerate(items):
        length = 8
        while (memory_id := derive_id(g.workspace, g.body, length)) in taken:
            length += 2
        taken.add(memory_id)
        stamp = datetime.fromtimestamp(start.timestamp() + 60 * (i + 1), UTC)
        out.append(
            Memory(
                id=memory_id,
                workspace=g.workspace,
                body=g.body,
                kind=g.kind,
                keywords=g.keywords,
                source="cli",
                created=stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
                seen=1,
            )
        )
    return out


# --- processes: time, peak RSS, resident sizes ---------------------------------------------


@dataclass
class Runs:
    """Wall times (ms) and peak RSS (KiB) of subprocesses."""

    ms: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    stopped_early: bool = False

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {**bf.summary(self.ms), "stopped_early": self.stopped_early}
        if self.rss_kib:
            out["peak_rss_mib"] = round(max(self.rss_kib) / 1024, 1)
            out["median_rss_mib"] = round(sorted(self.rss_kib)[len(self.rss_kib) // 2] / 1024, 1)
        return out


GNU_TIME = Path("/usr/bin/time")


def run_one(
    argv: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None, timeout: float = 600
) -> tuple[float, int, subprocess.CompletedProcess[str]]:
    """Run a process; return wall ms, its peak RSS (KiB) and its output.

    The peak RSS comes from GNU time (`%M`) when it is installed: a child forked straight
    from this large process would report this process's size (Linux carries the old
    memory's high-water mark across exec). Raises subprocess.TimeoutExpired (after killing
    it) when it runs past `timeout`.
    """
    with tempfile.NamedTemporaryFile(prefix="rss-", dir=cwd) as rss_file:
        wrapped = argv
        if GNU_TIME.exists():
            wrapped = [str(GNU_TIME), "-f", "%M", "-o", rss_file.name, *argv]
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            wrapped,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # a timeout stops the command too, not only GNU time
        )
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise subprocess.TimeoutExpired(argv, timeout) from None
        ms = (time.perf_counter() - t0) * 1000
        lines = Path(rss_file.name).read_text(encoding="utf-8").split()
    rss = int(lines[-1]) if lines and lines[-1].isdigit() else 0
    return ms, rss, subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_timed(
    argvs: Sequence[list[str]],
    env: dict[str, str],
    cwd: Path,
    *,
    budget_s: float,
    min_runs: int,
    inputs: Sequence[str] | None = None,
) -> Runs:
    """Run argvs one by one (all of them, or at least `min_runs` within `budget_s`)."""
    runs = Runs()
    started = time.perf_counter()
    for i, argv in enumerate(argvs):
        if i >= min_runs and time.perf_counter() - started > budget_s:
            runs.stopped_early = True
            break
        ms, rss, done = run_one(argv, env, cwd, None if inputs is None else inputs[i])
        if done.returncode != 0:
            raise RuntimeError(f"{argv[1:3]}… failed ({done.returncode}): {done.stderr[-600:]}")
        runs.ms.append(ms)
        runs.rss_kib.append(rss)
    return runs


def resident(pid: int) -> dict[str, float]:
    """RSS, peak RSS and PSS (MiB) of a running process, from /proc."""
    out: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out["rss_mib" if key == "VmRSS" else "peak_rss_mib"] = round(
                    int(value.split()[0]) / 1024, 1
                )
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text(encoding="utf-8").splitlines():
            if line.startswith("Pss:"):
                out["pss_mib"] = round(int(line.split()[1]) / 1024, 1)
    return out


def children_running(argv_word: str) -> list[int]:
    """Pids of this process's children whose command line holds `argv_word`."""
    me = str(os.getpid())
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (proc / "stat").read_text(encoding="utf-8")
            ppid = stat.rsplit(")", 1)[1].split()[1]
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            if ppid == me and argv_word.encode() in cmdline:
                found.append(int(proc.name))
    return found


# --- FTS5 on the same files ----------------------------------------------------------------


def flat_view(root: Path, view: Path) -> Path:
    """Symlink every memory file into `<view>/<workspace>/<name>`: the one-level layout that
    bench_foundation's fts_build reads, whatever layout the vault has."""
    for rel in Vault(root).scan():
        workspace, name = rel.split("/", 1)[0], rel.rsplit("/", 1)[-1]
        (view / workspace).mkdir(parents=True, exist_ok=True)
        (view / workspace / name).symlink_to(root / rel)
    return view


def fts_warm(db_path: Path, queries: Sequence[bf.Query], warmup: int) -> dict[str, Any]:
    """Warm FTS5 queries in this process (AND, then OR when AND finds nothing)."""
    db = sqlite3.connect(db_path)
    for q in queries[:warmup]:
        bf.fts_search(db, q.text, 5, fallback=True)
    times = [bf.timed_ms(partial(bf.fts_search, db, q.text, 5, fallback=True))[0] for q in queries]
    db.close()
    return bf.summary(times)


# --- the daemon, as far as the code under test has one -------------------------------------


def daemon_supported() -> bool:
    """Whether the code under test has a resident index daemon and its lean client."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("memstore.daemon.server", "memstore.ops.client")
    )


def daemon_pid(root: Path, data: dict[str, Any]) -> int | None:
    """The daemon's pid: from its status reply, else the process serving `root`."""
    value = data.get("pid")
    if isinstance(value, int):
        return value
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (proc / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
                if "daemon" in argv and str(root) in argv:
                    return int(proc.name)
    return None


# --- one size --------------------------------------------------------------------------------


@dataclass
class Sized:
    """What every phase of one size needs."""

    n: int
    args: argparse.Namespace
    tmp: Path
    root: Path
    exe: str
    env: dict[str, str]
    env_nd: dict[str, str]
    settings: Settings
    queries: list[bf.Query]
    cli_queries: list[bf.Query]
    fresh: list[bf.Generated]
    res: dict[str, Any] = field(default_factory=dict)
    bare: Path | None = None  # the remote the vault syncs with
    last_created: str = ""  # the newest memory's created stamp on the remote
    ids: set[str] = field(default_factory=set)  # the ids taken on the remote

    def log(self, msg: str) -> None:
        bf.log(f"[N={self.n}] {msg}")

    def search_argvs(self) -> list[list[str]]:
        return [[self.exe, "search", q.text, "--vault", str(self.root)] for q in self.cli_queries]

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Log `name` and record how long it took (res["steps_s"])."""
        self.log(f"{name} …")
        started = time.perf_counter()
        try:
            yield
        finally:
            steps = self.res.setdefault("steps_s", {})
            steps[name] = round(time.perf_counter() - started, 1)

    def take_fresh(self, count: int) -> list[bf.Generated]:
        taken, self.fresh = self.fresh[:count], self.fresh[count:]
        return taken


def make_vault(s: Sized, cache: Path | None) -> list[bf.Generated]:
    """Build (or reuse) the remote, then init + remote add + sync the measured vault."""
    items, bare = prepare_remote(s, cache)
    clone_vault(s, bare)
    return items


def prepare_remote(s: Sized, cache: Path | None) -> tuple[list[bf.Generated], Path]:
    """Generate the memories and the bare remote holding them (reused from `cache` if there)."""
    s.log("generating memories …")
    pairs = generate(s.n, bf.SEED + s.n)
    memories = [m for _, m in pairs]
    sample = memory_path(memories[0])
    bare = s.bare = s.tmp / "remote.git"
    s.last_created = memories[-1].created
    s.ids = {m.id for m in memories}
    cached = cache / f"remote-{s.n}-{s.args.batch}-{slugify(sample)[:60]}.git" if cache else None
    if cached is not None and cached.exists():
        s.log(f"reusing remote {cached}")
        shutil.copytree(cached, bare)
        s.res["remote"] = {"reused": str(cached), "sample_path": sample}
    else:
        s.log(f"building the remote: {s.n} memories in commits of {s.args.batch} …")
        t0 = time.perf_counter()
        s.res["remote"] = build_remote(bare, memories, s.args.batch, s.tmp / "seed", s.settings)
        s.res["remote"]["build_s"] = round(time.perf_counter() - t0, 1)
        if cached is not None:
            shutil.copytree(bare, cached)
    return [g for g, _ in pairs], bare


def reuse_vault(s: Sized) -> list[bf.Generated]:
    """Go on measuring a vault an earlier run kept (`--keep`, `--reuse DIR`): its remote,
    vault and home are there; the figures of its setup are that run's. The FTS5 files are
    made again; the new memories skip those an earlier run already added."""
    s.log(f"reusing the vault in {s.tmp}: generating memories …")
    pairs = generate(s.n, bf.SEED + s.n)
    s.bare = s.tmp / "remote.git"
    s.last_created = pairs[-1][1].created
    s.ids = {m.id for _, m in pairs}
    s.res["remote"] = {"reused_run": str(s.tmp)}
    s.res["clone"] = {"reused_run": str(s.tmp)}
    shutil.rmtree(s.tmp / "fts-view", ignore_errors=True)
    (s.tmp / "fts.sqlite").unlink(missing_ok=True)
    return [g for g, _ in pairs]


def not_added_yet(s: Sized, items: list[bf.Generated]) -> list[bf.Generated]:
    """The new memories a reused vault does not hold yet (an earlier run added some)."""
    with Store(s.settings, Vault(s.root)) as store:
        return [g for g in items if not store.indexer.by_hash(g.workspace, content_hash(g.body))]


def clone_vault(s: Sized, bare: Path) -> None:
    """`memstore init` + `remote add` + `sync`: the vault as a second machine gets it (timed)."""
    s.log("memstore init + remote add + sync …")
    steps = (
        ("init", [s.exe, "init", str(s.root)]),
        ("remote_add", [s.exe, "remote", "add", str(bare), "--vault", str(s.root)]),
        ("sync", [s.exe, "sync", "--vault", str(s.root)]),
    )
    clone: dict[str, Any] = {}
    for name, argv in steps:
        ms, rss, done = run_one(argv, s.env_nd, s.tmp, timeout=s.args.clone_timeout)
        if done.returncode != 0:
            raise RuntimeError(f"memstore {name} failed: {done.stderr.strip()[:400]}")
        clone[f"{name}_s"] = round(ms / 1000, 2)
        if name == "sync":
            clone["sync_peak_rss_mib"] = round(rss / 1024, 1)
            clone["sync_output"] = done.stdout.strip().splitlines()[-4:]
    s.res["clone"] = clone


def top_up(s: Sized) -> None:
    """The add figure: `--adds` real in-process Store.adds on the synced vault."""
    items = s.take_fresh(s.args.adds)
    s.log(f"in-process Store.add ×{len(items)} …")
    with Store(s.settings, Vault(s.root)) as store:
        store.catch_up()  # open the index outside the measurement
        times: list[float] = []
        statuses: dict[str, int] = {}
        started = time.perf_counter()
        for chunk in range(0, len(items), 10):  # at least 50 adds, then within the budget
            if chunk >= 50 and time.perf_counter() - started > s.args.phase_budget:
                break
            more, seen = bf.add_all(store, items[chunk : chunk + 10])
            times += more
            for status, count in seen.items():
                statuses[status] = statuses.get(status, 0) + count
    s.res["add_inprocess"] = bf.summary(times)
    s.res["add_statuses"] = statuses


def fts_phase(s: Sized) -> None:
    s.log("FTS5 reference …")
    db_path = s.tmp / "fts.sqlite"
    t0 = time.perf_counter()
    view = flat_view(s.root, s.tmp / "fts-view")
    view_s = round(time.perf_counter() - t0, 2)
    s.res["fts5_build"] = {**bf.fts_build(view, db_path), "view_s": view_s}
    s.res["fts5_warm"] = fts_warm(db_path, s.queries, s.args.warmup)
    py = sys.executable
    bf.run_many([[py, "-c", "pass"]] * 3, s.env, s.tmp)  # warm the page cache
    argvs = [[py, "-c", bf.FTS_COLD, str(db_path), bf.fts_match(q.text)] for q in s.cli_queries]
    runs = run_timed(argvs, s.env, s.tmp, budget_s=s.args.phase_budget, min_runs=s.args.min_runs)
    s.res["fts5_cold"] = runs.figures()
    floor = run_timed([[py, "-c", "pass"]] * len(argvs), s.env, s.tmp, budget_s=30, min_runs=5)
    s.res["python_floor"] = floor.figures()


def warm_inprocess(s: Sized) -> None:
    """Warm in-process Store.search with no daemon (each search checks for outside changes)."""
    with Store(s.settings, Vault(s.root)) as store:
        store.catch_up()
        probe = [
            bf.timed_ms(partial(store.search, q.text, workspace=None, k=5))[0]
            for q in s.queries[:10]
        ]
        per = max(sum(probe) / len(probe) / 1000, 1e-4)
        count = min(len(s.queries), max(s.args.min_runs, int(s.args.phase_budget / per)))
        s.log(f"warm in-process search, no daemon ×{count} …")
        found = bf.warm_search(store, s.queries[:count], min(s.args.warmup, count // 3))
    s.res["search_warm_nodaemon"] = found["all"]
    s.res["search_outcomes"] = found["outcomes"]


def cold_nodaemon(s: Sized) -> None:
    s.log(f"cold CLI search, no daemon ×{len(s.cli_queries)} …")
    argvs = s.search_argvs()
    run_timed(argvs[:2], s.env_nd, s.tmp, budget_s=0, min_runs=2)
    runs = run_timed(argvs, s.env_nd, s.tmp, budget_s=s.args.phase_budget, min_runs=s.args.min_runs)
    s.res["cli_search_nodaemon"] = runs.figures()
    items = s.take_fresh(s.args.cli_adds)
    s.log(f"CLI add, no daemon ×{len(items)} …")
    runs = run_timed(
        bf.add_argvs(s.exe, s.root, items),
        s.env_nd,
        s.tmp,
        budget_s=s.args.phase_budget,
        min_runs=5,
    )
    s.res["cli_add_nodaemon"] = runs.figures()


def upkeep(s: Sized) -> None:
    """`memstore reindex`, `audit` and `dedupe --list`, no daemon; each bounded in time."""
    for name, argv in (
        ("reindex", [s.exe, "reindex", "--vault", str(s.root)]),
        ("audit", [s.exe, "audit", "--vault", str(s.root), "--json"]),
        ("dedupe", [s.exe, "dedupe", "--list", "--vault", str(s.root)]),
    ):
        if name != "reindex" and s.args.upkeep_timeout <= 0:
            continue  # --upkeep-timeout 0: reindex only
        s.log(f"memstore {name} …")
        timeout = s.args.reindex_timeout if name == "reindex" else s.args.upkeep_timeout
        try:
            ms, rss, done = run_one(argv, s.env_nd, s.tmp, timeout=timeout)
        except subprocess.TimeoutExpired:
            s.res[name] = {"stopped_after_s": timeout}
            continue
        if done.returncode not in (0, 1):
            raise RuntimeError(f"memstore {name} failed: {done.stderr.strip()[:400]}")
        s.res[name] = {"s": round(ms / 1000, 2), "peak_rss_mib": round(rss / 1024, 1)}
    with Store(s.settings, Vault(s.root)) as store:
        memories = len(store.indexer.entries())
    s.res["memories_after_upkeep"] = memories
    if "s" in s.res["reindex"]:
        s.res["reindex"]["per_s"] = round(memories / s.res["reindex"]["s"], 1)


def sync_new(s: Sized) -> None:
    """The sync that brings in `--sync-new` memories another clone added and pushed (one
    commit each), no daemon; beside it FTS5 taking the same texts into its table and git's
    own look at the synced worktree (`git status`)."""
    if s.bare is None or not s.args.sync_new:
        return
    memories = as_memories(s.take_fresh(s.args.sync_new), s.last_created, s.ids)
    s.log(f"another clone pushes {len(memories)} adds, then memstore sync …")
    pushed = push_adds(s.bare, memories)
    ms, rss, done = run_one(
        [s.exe, "sync", "--vault", str(s.root)], s.env_nd, s.tmp, timeout=s.args.clone_timeout
    )
    if done.returncode != 0:
        raise RuntimeError(f"memstore sync failed: {done.stderr.strip()[:400]}")
    paths = [memory_path(m) for m in memories]
    arrived = sum((s.root / p).is_file() for p in paths)
    s.res["sync_new"] = {
        "memories": len(memories),
        "arrived": arrived,
        "s": round(ms / 1000, 2),
        "peak_rss_mib": round(rss / 1024, 1),
        "output": done.stdout.strip().splitlines()[-4:],
        **pushed,
    }
    s.res["sync_new_fts5"] = fts_insert(s.tmp / "fts.sqlite", s.root, paths)
    ms, _, done = run_one(["git", "-C", str(s.root), "status", "--porcelain"], s.env, s.tmp)
    s.res["git_status_s"] = round(ms / 1000, 2)


def fts_insert(db_path: Path, root: Path, paths: Sequence[str]) -> dict[str, Any]:
    """FTS5 taking `paths` (read + parse + insert + commit) into the table fts_phase built."""
    from memstore.core.codec import parse_memory

    if not db_path.exists():
        return {}
    t0 = time.perf_counter()
    rows = []
    for rel in paths:
        m = parse_memory((root / rel).read_text(encoding="utf-8"), path=rel)
        rows.append((rel, m.workspace, m.body, " ".join(m.keywords)))
    db = sqlite3.connect(db_path)
    with db:
        db.executemany("INSERT INTO mem VALUES (?, ?, ?, ?)", rows)
    db.close()
    return {"docs": len(rows), "s": round(time.perf_counter() - t0, 3)}


def disk_usage(s: Sized) -> None:
    """Bytes on disk (du, in MiB): the memory files, .git, the index, memstore's state."""
    state = Vault(s.root).state_dir

    def du(*args: str) -> float | None:
        done = subprocess.run(["du", "-sk", *args], capture_output=True, text=True)
        last = done.stdout.strip().splitlines()[-1:] or [""]
        kib = last[0].split("\t")[0]
        return round(int(kib) / 1024, 1) if kib.isdigit() else None

    s.res["disk_mib"] = {
        "files": du(f"--exclude={s.root}/.git", f"--exclude={state}", str(s.root)),
        "git": du(str(s.root / ".git")),
        "git_index": round((s.root / ".git" / "index").stat().st_size / MIB, 1),
        "index": du(str(state / "index")),
        "state": du(str(state)),
        "fts5": round((s.tmp / "fts.sqlite").stat().st_size / MIB, 1)
        if (s.tmp / "fts.sqlite").exists()
        else None,
    }


async def mcp_recalls(
    params: Any, queries: Sequence[bf.Query], warmup: int, budget_s: float
) -> dict[str, Any]:
    """`memory_recall` round trips over stdio in one session (workspace "all")."""
    from mcp import Client

    async with Client(params) as client:
        for q in queries[:warmup]:
            await client.call_tool("memory_recall", {"query": q.text, "workspace": "all"})
        times: list[float] = []
        errors = 0
        started = time.perf_counter()
        for q in queries:
            if len(times) >= 30 and time.perf_counter() - started > budget_s:
                break
            t0 = time.perf_counter()
            r = await client.call_tool("memory_recall", {"query": q.text, "workspace": "all"})
            times.append((time.perf_counter() - t0) * 1000)
            errors += bool(r.is_error)
    return {**bf.summary(times), "errors": errors}


async def serve_memory(params: Any, count: int, query: str, daemon: int | None) -> dict[str, Any]:
    """Resident sizes of `count` `memstore serve` processes, each after one recall, and of
    the daemon at that moment."""
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(params)) for _ in range(count)]
        for client in clients:
            await client.call_tool("memory_recall", {"query": query, "workspace": "all"})
        sizes = [resident(pid) for pid in children_running("serve")]
        beside = resident(daemon) if daemon else {}
    return {
        "daemon": beside,
        "processes": len(sizes),
        "each": sizes,
        "rss_mib": round(sum(x.get("rss_mib", 0) for x in sizes), 1),
        "pss_mib": round(sum(x.get("pss_mib", 0) for x in sizes), 1),
    }


def mcp_phase(s: Sized, env: dict[str, str], label: str, daemon: int | None = None) -> None:
    params = bench_mcp.server_params(s.exe, s.root, env, s.tmp)
    with s.step(f"MCP memory_recall ×≤{len(s.queries)}, {label}"):
        s.res[f"mcp_recall_{label}"] = asyncio.run(
            mcp_recalls(params, s.queries, s.args.warmup, s.args.phase_budget)
        )
    with s.step(f"three memstore serve processes, {label}"):
        s.res[f"serve_memory_{label}"] = asyncio.run(
            serve_memory(params, 3, s.queries[0].text, daemon)
        )


@contextlib.contextmanager
def running_daemon(s: Sized) -> Iterator[int | None]:
    """Start the vault's daemon the way a user does (the first search); stop it at the end."""
    client = importlib.import_module("memstore.ops.client")
    t0 = time.perf_counter()
    run_one(s.search_argvs()[0], s.env, s.tmp)
    bf.wait_for(lambda: client.status(s.root) is not None, 300, "the daemon to answer", 0.02)
    s.res["daemon_start_s"] = round(time.perf_counter() - t0, 2)
    data = dict(client.status(s.root).data)
    s.res["daemon_status"] = data
    pid = daemon_pid(s.root, data)
    try:
        yield pid
    finally:
        s.res["daemon_status_at_end"] = dict(getattr(client.status(s.root), "data", {}) or {})
        with s.step("stopping the daemon"):
            client.stop(s.root)
            s.res["daemon_stop"] = wait_gone(pid, 180.0)


def wait_gone(pid: int | None, timeout: float) -> dict[str, Any]:
    """Wait (bounded) for process `pid` to end; say how long it took or that it did not."""
    if pid is None:
        return {}
    try:
        return {
            "gone_after_s": round(
                bf.wait_for(
                    lambda: not Path(f"/proc/{pid}").exists(), timeout, "the daemon to exit", 0.05
                ),
                2,
            )
        }
    except RuntimeError:
        return {"still_running_after_s": timeout}


def warm_client(s: Sized) -> dict[str, Any]:
    """Warm `memory_recall`s through the lean client from this process (one round trip each).

    Code whose daemon has no tool op yet is asked `search` instead (said in the figures).
    """
    client = importlib.import_module("memstore.ops.client")
    cwd, env = str(s.tmp), {**s.env, "MEMSTORE_VAULT": str(s.root)}
    try:
        tools = importlib.import_module("memstore.ops.tools")
    except ImportError:
        tools = None

    def request(text: str) -> Any:
        if tools is None:
            return client.Request("search", [text, "--vault", str(s.root)], cwd, env)
        payload = tools.call_payload(
            {"query": text, "workspace": "all"},
            vault=s.root,
            workspace="",
            source="bench",
            session="bench",
        )
        return client.Request("tool", ["memory_recall"], cwd, env, payload)

    def ask(text: str) -> None:
        reply = client.ask(s.root, request(text), start=False)
        if reply is None or reply.status not in (0, 1):  # search exits 1 when nothing matches
            raise RuntimeError(f"the daemon did not answer: {reply}")

    for q in s.queries[: s.args.warmup]:
        ask(q.text)
    times = [bf.timed_ms(partial(ask, q.text))[0] for q in s.queries]
    return {**bf.summary(times), "op": "search" if tools is None else "memory_recall"}


def daemon_phase(s: Sized) -> None:
    if not daemon_supported():
        s.res["daemon"] = False
        s.log("no daemon in this code: daemon figures are n/a")
        mcp_phase(s, s.env, "serve")
        return
    s.res["daemon"] = True
    try:
        daemon_figures(s)
    except RuntimeError as err:  # a daemon that never answers: say so, keep the other figures
        s.res["daemon"] = False
        s.res["daemon_error"] = str(err)[:600]
        s.log(f"daemon figures not measured: {err}")


def hook_prompts(s: Sized) -> dict[str, Any]:
    """The per-prompt agent hook: a fresh `memstore hook prompt` per prompt (payload on stdin)."""
    env = {**s.env, "MEMSTORE_VAULT": str(s.root)}
    inputs = [
        json.dumps({"prompt": q.text, "cwd": str(s.tmp), "session_id": "bench"})
        for q in s.cli_queries
    ]
    argvs = [[s.exe, "hook", "prompt"]] * len(inputs)
    _, _, first = run_one(argvs[0], env, s.tmp, inputs[0])
    if first.stderr.strip():  # a hook exits 0 even when it fails: make a failure visible
        raise RuntimeError(f"memstore hook prompt complained: {first.stderr.strip()[:400]}")
    runs = run_timed(
        argvs, env, s.tmp, budget_s=s.args.phase_budget, min_runs=s.args.min_runs, inputs=inputs
    )
    return runs.figures()


def daemon_figures(s: Sized) -> None:
    with running_daemon(s) as pid:
        argvs = s.search_argvs()
        with s.step(f"cold CLI search, daemon running ×{len(argvs)}"):
            run_timed(argvs[:2], s.env, s.tmp, budget_s=0, min_runs=2)
            runs = run_timed(
                argvs, s.env, s.tmp, budget_s=s.args.phase_budget, min_runs=s.args.min_runs
            )
            s.res["cli_search_daemon"] = runs.figures()
        with s.step(f"cold `memstore hook prompt`, daemon running ×{len(argvs)}"):
            s.res["cli_hook_daemon"] = hook_prompts(s)
        with s.step("warm recall through the client"):
            s.res["client_recall_warm"] = warm_client(s)
        items = s.take_fresh(s.args.cli_adds)
        with s.step(f"CLI add, daemon running ×{len(items)}"):
            runs = run_timed(
                bf.add_argvs(s.exe, s.root, items),
                s.env,
                s.tmp,
                budget_s=s.args.phase_budget,
                min_runs=5,
            )
            s.res["cli_add_daemon"] = runs.figures()
        mcp_phase(s, s.env, "daemon", pid)
        s.res["daemon_memory"] = resident(pid) if pid else {}


# The phases after the setup, in the order a run takes them (--phases picks and orders).
PHASES: dict[str, Callable[[Sized], None]] = {
    step.__name__: step
    for step in (
        top_up,
        fts_phase,
        sync_new,
        disk_usage,
        warm_inprocess,
        cold_nodaemon,
        upkeep,
        daemon_phase,
    )
}


def sized(n: int, args: argparse.Namespace, tmp: Path) -> Sized:
    home = tmp / "home"
    home.mkdir(exist_ok=bool(getattr(args, "reuse", None)))
    root = tmp / "vault"
    env = bf.subprocess_env(home)
    return Sized(
        n=n,
        args=args,
        tmp=tmp,
        root=root,
        exe=bf.memstore_command(),
        env=env,
        env_nd={**env, NO_DAEMON_ENV: "1"},
        settings=Settings(vault=root, source="bench", session="bench", host="bench"),
        queries=[],
        cli_queries=[],
        fresh=[],
        res={"n": n},
    )


def bench_size(n: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    s = sized(n, args, tmp)
    if args.prepare:
        prepare_remote(s, args.cache)
        return s.res
    root = s.root
    mark = bf.cpu_mark()
    t0 = time.perf_counter()
    items = reuse_vault(s) if args.reuse else make_vault(s, args.cache)
    s.res["setup_s"] = round(time.perf_counter() - t0, 1)
    s.queries = bf.make_queries(items, args.queries, bf.SEED * 7 + n)
    with_hits = [q for q in s.queries if bf.fts_match(q.text)]
    s.cli_queries = with_hits[:: max(1, len(with_hits) // args.cli_runs)][: args.cli_runs]
    wanted = args.adds + 2 * args.cli_adds + args.sync_new
    if args.reuse:  # what earlier runs on this vault added, and as many again
        # (every earlier run took some: enough candidates that the rest still holds them)
        s.fresh = not_added_yet(s, fresh_memories(items, n, 2 * wanted + 20_000))[:wanted]
    else:
        s.fresh = fresh_memories(items, n, wanted)
    s.res["planned"] = {
        "search_warm_nodaemon": len(s.queries),
        "client_recall_warm": len(s.queries),
        "mcp_recall_daemon": len(s.queries),
        "add_inprocess": args.adds,
    }
    s.res["phase_s"] = {"setup": s.res["setup_s"]}
    for step in (PHASES[name] for name in args.phases):
        started = time.perf_counter()
        step(s)
        s.res["phase_s"][step.__name__] = round(time.perf_counter() - started, 1)
        if args.json:  # what is measured so far survives a run stopped part-way
            partial = args.json.with_suffix(f".{n}.partial.json")
            partial.write_text(json.dumps(s.res, indent=2) + "\n", encoding="utf-8")
    with Store(s.settings, Vault(root)) as store:
        store.catch_up()
        s.res["final_memories"] = len(store.indexer.entries())
    s.res["bench_wall_s"] = round(time.perf_counter() - t0, 1)
    s.res["other_processes"] = bf.foreign_load(mark)
    return s.res


def fresh_memories(items: Sequence[bf.Generated], n: int, count: int) -> list[bf.Generated]:
    """New memories for the adds, none a duplicate of the vault's."""
    existing = {(g.workspace, g.body) for g in items}
    corpus = bf.Corpus(bf.SEED + n + 1)
    fresh: list[bf.Generated] = []
    while len(fresh) < count:
        g = corpus.make()
        if (g.workspace, g.body) not in existing:
            existing.add((g.workspace, g.body))
            fresh.append(g)
    return fresh


# --- report ----------------------------------------------------------------------------------


def _get(r: dict[str, Any], *keys: str) -> Any:
    value: Any = r
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


@dataclass(frozen=True)
class Figure:
    """One row of the final table: how to read it, its target and how to judge it."""

    label: str
    target: str
    value: Callable[[dict[str, Any]], float | None]
    unit: str
    fts5: Callable[[dict[str, Any]], float | None] | None = None
    limit: Callable[[dict[str, Any]], float | None] | None = None  # value must be <= this
    floor: float | None = None  # value must be >= this
    judged_at: str = "largest"  # "largest" size measured, or "all"
    needs_daemon: bool = False
    runs: str | None = None  # the result whose run count to show when a budget cut it short


def _fts_cold(r: dict[str, Any]) -> float | None:
    return _get(r, "fts5_cold", "median")


FIGURES = (
    Figure(
        "cold `memstore search` median, daemon",
        "≤ 1.5× FTS5 process",
        lambda r: _get(r, "cli_search_daemon", "median"),
        "ms",
        _fts_cold,
        limit=lambda r: 1.5 * (_fts_cold(r) or 0),
        needs_daemon=True,
        runs="cli_search_daemon",
    ),
    Figure(
        "  `python -c pass` (interpreter floor)",
        "",
        lambda r: _get(r, "python_floor", "median"),
        "ms",
    ),
    Figure(
        "cold `memstore hook prompt` median, daemon",
        "",
        lambda r: _get(r, "cli_hook_daemon", "median"),
        "ms",
        _fts_cold,
        needs_daemon=True,
        runs="cli_hook_daemon",
    ),
    Figure(
        "warm recall p95, through the client",
        "≤ 30 ms",
        lambda r: _get(r, "client_recall_warm", "p95"),
        "ms",
        lambda r: _get(r, "fts5_warm", "p95"),
        limit=lambda r: 30.0,
        needs_daemon=True,
        runs="client_recall_warm",
    ),
    Figure(
        "client peak RSS (cold search)",
        "≤ 40 MiB",
        lambda r: _get(r, "cli_search_daemon", "peak_rss_mib"),
        "MiB",
        lambda r: _get(r, "fts5_cold", "peak_rss_mib"),
        limit=lambda r: 40.0,
        needs_daemon=True,
        runs="cli_search_daemon",
    ),
    Figure(
        "daemon RSS",
        "≤ 300 MiB",
        lambda r: _get(r, "daemon_memory", "rss_mib"),
        "MiB",
        limit=lambda r: 300.0,
        needs_daemon=True,
    ),
    Figure(
        "CLI `memstore add` median, daemon",
        "≤ 250 ms",
        lambda r: _get(r, "cli_add_daemon", "median"),
        "ms",
        limit=lambda r: 250.0,
        needs_daemon=True,
        runs="cli_add_daemon",
    ),
    Figure(
        "MCP `memory_recall` p95 (stdio)",
        "≤ 20 ms",
        lambda r: _get(r, "mcp_recall_daemon", "p95") or _get(r, "mcp_recall_serve", "p95"),
        "ms",
        limit=lambda r: 20.0,
        runs="mcp_recall_daemon",
    ),
    Figure(
        "daemon: `client.stop` → process gone",
        "",
        lambda r: _get(r, "steps_s", "stopping the daemon"),
        "s",
        needs_daemon=True,
    ),
    Figure(
        "largest PSS of 3 `serve`s",
        "≤ ½ daemon's (shared)",
        lambda r: max(
            (x.get("pss_mib", 0) for x in _get(r, "serve_memory_daemon", "each") or []),
            default=None,
        ),
        "MiB",
        limit=lambda r: 0.5 * (_get(r, "serve_memory_daemon", "daemon", "pss_mib") or 0),
        needs_daemon=True,
    ),
    Figure(
        "RSS of 3 `serve` + daemon",
        "one index shared",
        lambda r: (
            (
                _get(r, "serve_memory_daemon", "rss_mib")
                or _get(r, "serve_memory_serve", "rss_mib")
                or 0
            )
            + (_get(r, "serve_memory_daemon", "daemon", "rss_mib") or 0)
        ),
        "MiB",
    ),
    Figure(
        "  PSS of the same",
        "",
        lambda r: (
            (
                _get(r, "serve_memory_daemon", "pss_mib")
                or _get(r, "serve_memory_serve", "pss_mib")
                or 0
            )
            + (_get(r, "serve_memory_daemon", "daemon", "pss_mib") or 0)
        ),
        "MiB",
    ),
    Figure(
        "warm in-process search p50, no daemon",
        "≤ 300 ms",
        lambda r: _get(r, "search_warm_nodaemon", "p50"),
        "ms",
        lambda r: _get(r, "fts5_warm", "p50"),
        limit=lambda r: 300.0,
        runs="search_warm_nodaemon",
    ),
    Figure(
        "warm in-process search p95, no daemon",
        "",
        lambda r: _get(r, "search_warm_nodaemon", "p95"),
        "ms",
        lambda r: _get(r, "fts5_warm", "p95"),
        runs="search_warm_nodaemon",
    ),
    Figure(
        "cold `memstore search` median, no daemon",
        "≤ 1 s",
        lambda r: _get(r, "cli_search_nodaemon", "median"),
        "ms",
        _fts_cold,
        limit=lambda r: 1000.0,
        runs="cli_search_nodaemon",
    ),
    Figure(
        "peak RSS of a search process, no daemon",
        "small",
        lambda r: _get(r, "cli_search_nodaemon", "peak_rss_mib"),
        "MiB",
        lambda r: _get(r, "fts5_cold", "peak_rss_mib"),
        runs="cli_search_nodaemon",
    ),
    Figure(
        "in-process `Store.add` p50",
        "≤ 50 ms, flat",
        lambda r: _get(r, "add_inprocess", "p50"),
        "ms",
        limit=lambda r: 50.0,
        judged_at="all",
        runs="add_inprocess",
    ),
    Figure(
        "in-process `Store.add` p95",
        "≤ 120 ms, flat",
        lambda r: _get(r, "add_inprocess", "p95"),
        "ms",
        limit=lambda r: 120.0,
        judged_at="all",
        runs="add_inprocess",
    ),
    Figure(
        "CLI `memstore add` median, no daemon",
        "",
        lambda r: _get(r, "cli_add_nodaemon", "median"),
        "ms",
        runs="cli_add_nodaemon",
    ),
    Figure(
        "`memstore reindex`",
        "≥ 2,000 mem/s",
        lambda r: _get(r, "reindex", "per_s"),
        "mem/s",
        lambda r: (
            (_get(r, "fts5_build", "docs") or 0)
            / ((_get(r, "fts5_build", "total_ms") or 1000) / 1000)
        ),
        floor=2000.0,
    ),
    Figure("`memstore audit`", "scales", lambda r: _get(r, "audit", "s"), "s"),
    Figure("`memstore dedupe --list`", "scales", lambda r: _get(r, "dedupe", "s"), "s"),
    Figure(
        "sync bringing the vault in (init+remote+sync)",
        "",
        lambda r: _get(r, "clone", "sync_s"),
        "s",
        lambda r: (_get(r, "fts5_build", "total_ms") or 0) / 1000,
    ),
    Figure(
        "sync bringing in `--sync-new` (1,000) new adds",
        "≤ 10 s",
        lambda r: _get(r, "sync_new", "s"),
        "s",
        lambda r: _get(r, "sync_new_fts5", "s"),
        limit=lambda r: 10.0,
    ),
    Figure("  peak RSS of that sync", "", lambda r: _get(r, "sync_new", "peak_rss_mib"), "MiB"),
    Figure("  `git status` of the synced vault", "", lambda r: _get(r, "git_status_s"), "s"),
    Figure("disk: memory files", "", lambda r: _get(r, "disk_mib", "files"), "MiB"),
    Figure("disk: .git", "", lambda r: _get(r, "disk_mib", "git"), "MiB"),
    Figure(
        "disk: the index",
        "",
        lambda r: _get(r, "disk_mib", "index"),
        "MiB",
        lambda r: _get(r, "disk_mib", "fts5"),
    ),
    Figure("  git's index file", "", lambda r: _get(r, "disk_mib", "git_index"), "MiB"),
    Figure("whole size, wall", "≤ ~10 min", lambda r: _get(r, "bench_wall_s"), "s"),
    Figure(
        "other processes' load",
        "",
        lambda r: _get(r, "other_processes", "cores"),
        "cores",
    ),
)


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit in ("ms", "MiB") and value < 10:
        return f"{value:.1f} {unit}"
    if unit == "cores":
        return f"{value:.2f}"
    if unit == "s":
        return f"{value:.1f} s"
    return f"{value:,.0f} {unit}"


def cell(fig: Figure, r: dict[str, Any] | None) -> str:
    if r is None:
        return "not run"
    if fig.needs_daemon and not r.get("daemon"):
        return NA_DAEMON
    for key in ("reindex", "audit", "dedupe"):
        stopped = _get(r, key, "stopped_after_s")
        if fig.label.startswith(f"`memstore {key}") and stopped:
            if key == "reindex":
                return f"< {r['n'] / stopped:,.0f} mem/s (stopped after {stopped:.0f} s)"
            return f"> {stopped:.0f} s (stopped)"
    text = fmt(fig.value(r), fig.unit)
    runs = _runs_note(fig, r)
    return text + runs


def _runs_note(fig: Figure, r: dict[str, Any]) -> str:
    """ " (n=X)" when a phase ran fewer times than planned (its time budget ran out)."""
    runs = _get(r, fig.runs) if fig.runs else None
    if not isinstance(runs, dict) or "n" not in runs:
        return ""
    planned = _get(r, "planned", fig.runs or "")
    if runs.get("stopped_early") or (planned and runs["n"] < planned):
        return f" (n={runs['n']})"
    return ""


def verdict(fig: Figure, rows: list[dict[str, Any]]) -> str:
    judged = rows if fig.judged_at == "all" else rows[-1:]
    if not judged or (fig.limit is None and fig.floor is None):
        return ""
    if fig.needs_daemon and not all(r.get("daemon") for r in judged):
        return "n/a"
    for r in judged:
        value = fig.value(r)
        if value is None:
            return "n/a"
        if fig.limit is not None and value > (fig.limit(r) or 0):
            return "missed"
        if fig.floor is not None and value < fig.floor:
            return "missed"
    size = "all sizes" if fig.judged_at == "all" else f"at {rows[-1]['n']:,}"
    return f"met ({size})"


def report_rows(results: list[dict[str, Any]], sizes: Sequence[int]) -> list[list[str]]:
    by_n = {r["n"]: r for r in results}
    rows = []
    for fig in FIGURES:
        fts = (
            " / ".join(fmt(fig.fts5(by_n[n]), fig.unit) for n in sizes if n in by_n)
            if fig.fts5
            else ""
        )
        rows.append(
            [
                fig.label,
                fig.target,
                *(cell(fig, by_n.get(n)) for n in sizes),
                fts,
                verdict(fig, [by_n[n] for n in sizes if n in by_n]),
            ]
        )
    return rows


def print_report(results: list[dict[str, Any]], meta: dict[str, Any], sizes: Sequence[int]) -> None:
    print()
    print(
        f"memstore scale benchmark — {meta['date']} — {meta['python']} — {meta['cpus']} CPUs — "
        f"{meta['platform']} — code {meta['code']['sha256']} (git {meta['git_head']}, sources "
        f"last changed {meta['code']['newest_source_change']}) — SQLite {meta['sqlite']}; other "
        f"processes used {meta['other_processes']['cores']:.2f} cores on average; "
        f"{meta['total_wall_s']:.0f} s in all"
    )
    head = ["figure", "target", *(f"{n:,}" for n in sizes), "FTS5 (same sizes)", "met/missed"]
    rule = ["-" * len(c) for c in head]
    rows = [head, rule, *report_rows(results, sizes)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    rows[1] = ["-" * w for w in widths]
    print()
    for row in rows:  # a markdown table
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    for r in results:
        clone = r["clone"]
        print(
            f"\nN = {r['n']:,}: remote {r['remote']}; init {clone.get('init_s')} s, remote add "
            f"{clone.get('remote_add_s')} s, sync {clone.get('sync_s')} s (peak RSS "
            f"{clone.get('sync_peak_rss_mib')} MiB); adds {r.get('add_statuses')}; memories at "
            f"the end {r.get('final_memories', 0):,}; search outcomes {r.get('search_outcomes')}; daemon "
            f"{'yes, started in ' + str(r.get('daemon_start_s')) + ' s' if r.get('daemon') else 'no'}"
            f"{'; ' + r['daemon_error'] if r.get('daemon_error') else ''}; phases (s) {r.get('phase_s')}; daemon steps (s) {r.get('steps_s')}"
        )


def parser_error(message: str) -> None:
    raise SystemExit(f"bench_scale.py: {message}")


def parse_args(raw: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--quick", action="store_true", help="CI smoke run: 300 memories, few runs")
    parser.add_argument("--batch", type=int, default=500, help="memories per commit on the remote")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--cli-adds", type=int, default=20)
    parser.add_argument("--cli-runs", type=int, default=30)
    parser.add_argument("--min-runs", type=int, default=30)
    parser.add_argument("--phase-budget", type=float, default=60.0, help="seconds per slow phase")
    parser.add_argument(
        "--upkeep-timeout", type=float, default=90.0, help="audit, dedupe (s; 0: skip)"
    )
    parser.add_argument(
        "--reindex-timeout", type=float, default=420.0, help="seconds (the 1M target is 6 min)"
    )
    parser.add_argument(
        "--clone-timeout", type=float, default=3600.0, help="seconds per init/remote add/sync"
    )
    parser.add_argument(
        "--sync-new", type=int, default=1000, help="adds another clone pushes before a sync"
    )
    parser.add_argument(
        "--prepare", action="store_true", help="only build the remotes into --cache, then exit"
    )
    parser.add_argument("--cache", type=Path, help="keep and reuse the generated remotes here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    parser.add_argument(
        "--phases",
        nargs="+",
        choices=list(PHASES),
        default=list(PHASES),
        help="the phases to run after the setup, in this order (default: all)",
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        metavar="DIR",
        help="go on measuring the vault a --keep run left in DIR (one size; no setup)",
    )
    parser.add_argument("--no-snapshot", action="store_true")
    parser.add_argument("--report", type=Path, help="print the table of a --json file; run nothing")
    parser.add_argument(
        "--from-git",
        metavar="REV",
        help="measure the sources committed at REV (e.g. HEAD), not the working tree",
    )
    args = parser.parse_args(raw)
    if args.reuse is not None:
        args.reuse = args.reuse.resolve()
        if len(args.sizes) != 1 or not (args.reuse / "vault").is_dir():
            parser.error("--reuse DIR needs one --sizes and a kept run (DIR/vault) in DIR")
    if args.quick:
        args.sizes = [300]
        args.batch, args.queries, args.warmup, args.adds = 100, 40, 5, 20
        args.cli_adds, args.cli_runs, args.min_runs = 5, 5, 5
        args.phase_budget, args.upkeep_timeout, args.reindex_timeout = 5.0, 30.0, 30.0
        args.sync_new = 20
    return args


def git_head(rev: str = "HEAD") -> str:
    """The short hash of `rev` in this checkout."""
    done = subprocess.run(
        ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short", rev],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "?"


GIT_SOURCES_ENV = "MEMSTORE_BENCH_GIT_SOURCES"
GIT_REV_ENV = "MEMSTORE_BENCH_GIT_REV"


def exec_from_git(rev: str, argv: list[str], script: str = __file__) -> None:
    """Rerun `script` on the product sources as committed at `rev` (then snapshot as usual)."""
    repo = Path(__file__).resolve().parents[2]
    folder = Path(tempfile.mkdtemp(prefix="memstore-bench-git-"))
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", rev, "memstore", "index"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    env = {
        **os.environ,
        GIT_SOURCES_ENV: str(folder),
        GIT_REV_ENV: git_head(rev),
        "PYTHONPATH": path,
    }
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, str(Path(script).resolve()), *argv], env)


def enter_sources(args: argparse.Namespace, raw: list[str], script: str = __file__) -> str | None:
    """Rerun `script` on the sources to measure (committed at --from-git, then a snapshot)."""
    if args.from_git and GIT_SOURCES_ENV not in os.environ:
        exec_from_git(args.from_git, raw, script)  # does not return
    if os.environ.get(GIT_SOURCES_ENV) and not args.keep:
        atexit.register(shutil.rmtree, os.environ[GIT_SOURCES_ENV], ignore_errors=True)
    if not args.no_snapshot and bf.SNAPSHOT_ENV not in os.environ:
        bf.exec_from_snapshot(raw, script)  # does not return
    snapshot = os.environ.get(bf.SNAPSHOT_ENV)
    if snapshot and not args.keep:  # also when the run fails
        atexit.register(shutil.rmtree, snapshot, ignore_errors=True)
    return snapshot


def run_meta(args: argparse.Namespace, snapshot: str | None) -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"Python {platform.python_version()}",
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "code": bf.code_fingerprint(bf.source_base()),
        "git_head": os.environ.get(GIT_REV_ENV) or git_head(),
        "from_git": bool(args.from_git),
        "snapshot": bool(snapshot),
        "daemon": daemon_supported(),
    }


def run_sizes(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each size in its own temporary folder, removed afterwards unless --keep."""
    results = []
    for n in args.sizes:
        tmp = args.reuse or Path(tempfile.mkdtemp(prefix=f"memstore-scale-{n}-"))
        try:
            results.append(bench_size(n, args, tmp))
            bf.log(f"[N={n}] done in {results[-1].get('bench_wall_s')} s")
        finally:
            if args.keep or args.reuse:
                bf.log(f"kept {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    args = parse_args(raw)
    if args.report:
        saved = json.loads(args.report.read_text(encoding="utf-8"))
        print_report(saved["results"], saved["meta"], [r["n"] for r in saved["results"]])
        return 0
    if args.prepare and not args.cache:
        parser_error("--prepare needs --cache DIR (where the remotes are kept)")
    meta = run_meta(args, enter_sources(args, raw))
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    mark = bf.cpu_mark()
    results = run_sizes(args)
    meta["total_wall_s"] = round(time.perf_counter() - started, 1)
    meta["other_processes"] = bf.foreign_load(mark)
    live = Path(os.environ.get(bf.LIVE_ENV) or bf.source_base())
    meta["live_code_at_end"] = bf.code_fingerprint(live)
    if args.prepare:
        bf.log(f"remotes ready in {args.cache}: {[r['remote'] for r in results]}")
        return 0
    if args.json:  # first: a report that fails must not lose the figures
        args.json.write_text(
            json.dumps({"meta": meta, "results": results}, indent=2) + "\n", encoding="utf-8"
        )
        bf.log(f"wrote {args.json}")
    print_report(results, meta, args.sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
