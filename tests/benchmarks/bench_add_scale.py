"""What one `Store.add` costs at 1k, 10k and 100k memories, beside a bare `git commit`.

The vault is built the way a user gets one that size (generated memories written and
committed in batches, packed, then indexed), not a freshly compacted copy. `--layout flat`
puts files where memstore wrote them before issue 12 (`<workspace>/<slug>-<id>.md`);
`sharded` where it writes them now (`<workspace>/<YYYY-MM>/<slug>-<id>.md`). The timed adds
go wherever the running code puts a new memory. The reference beside it is the git command
line committing one new file of the same size in the same vault (`git add` + `git commit`).
Under each figure: the parts of an add by owner (p50/p95 of time spent in each, timed by a
wrapper on every add) and what writing git's index file whole costs at that size.

    python tests/benchmarks/bench_add_scale.py --memories 1000 10000 100000 --adds 60
    python tests/benchmarks/bench_add_scale.py --memories 100000 --vault-dir /tmp/h1/v \\
        --layout flat --profile       # reuse a built vault; where the time goes (cProfile)

`--vault PATH` measures an existing vault instead (one `bench_scale.py` made: init + remote
+ sync, as a user gets it) and prints issue 39's add figures, each beside its reference
from the same run (wall and CPU time; the machine is shared): in-process `Store.add` beside
the floor (a bare libgit2 blob + tree + commit on the same repository, alternating with the
adds), its parts by owner, then with `--cli N` the CLI add through the daemon and without
one, beside the interpreter (`python -c pass`), an FTS5 process adding one row to a table
of the vault's texts, and `--localmem 'CMD {text}'` when given (see add_floor.py):

    python tests/benchmarks/bench_add_scale.py --vault /tmp/adds-v100k/vault --adds 200 --cli 20

`--vault-dir` keeps each built vault (`<dir>/<layout>-<n>`) for the next run; every run
adds its timed memories to it. Build a vault with the code you measure: the index format
may differ between versions.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf

from memstore.core.codec import derive_id, render_memory, slugify
from memstore.core.config import Settings
from memstore.core.model import Memory
from memstore.service.store import Store, init_vault
from memstore.vault.git import GitRepo, Trailers

BATCH = 5_000  # memories per commit while building: a sync or an import's worth
# Timed on every add (a wrapper, no profiler): where an add's time goes, by owner.
TIMED = (
    ("memstore.catalog.indexer", "Indexer", "catch_up", "indexer: freshness check"),
    ("memstore.catalog.indexer", "Indexer", "record", "indexer: index one document"),
    ("memstore.catalog.indexer", "Indexer", "by_id_prefix", "indexer: free id lookups"),
    ("memstore.vault.git", "GitRepo", "commit", "git: commit (blob, trees, commit, git index)"),
    ("memstore.vault.git", "GitRepo", "changed_paths", "git: outside-edit check"),
    ("memstore.vault.files", "Vault", "write_bytes_atomic", "file: atomic write (fsync)"),
    ("memstore.service.maintenance", "Maintenance", "heal", "lock-time heal"),
)
# The functions whose cumulative time --profile reports, by the part of the code that owns them.
PARTS = (
    ("indexer.py", "catch_up", "freshness check (indexer)"),
    ("indexer.py", "record", "index one document (indexer)"),
    ("indexer.py", "by_hash", "duplicate lookup (indexer)"),
    ("indexer.py", "by_id_prefix", "free id lookup (indexer)"),
    ("git.py", "commit", "git commit, all of it"),
    ("git.py", "_tree_with", "  trees rewritten"),
    ("git.py", "_stage", "  git index file"),
    ("edits.py", "commit_edits", "outside-edit check"),
    ("vault.py", "write_bytes_atomic", "atomic file write (fsync)"),
    ("maintenance.py", "heal", "lock-time heal"),
)


def relative_path(layout: str, memory: Memory) -> str:
    name = f"{slugify(memory.body)}-{memory.id}.md"
    if layout == "flat":
        return f"{memory.workspace}/{name}"
    return f"{memory.workspace}/{memory.created[:7]}/{name}"


def build(root: Path, n: int, layout: str, settings: Settings) -> None:
    """Write `n` generated memories in `layout`, commit them in batches, pack, index."""
    init_vault(root, settings)
    git = GitRepo.open(root)
    trailers = Trailers(settings.source, settings.session, settings.host)
    corpus = bf.Corpus(seed=12)
    used: set[str] = set()
    batch: list[str] = []
    made = 0
    while made < n:
        g = corpus.make()
        memory_id, length = derive_id(g.workspace, g.body, 8), 8
        while memory_id in used:
            length += 2
            memory_id = derive_id(g.workspace, g.body, length)
        used.add(memory_id)
        memory = Memory(
            id=memory_id,
            workspace=g.workspace,
            body=g.body,
            kind=g.kind,
            keywords=g.keywords,
            source="claude-code",
            created=corpus.created(),
        )
        rel = relative_path(layout, memory)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(render_memory(memory), encoding="utf-8")
        batch.append(rel)
        made += 1
        if len(batch) == BATCH or made == n:
            git.commit(f"import: {len(batch)} generated memories", trailers, add=tuple(batch))
            batch = []
    subprocess.run(["git", "gc", "--quiet"], cwd=root, check=True)  # as memstore's tidy would
    with Store.open(settings) as store:
        store.reindex()
    (root / ".git" / "bench-built").touch()


def text(rng: random.Random, n: int) -> str:
    words = [rng.choice(bf.TOPICS[t]["words"]) for t in rng.sample(sorted(bf.TOPICS), 4)]
    return f"timed add {n}: {' '.join(words)} behaves differently after the upgrade #{rng.random()}"


def timed(spent: dict[str, float], label: str, method: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - start

    return wrapper


def time_adds(
    store: Store, adds: int, rng: random.Random
) -> tuple[list[float], dict[str, list[float]]]:
    """Time each add, and the parts in TIMED within it."""
    spent: dict[str, float] = {}
    for module, cls, name, label in TIMED:
        owner = getattr(importlib.import_module(module), cls)
        setattr(owner, name, timed(spent, label, getattr(owner, name)))
    timings, parts = [], {label: [] for *_, label in TIMED}
    for n in range(adds):
        body = text(rng, n)
        spent.clear()
        start = time.perf_counter()
        store.add(body, workspace="webshop", keywords=("bench",))
        timings.append((time.perf_counter() - start) * 1000)
        for label in parts:
            parts[label].append(spent.get(label, 0.0) * 1000)
    return timings, parts


def time_git_cli(root: Path, adds: int, rng: random.Random) -> list[float]:
    """The git command line committing one new file per run, in the same vault."""
    folder = root / "webshop" / "git-reference"
    folder.mkdir(exist_ok=True, mode=0o700)
    timings = []
    for n in range(adds):
        path = folder / f"reference-{n}-{rng.randrange(10**9)}.md"
        start = time.perf_counter()
        path.write_text(text(rng, n) + "\n", encoding="utf-8")
        subprocess.run(["git", "add", "--", str(path)], cwd=root, check=True)
        subprocess.run(
            ["git", "commit", "-q", "--no-verify", "-m", "reference"], cwd=root, check=True
        )
        timings.append((time.perf_counter() - start) * 1000)
    # put the vault back as memstore left it, for the next run
    subprocess.run(["git", "rm", "-rq", "--", str(folder)], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "drop reference"], cwd=root, check=True)
    shutil.rmtree(folder, ignore_errors=True)
    return timings


def index_file_ms(root: Path) -> str:
    """What writing git's index file whole costs at this size (median of 5)."""
    import pygit2

    index = pygit2.Repository(str(root)).index
    reads, writes = [], []
    for _ in range(5):
        start = time.perf_counter()
        index.read(True)
        reads.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        index.write()
        writes.append((time.perf_counter() - start) * 1000)
    size = (root / ".git" / "index").stat().st_size / 1e6
    return (
        f"git index file: {len(index):,} entries, {size:.1f} MB: read "
        f"{statistics.median(reads):.1f} ms, write {statistics.median(writes):.1f} ms"
    )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def report_profile(profile: cProfile.Profile, adds: int) -> None:
    stats = pstats.Stats(profile)
    rows = stats.stats  # type: ignore[attr-defined]
    for file_end, name, label in PARTS:
        total = sum(
            cumulative
            for (path, _, func), (_, _, _, cumulative, _) in rows.items()
            if func == name and path.endswith(file_end)
        )
        print(f"    {label:34} {total / adds * 1000:7.1f} ms per add")


