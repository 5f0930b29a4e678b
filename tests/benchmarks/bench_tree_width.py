"""What one commit of a new file costs as its folder grows: the libgit2 floor against folder width.

An add rewrites the trees on its path (root -> workspace -> month folder). This builds, in a
bare repository, a month folder of N entries (names like memstore's, 40-70 bytes) inside a
workspace of 24 months inside a root of 10 workspaces, then times the floor an add pays
(add_floor.py's `floor_commit`: a blob, the three trees on its way, a commit) for each N,
interleaved so every width sees the same load. Also splits the cost: the month folder's tree
written alone, and the same commit with the new file in a small sibling folder.

`--sub-levels K ...` also times the layout not adopted (docs/benchmarks.md "Eighth session:
adds"): the same files one level further down, in K folders under the month (31 for a day
level, 256 for the first two hex characters of an id), where a commit writes four trees, the
new file's sub-folder of width/K entries and the month's of K.

    python tests/benchmarks/bench_tree_width.py --widths 1000 10000 30000 100000 --adds 60
    python tests/benchmarks/bench_tree_width.py --widths 10000 100000 --sub-levels 31 256
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from typing import Any

import pygit2

SIGNATURE = pygit2.Signature("bench", "bench@example.invalid")
BLOB = pygit2.enums.FileMode.BLOB
TREE = pygit2.enums.FileMode.TREE


def name(rng: random.Random, n: int) -> str:
    words = ("deploy", "cache", "nginx", "upload", "limit", "staging", "review", "token")
    slug = "-".join(rng.choice(words) for _ in range(rng.randrange(3, 7)))
    return f"{slug}-{n:x}{rng.randrange(16**6):06x}.md"


def build(repo: Any, width: int, rng: random.Random, split: int = 0) -> tuple[str, Any]:
    """A commit whose webshop/2026-12 holds `width` files (in `split` sub-folders of it when
    given); return its ref and head commit."""
    blob = repo.create_blob(b"---\nid: x\n---\na memory\n")
    big = repo.TreeBuilder()
    if split:
        parts = [repo.TreeBuilder() for _ in range(split)]
        for n in range(width):
            parts[n % split].insert(name(rng, n), blob, BLOB)
        for k, part in enumerate(parts):
            big.insert(f"{k:02x}", part.write(), TREE)
    for n in range(0 if split else width):
        big.insert(name(rng, n), blob, BLOB)
    small = repo.TreeBuilder()
    for n in range(200):
        small.insert(name(rng, n), blob, BLOB)
    small_id = small.write()
    workspace = repo.TreeBuilder()
    for month in range(1, 24):
        workspace.insert(
            f"2025-{month:02d}" if month <= 12 else f"2026-{month - 12:02d}", small_id, TREE
        )
    workspace.insert("2026-12", big.write(), TREE)
    root = repo.TreeBuilder()
    for ws in range(9):
        root.insert(f"ws{ws}", workspace.write(), TREE)
    root.insert("webshop", workspace.write(), TREE)
    ref = f"refs/heads/w{width}" + (f"-in-{split}" if split else "")
    oid = repo.create_commit(ref, SIGNATURE, SIGNATURE, "base", root.write(), [])
    return ref, repo[oid]


def floor_commit(repo: Any, ref: str, month: str, data: bytes, file: str) -> None:
    """add_floor.py's floor: blob, the three trees on its way, a commit on `ref`."""
    head = repo[repo.references[ref].target]
    blob = repo.create_blob(data)
    ws_tree = repo[head.tree["webshop"].id]
    month_builder = repo.TreeBuilder(repo[ws_tree[month].id])
    month_builder.insert(file, blob, BLOB)
    ws_builder = repo.TreeBuilder(ws_tree)
    ws_builder.insert(month, month_builder.write(), TREE)
    root_builder = repo.TreeBuilder(head.tree)
    root_builder.insert("webshop", ws_builder.write(), TREE)
    repo.create_commit(ref, SIGNATURE, SIGNATURE, "floor", root_builder.write(), [head.id])


