#!/usr/bin/env python
"""What citations cost recall: 10k memories, 2k of them citing functions of a real repository.

A standalone script, not a pytest module (run it under `nice -n 10`):

    python tests/benchmarks/bench_citations.py [--size 10000] [--citing 2000] [--queries 400]

1. A real git repository: a slice of this Python's standard library (json, email, http,
   logging, urllib, xml, importlib, asyncio, ...) copied into a temporary folder and committed.
2. A vault built by adds through the add command's own path (`memstore add`, lean path, in
   this process): `--size` memories, bench_foundation.py's generated ones and `--citing`
   memories about a function of the repository, added from inside it with
   `--cite PATH:SYMBOL`. Beside it, a copy of the same vault with every `cites:` taken out of
   the files, indexed from them: the same memories, none citing.
3. Recall from inside the repository (so every citation of a hit is checked): `Store.recall`
   in-process, and the MCP tool's path (`ops.tools.run("memory_recall")` and its JSON, what
   the daemon answers `memstore serve` with), over the same queries for both vaults: half
   aimed at the citing memories, half bench_foundation.py's query mix. Each query's wall time
   and CPU time (time.process_time) are measured; p50/p95 printed side by side.
4. Then `--edit` of the cited functions get one line more in their body, and recall is
   measured again; the memories marked stale must be exactly those citing an edited function
   (checked through `check_citations`, the code of `memstore list --stale`, and through the
   hits recall returned).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf

from memstore.core.config import Settings
from memstore.ops.client import Request
from memstore.ops.lean import run_add
from memstore.ops.tools import ToolSession
from memstore.ops.tools import run as run_tool
from memstore.service.citations import check_citations
from memstore.service.store import Store
from memstore.service.vault_init import init_vault

PACKAGES = ("json", "email", "http", "logging", "urllib", "xml", "importlib", "asyncio", "unittest")
_SECRETISH = re.compile(r"pass|secret|token|credential|auth|key", re.IGNORECASE)
WORKSPACE = "stdslice"  # the repository's name: its folder, no remote


def make_repository(root: Path) -> list[tuple[str, str, str]]:
    """Copy a slice of the standard library into `root`, commit it, and return its functions
    and methods as (path, symbol, first docstring line or name)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in PACKAGES:
        shutil.copytree(
            stdlib / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "test*")
        )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=b@e", "commit", "-q", "-m", "slice"],
        cwd=root,
        check=True,
    )
    found = []
    for file in sorted(root.rglob("*.py")):
        path = file.relative_to(root).as_posix()
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        named: list[tuple[str, ast.FunctionDef]] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                named.append((node.name, node))
            elif isinstance(node, ast.ClassDef):
                named += [
                    (f"{node.name}.{item.name}", item)
                    for item in node.body
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("__")
                ]
        counts = Counter(name for name, _ in named)
        # one definition per name, its body on lines of its own (edit_functions adds one)
        found += [
            (path, name, _about(node))
            for name, node in named
            if counts[name] == 1 and node.body[0].lineno > node.lineno
        ]
    return found


def _about(node: ast.FunctionDef) -> str:
    doc = ast.get_docstring(node) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    return first[:120] or node.name.replace("_", " ")


def citing_text(path: str, symbol: str, about: str, rng: random.Random) -> str:
    """A memory an agent might write about a function: what it does, and a lesson."""
    lesson = rng.choice(
        (
            "check its callers before changing the signature",
            "it is called on every request, keep it fast",
            "its error path was the cause of a flaky test last week",
            "the tests for it live next to the module",
            "do not copy it; import it",
        )
    )
    # the path is left out of the text: the add's automatic citation would cite the whole
    # file beside the function (--cite names the function)
    return f"{symbol}: {about.rstrip('.')}. Note: {lesson}."