def run(n: int, args: argparse.Namespace) -> None:
    base = Path(args.vault_dir) if args.vault_dir else Path(tempfile.mkdtemp(prefix="bench-add-"))
    root = base / f"{args.layout}-{n}"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    if not (root / ".git" / "bench-built").exists():
        shutil.rmtree(root, ignore_errors=True)
        start = time.perf_counter()
        build(root, n, args.layout, settings)
        print(f"  built {n:,} memories ({args.layout}) in {time.perf_counter() - start:.0f} s")
    rng = random.Random(n)
    with Store.open(settings) as store:
        store.add("warm up the index and the repository", workspace="webshop")
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        timings, parts = time_adds(store, args.adds, rng)
        if profile is not None:
            profile.disable()
    reference = time_git_cli(root, args.adds, rng)
    print(
        f"{n:>7,} memories ({args.layout:7})  Store.add p50 {statistics.median(timings):6.1f} ms"
        f"  p95 {pct(timings, 0.95):6.1f} ms   |  git add+commit p50 "
        f"{statistics.median(reference):6.1f} ms  p95 {pct(reference, 0.95):6.1f} ms"
    )
    print(f"    {index_file_ms(root)}")
    for label, values in parts.items():
        print(
            f"    {label:46} p50 {statistics.median(values):6.1f}  p95 {pct(values, 0.95):6.1f} ms"
        )
    if profile is not None:
        print("  cProfile, cumulative per add:")
        report_profile(profile, args.adds)
    if not args.vault_dir:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, help="measure this existing vault (issue 39)")
    parser.add_argument("--cli", type=int, default=0, help="with --vault: CLI adds of each kind")
    parser.add_argument("--localmem", default="", help="with --cli: 'CMD {text}' to compare")
    parser.add_argument("--memories", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--adds", type=int, default=60)
    parser.add_argument("--layout", choices=("flat", "sharded"), default="sharded")
    parser.add_argument("--vault-dir", default="", help="keep and reuse built vaults here")
    parser.add_argument("--profile", action="store_true", help="where an add's time goes")
    args = parser.parse_args()
    if args.vault:
        import add_floor

        add_floor.run(args.vault, args.adds, args.cli, args.localmem)
        return
    for n in args.memories:
        run(n, args)


if __name__ == "__main__":
    main()