def floor_commit_below(repo: Any, ref: str, data: bytes, file: str, folder: str) -> None:
    """The floor one level further down: blob, webshop/2026-12/`folder`, month, workspace and
    root trees, a commit on `ref`."""
    head = repo[repo.references[ref].target]
    blob = repo.create_blob(data)
    ws_tree = repo[head.tree["webshop"].id]
    month_tree = repo[ws_tree["2026-12"].id]
    sub_builder = repo.TreeBuilder(repo[month_tree[folder].id])
    sub_builder.insert(file, blob, BLOB)
    month_builder = repo.TreeBuilder(month_tree)
    month_builder.insert(folder, sub_builder.write(), TREE)
    ws_builder = repo.TreeBuilder(ws_tree)
    ws_builder.insert("2026-12", month_builder.write(), TREE)
    root_builder = repo.TreeBuilder(head.tree)
    root_builder.insert("webshop", ws_builder.write(), TREE)
    repo.create_commit(ref, SIGNATURE, SIGNATURE, "floor", root_builder.write(), [head.id])


def month_tree_only(repo: Any, ref: str, data: bytes, file: str) -> None:
    head = repo[repo.references[ref].target]
    month_builder = repo.TreeBuilder(repo[repo[head.tree["webshop"].id]["2026-12"].id])
    month_builder.insert(file, repo.create_blob(data), BLOB)
    month_builder.write()


def timed(action: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def cell(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(values):7.2f} / {p95:7.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[1000, 10_000, 30_000, 100_000])
    parser.add_argument("--adds", type=int, default=60)
    parser.add_argument("--sub-levels", type=int, nargs="*", default=[], help="e.g. 31 256")
    args = parser.parse_args()
    rng = random.Random(7)
    repo = pygit2.init_repository(tempfile.mkdtemp(prefix="bench-tree-width-"), bare=True)
    refs = {w: build(repo, w, rng)[0] for w in args.widths}
    below = {(w, k): build(repo, w, rng, k)[0] for w in args.widths for k in args.sub_levels}
    kinds = (
        "floor, file in the wide folder",
        "floor, file in a 200-file folder",
        "wide folder's tree alone",
        *(f"floor, month split in {k} sub-folders" for k in args.sub_levels),
    )
    rows: dict[tuple[int, str], tuple[list[float], list[float]]] = {
        (w, k): ([], []) for w in args.widths for k in kinds
    }
    data = b"---\nid: timed\n---\ntimed add of a memory of ordinary length, about two lines\n"
    for n in range(args.adds):  # interleaved: each width sees the same load
        for width, ref in refs.items():
            file = f"timed-{n}-{rng.randrange(10**9)}.md"
            split = [
                lambda r=below[width, k], f=file, d=f"{rng.randrange(k):02x}": floor_commit_below(
                    repo, r, data, f, d
                )
                for k in args.sub_levels
            ]
            for kind, act in zip(
                kinds,
                (
                    lambda r=ref, f=file: floor_commit(repo, r, "2026-12", data, f),
                    lambda r=ref, f=file: floor_commit(repo, r, "2026-11", data, f),
                    lambda r=ref, f=file: month_tree_only(repo, r, data, f),
                    *split,
                ),
                strict=True,
            ):
                wall, cpu = timed(act)
                rows[(width, kind)][0].append(wall)
                rows[(width, kind)][1].append(cpu)
    size = {
        w: len(
            repo[repo[repo[repo.references[r].target].tree["webshop"].id]["2026-12"].id].read_raw()
        )
        for w, r in refs.items()
    }
    print(f"{args.adds} commits per row, interleaved     wall p50 / p95 ms     CPU p50 / p95 ms")
    for width in args.widths:
        print(f"month folder of {width:,} files (tree object {size[width] / 1e6:.2f} MB)")
        for kind in kinds:
            wall, cpu = rows[(width, kind)]
            print(f"  {kind:36} {cell(wall)}     {cell(cpu)}")


if __name__ == "__main__":
    main()