def add_all(
    store: Store,
    items: Sequence[tuple[str, str, tuple[str, ...], str]],
    cwd: Path,
) -> list[float]:
    """Add each (workspace, text, keywords, cite spec or "") through the add command's lean
    path, in this process over `store`; return each add's wall time in ms."""
    env = {**os.environ, "MEMSTORE_VAULT": str(store.vault.root)}
    opened = lambda _settings, _create: contextlib.nullcontext(store)  # noqa: E731
    times = []
    for workspace, text, keywords, spec in items:
        argv = [text, "-w", workspace, "--kind", "lesson" if spec else "note"]
        argv += [f"--keyword={k}" for k in keywords]
        argv += ["--cite", spec] if spec else []
        started = time.perf_counter()
        reply = run_add(Request("add", argv, str(cwd), env, b""), opened)
        times.append((time.perf_counter() - started) * 1000)
        if len(times) % 1000 == 0:
            print(f"  {len(times):,} adds, p50 {statistics.median(times):.1f} ms", flush=True)
        if reply.status != 0:
            raise SystemExit(f"add failed: {reply.stderr.strip()} ({argv[:4]})")
    return times


def generated(corpus: bf.Corpus, count: int) -> list[tuple[str, str, tuple[str, ...], str]]:
    """Return `count` distinct generated memories (bench_foundation.py's), none citing."""
    plain: list[tuple[str, str, tuple[str, ...], str]] = []
    seen: set[str] = set()
    while len(plain) < count:
        g = corpus.make()
        if g.body not in seen:
            seen.add(g.body)
            plain.append((g.workspace, g.body.strip(), g.keywords, ""))
    return plain


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Run `fn` with the garbage collector paused (it runs between calls instead: a
    collection falling in one call or another is noise, not the call's cost)."""
    gc.collect(0)  # cheap: main() froze what the build left (gc.freeze)
    gc.disable()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, out
    finally:
        gc.enable()


def percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
    }


def measure(
    variants: Sequence[tuple[str, Store, Path | None]], queries: Sequence[str], rounds: int
) -> dict[str, dict[str, Any]]:
    """Recall every query in each variant (a name, a store, the folder recall is asked from:
    None checks nothing), in-process and through the MCP tool's path, `rounds` times, the
    variants taking turns query by query (so the machine's load falls on all alike); return
    per variant p50/p95 wall and CPU, the stale hits seen, and what reading the hits' cites
    costs from the manifest (what recall does) and from Whoosh's stored fields, per recall."""
    sessions = {
        name: ToolSession(None, "bench", lambda: True, str(repo or ""))
        for name, _, repo in variants
    }
    for _, store, repo in variants:
        for query in queries[:20]:  # warm: the index's readers, the checker's file cache
            store.recall(query, workspace=None, catch_up=False, cwd=repo)
    times: dict[str, dict[str, list[float]]] = {
        name: {"in_wall": [], "in_cpu": [], "mcp_wall": [], "mcp_cpu": []}
        for name, _, _ in variants
    }
    stale: dict[str, set[str]] = {name: set() for name, _, _ in variants}
    turns = random.Random(len(queries))
    for _ in range(rounds):
        for query in queries:
            # the variants take turns in a random order: none always runs after another
            for name, store, repo in turns.sample(list(variants), len(variants)):
                wall, cpu, found = timed(
                    lambda s=store, q=query, r=repo: s.recall(
                        q, workspace=None, catch_up=False, cwd=r
                    )
                )
                times[name]["in_wall"].append(wall)
                times[name]["in_cpu"].append(cpu)
                stale[name].update(hit.id for hit in found.hits if hit.stale)
                wall, cpu, _ = timed(
                    lambda s=store, q=query, n=name: json.dumps(
                        run_tool("memory_recall", s, {"query": q}, sessions[n])
                    )
                )
                times[name]["mcp_wall"].append(wall)
                times[name]["mcp_cpu"].append(cpu)
    out = {}
    for name, store, _ in variants:
        manifest, stored, check = [], [], []
        for query in queries:
            hits = list(store.search(query, workspace=None, catch_up=False).hits)
            paths = [h.path for h in hits]
            # the staleness step itself: manifest rows, repository, checks, order
            repo = dict((n, r) for n, _, r in variants)[name]
            check.append(timed(lambda h=hits, s=store, r=repo: s.reader._checked(h, r))[1] * 1000)
            manifest.append(timed(lambda p=paths, s=store: s.indexer.by_path(p))[0] * 1000)
            stored.append(timed(lambda p=paths, s=store: s.indexer.search.get(p))[0] * 1000)
        t = times[name]
        out[name] = {
            "stale_step_cpu_us": percentiles(check),
            "cites_lookup_us": {
                "manifest": percentiles(manifest),
                "whoosh_stored": percentiles(stored),
            },
            "in_process": {"wall": percentiles(t["in_wall"]), "cpu": percentiles(t["in_cpu"])},
            "mcp_tool": {"wall": percentiles(t["mcp_wall"]), "cpu": percentiles(t["mcp_cpu"])},
            "stale_hits": sorted(stale[name]),
        }
    return out


def edit_functions(repo: Path, chosen: Sequence[tuple[str, str]]) -> None:
    """Give each (path, symbol) one more line at the start of its body (a real change)."""
    by_path: dict[str, list[str]] = {}
    for path, symbol in chosen:
        by_path.setdefault(path, []).append(symbol)
    for path, symbols in by_path.items():
        file = repo / path
        lines = file.read_text(encoding="utf-8").splitlines(keepends=True)
        tree = ast.parse("".join(lines))
        inserts = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in symbols]
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                inserts += [
                    item
                    for item in node.body
                    if isinstance(item, ast.FunctionDef) and f"{node.name}.{item.name}" in symbols
                ]
        for node in sorted(inserts, key=lambda n: -n.body[0].lineno):
            first = node.body[0]
            indent = " " * first.col_offset
            lines.insert(first.lineno - 1, f"{indent}_edited_by_bench = True\n")
        file.write_text("".join(lines), encoding="utf-8")


def build(
    root: Path, settings: Settings, items: list[tuple[str, str, tuple[str, ...], str]], cwd: Path
) -> tuple[Store, dict[str, Any]]:
    init_vault(root, settings)
    store = Store.open(settings)
    wall, cpu, times = timed(lambda: add_all(store, items, cwd))
    return store, {
        "adds": len(items),
        "wall_s": round(wall / 1000, 1),
        "cpu_s": round(cpu / 1000, 1),
        "add": percentiles(times),
    }


def without_cites(source: Path, root: Path, settings: Settings) -> tuple[Store, dict[str, Any]]:
    """Copy the vault at `source` to `root` with every memory's `cites:` taken out (one
    commit), and index it from its files: the same memories, none citing."""
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".memstore"))
    stripped = 0
    for file in root.rglob("*.md"):
        text = file.read_text(encoding="utf-8")
        if "\ncites:\n" in text:
            head, _, rest = text.partition("\ncites:\n")
            rest = "\n".join(line for line in rest.split("\n") if not line.startswith("  - {"))
            file.write_text(f"{head}\n{rest}", encoding="utf-8")
            stripped += 1
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@e", "commit", "-qm", "no cites"],
        cwd=root,
        check=True,
    )
    store = Store.open(settings)
    wall, _, _ = timed(store.catch_up)
    return store, {"stripped": stripped, "index_s": round(wall / 1000, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--citing", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--edit", type=int, default=40)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--all-adds", action="store_true", help="add every memory (default: the citing ones)"
    )
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-cite-") as tmp_name:
        tmp = Path(tmp_name)
        repo = tmp / WORKSPACE
        repo.mkdir()
        functions = make_repository(repo)
        # a text naming a password or token is refused by the add's secret scan: not these
        usable = [f for f in functions if not _SECRETISH.search(f"{f[1]} {f[2]}")]
        chosen = rng.sample(usable, min(args.citing, len(usable)))
        corpus = bf.Corpus(args.seed)
        citing = [
            (WORKSPACE, citing_text(path, symbol, about, rng), ("stdlib",), f"{path}:{symbol}")
            for path, symbol, about in chosen
        ]
        settings_a = Settings(vault=tmp / "plain", source="bench", session="b", host="h")
        settings_b = Settings(vault=tmp / "cited", source="bench", session="b", host="h")
        results: dict[str, Any] = {"size": args.size, "citing": len(citing)}
        if args.all_adds:  # every memory through the add path (~45 min at 10k on a busy box)
            plain = generated(corpus, args.size - len(citing))
            mixed = plain + citing
            rng.shuffle(mixed)
            store_b, results["build_with"] = build(tmp / "cited", settings_b, mixed, repo)
        else:  # the others written as files in one commit, then the citing ones added
            items = bf.write_vault(tmp / "cited", args.size - len(citing), corpus, settings_b)
            plain = [(g.workspace, g.body.strip(), g.keywords, "") for g in items]
            store_b = Store.open(settings_b)
            store_b.catch_up()
            wall, cpu, times = timed(lambda: add_all(store_b, citing, repo))
            results["build_with"] = {
                "written": len(plain),
                "adds": len(citing),
                "wall_s": round(wall / 1000, 1),
                "cpu_s": round(cpu / 1000, 1),
                "add": percentiles(times),
            }
        print(f"built, with citations: {results['build_with']}", flush=True)
        queries = _queries(plain, citing, args.queries, rng)
        results["queries"] = len(queries)
        store_a, results["build_without"] = without_cites(tmp / "cited", tmp / "plain", settings_a)
        print(f"copied without citations: {results['build_without']}", flush=True)
        gc.collect()
        gc.freeze()  # what the build made stays: a collection walks only what recall makes
        try:
            variants = [("unchecked", store_a, None), ("without", store_a, repo)]
            results.update(measure([*variants, ("with", store_b, repo)], queries, args.rounds))
            edited = rng.sample([(p, s) for p, s, _ in chosen], min(args.edit, len(chosen)))
            edit_functions(repo, edited)
            after = measure([*variants, ("with_after_edits", store_b, repo)], queries, args.rounds)
            results["with_after_edits"] = after["with_after_edits"]
            check = check_citations(store_b, repo)
            results["audit"] = _exact(store_b, check, citing, edited, results["with_after_edits"])
        finally:
            store_a.close()
            store_b.close()
    _print(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


def _queries(
    plain: Sequence[tuple[str, str, tuple[str, ...], str]],
    citing: Sequence[tuple[str, str, tuple[str, ...], str]],
    count: int,
    rng: random.Random,
) -> list[str]:
    """Half aimed at citing memories (two or three of their words), half the foundation mix."""
    aimed = []
    for _, text, _, _ in rng.sample(list(citing), min(count // 2, len(citing))):
        words = [w for w in text.replace(":", " ").replace(".", " ").split() if len(w) > 3]
        aimed.append(" ".join(rng.sample(words, min(len(words), rng.choice((2, 3))))))
    items = [bf.Generated(w, "note", t, k, (), "") for w, t, k, _ in plain[:2000]]
    mix = [q.text for q in bf.make_queries(items, count - len(aimed), 7)]
    return aimed + mix


def _exact(
    store: Store,
    check: Any,
    citing: Sequence[tuple[str, str, tuple[str, ...], str]],
    edited: Sequence[tuple[str, str]],
    after: dict[str, Any],
) -> dict[str, Any]:
    """Compare the memories marked stale with those citing an edited function."""
    specs = {f"{p}:{s}" for p, s in edited}
    texts = {text for _, text, _, spec in citing if spec in specs}
    stale_texts = set()
    for memory in check.stale:
        stale_texts.add(store.vault.read(memory.path).body.strip())
    marked = set(after["stale_hits"])
    expected_ids = {
        e.id for e in store.indexer.entries() if e.path in {m.path for m in check.stale}
    }
    return {
        "edited_functions": len(edited),
        "stale_memories": len(check.stale),
        "exactly_the_edited": stale_texts == texts,
        "false_marks": len(stale_texts - texts),
        "missed": len(texts - stale_texts),
        "recall_marks_all_stale": marked <= expected_ids,
        "citations_checked": check.checked,
    }


def _print(results: dict[str, Any]) -> None:
    print(
        f"\n{results['size']:,} memories, {results['citing']:,} citing; "
        f"{results['queries']} queries x rounds; wall and CPU ms"
    )
    names = ("unchecked", "without", "with", "with_after_edits")
    print(f"{'':26}{'no cwd':>12}{'no cites':>12}{'2k cites':>12}{'after edits':>14}")
    for path in ("in_process", "mcp_tool"):
        for clock in ("wall", "cpu"):
            for pct in ("p50", "p95"):
                row = [results[name][path][clock][pct] for name in names]
                label = f"{path} {clock} {pct}"
                print(f"{label:26}{row[0]:>12}{row[1]:>12}{row[2]:>12}{row[3]:>14}")
    steps = {n: results[n]["stale_step_cpu_us"] for n in names}
    print(f"the staleness step alone (reader._checked), CPU us p50/p95: {steps}")
    lookup = results["with"]["cites_lookup_us"]
    print(
        f"hits' cites per recall, us p50/p95: manifest rows {lookup['manifest']}, "
        f"Whoosh stored fields {lookup['whoosh_stored']}"
    )
    print(f"audit after edits: {results['audit']}")


if __name__ == "__main__":
    raise SystemExit(main())
