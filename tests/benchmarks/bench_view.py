#!/usr/bin/env python
"""Benchmark of `memstore view` (issue 41): building the page's data over vaults of many adds.

A standalone script, not a pytest module:

    nice -n 10 python tests/benchmarks/bench_view.py [--sizes 1000 10000 100000] [--keep DIR]

For each size N a vault is made the way agents make one: N memories each added in a commit
of its own (`add(<workspace>): …` with the trailers an add writes, sessions of a few dozen
adds from four agents on three machines), with now and then a memory stored again
(`seen`), confirmed, archived, corrected (`supersede`), edited by a person (`edit`, no
session) and forgotten — the commits streamed through `git fast-import` as bench_scale.py
does (its corpus and layout). The vault is a clone of that history, indexed once (not
timed). Then, three runs each (the first cold: no clean text remembered from an earlier view, so
every text is scanned for credentials; the others warm):

  * `collect_view` (the data: history, memories, queues, graph): wall and CPU seconds (this
    process's and its git children's);
  * `render_page` + the private atomic write (`memstore view`'s whole build): the file's size;
  * `memstore view --json` as a process: wall.

`--keep DIR` keeps (and reuses) the built vaults there, so a second run skips the build.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale as bs

from memstore.core.codec import render_memory
from memstore.core.config import Settings
from memstore.core.model import Memory, summary
from memstore.service.store import Store, init_vault

SOURCES = ("claude-code", "codex", "cursor", "cli")
HOSTS = ("laptop", "desk", "ci-runner")
SESSION_ADDS = 40  # adds per agent session (a long coding session)
# Shares of the commits after the adds that change an existing memory, by kind: measured
# vaults are mostly adds (the capture hooks), with a little curation.
CHANGES = (("seen", 0.03), ("confirm", 0.01), ("archive", 0.005), ("supersede", 0.01))
EDITS = 0.005  # a person's hand edit
FORGETS = 0.002


def _stamp(created: str) -> int:
    return int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())


class History:
    """The commits of the generated vault, written to `git fast-import` one at a time."""

    def __init__(self, bare: Path, branch: str, parent: str) -> None:
        self.importer = subprocess.Popen(
            ["git", "-C", str(bare), "fast-import", "--quiet", "--done"],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.branch = branch.encode()
        self.parent = parent
        self.count = 0

    def commit(
        self, message: str, when: int, files: dict[str, bytes | None], who: str = "agent"
    ) -> None:
        assert self.importer.stdin is not None
        data = message.encode("utf-8")
        person = f"{who} <{who}@example.invalid> {when} +0000".encode()
        out = [b"commit ", self.branch, b"\nauthor ", person, b"\ncommitter ", person]
        out += [b"\ndata %d\n" % len(data), data]
        if self.parent:
            out.append(f"from {self.parent}\n".encode())
            self.parent = ""
        for path, blob in files.items():
            if blob is None:
                out += [b"D ", path.encode("utf-8"), b"\n"]
            else:
                out += [b"M 100644 inline ", path.encode("utf-8"), b"\ndata %d\n" % len(blob)]
                out += [blob, b"\n"]
        self.importer.stdin.write(b"".join(out) + b"\n")
        self.count += 1

    def close(self) -> None:
        assert self.importer.stdin is not None
        self.importer.stdin.write(b"done\n")
        self.importer.stdin.close()
        if self.importer.wait() != 0:
            err = (
                self.importer.stderr.read().decode("utf-8", "replace")
                if self.importer.stderr
                else ""
            )
            raise RuntimeError(f"git fast-import failed: {err[-600:]}")


def trailers(source: str, session: str, host: str) -> str:
    lines = f"Memstore-Source: {source}\n"
    if session:
        lines += f"Memstore-Session: {session}\n"
    return lines + f"Memstore-Host: {host}\n"


def build_history(bare: Path, memories: Sequence[Memory], seed: int) -> dict[str, int]:
    """One commit per add, then the changes of CHANGES, EDITS and FORGETS, in time order."""
    import pygit2

    rng = random.Random(seed)
    repo = pygit2.Repository(str(bare))
    history = History(bare, repo.head.name, str(repo.head.target))
    live: dict[str, tuple[str, Memory]] = {}
    kinds: dict[str, int] = {}
    session, source, host = "", "", ""
    for number, memory in enumerate(memories):
        if number % SESSION_ADDS == 0:
            source, host = rng.choice(SOURCES), rng.choice(HOSTS)
            session = f"{source[:2]}-{number // SESSION_ADDS:06x}"
        memory = replace(memory, source=source)
        path = bs.memory_path(memory)
        live[memory.id] = (path, memory)
        when = _stamp(memory.created)
        message = f"add({memory.workspace}): {summary(memory.body)}\n\n"
        history.commit(message + trailers(source, session, host), when, {path: _file(memory)})
        kinds["add"] = kinds.get("add", 0) + 1
        roll = rng.random()
        for kind, share in CHANGES:
            if roll < share and len(live) > 1:
                _change(history, rng, live, kind, when, trailers(source, session, host))
                kinds[kind] = kinds.get(kind, 0) + 1
                break
            roll -= share
        if rng.random() < EDITS:
            target = rng.choice(list(live))
            path, old = live[target]
            edited = replace(old, body=old.body + "\n\n(checked by hand: still true)")
            live[target] = (path, edited)
            message = f"edit({old.workspace}): {summary(edited.body)}\n\n"
            history.commit(
                message + trailers("editor", "", host), when + 30, {path: _file(edited)}, "person"
            )
            kinds["edit"] = kinds.get("edit", 0) + 1
        if rng.random() < FORGETS and len(live) > 1:
            target = rng.choice(list(live))
            path, old = live.pop(target)
            message = f"forget({old.workspace}): {summary(old.body)}\n\n"
            history.commit(message + trailers(source, session, host), when + 40, {path: None})
            kinds["forget"] = kinds.get("forget", 0) + 1
    history.close()
    subprocess.run(["git", "-C", str(bare), "repack", "-a", "-d", "-q"], check=True)
    return {"commits": history.count, **kinds}


def _file(memory: Memory) -> bytes:
    return render_memory(memory).encode("utf-8")


def _change(
    history: History,
    rng: random.Random,
    live: dict[str, tuple[str, Memory]],
    kind: str,
    when: int,
    lines: str,
) -> None:
    target = rng.choice(list(live))
    path, old = live[target]
    if kind == "seen":
        new = replace(old, seen=old.seen + 1)
        subject = f"seen({old.workspace}): {summary(old.body)} (seen {new.seen})"
    elif kind == "confirm":
        new = replace(old, confirmed=old.confirmed + 1)
        subject = f"confirm({old.workspace}): {summary(old.body)}"
    elif kind == "archive":
        new = replace(old, archived=datetime.fromtimestamp(when).strftime("%Y-%m-%dT%H:%M:%SZ"))
        subject = f"archive({old.workspace}): {summary(old.body)}"
    else:
        others = [i for i, (_, m) in live.items() if m.workspace == old.workspace and i != target]
        if not others:
            return
        corrected = rng.choice(others)
        new = replace(old, supersedes=(*old.supersedes, corrected))
        subject = f"supersede({old.workspace}): {summary(old.body)} (corrects {corrected})"
    live[target] = (path, new)
    history.commit(f"{subject}\n\n{lines}", when + 20, {path: _file(new)})


def build_vault(n: int, where: Path, seed: int) -> dict[str, Any]:
    """The bare history and an indexed clone of it at where/vault; reused if already there."""
    vault, bare = where / "vault", where / "remote.git"
    facts = where / "facts.json"
    if facts.exists():
        return dict(json.loads(facts.read_text(encoding="utf-8")))
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    t0 = time.perf_counter()
    memories = [m for _, m in bs.generate(n, seed)]
    settings = Settings(vault=where / "seed", source="bench", session="bench", host="bench")
    init_vault(where / "seed", settings)
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", str(where / "seed"), str(bare)],
        check=True,
        capture_output=True,
    )
    counts = build_history(bare, memories, seed)
    subprocess.run(["git", "clone", "--quiet", str(bare), str(vault)], check=True)
    settings = Settings(vault=vault, source="bench", session="bench", host="bench")
    init_vault(vault, settings)
    with Store.open(settings) as store:
        store.reindex()
    shutil.rmtree(where / "seed")
    built = {"memories": n, **counts, "build_s": round(time.perf_counter() - t0, 1)}
    facts.write_text(json.dumps(built), encoding="utf-8")
    return built


def cpu() -> float:
    """CPU seconds of this process and its finished children (the git processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(vault: Path, runs: int) -> dict[str, Any]:
    """collect_view and the page's whole build, `runs` times each, in this process."""
    from memstore.ops.view_page import render_page
    from memstore.service.view_data import collect_view

    settings = Settings(vault=vault, source="bench", session="bench", host="bench")
    collect: list[tuple[float, float]] = []
    page: list[tuple[float, float]] = []
    size = 0
    data: dict[str, Any] = {}
    for run in range(runs):
        if run == 0:  # cold: no clean text remembered from an earlier view
            (vault / ".memstore" / "state" / "view-clean").unlink(missing_ok=True)
        w0, c0 = time.perf_counter(), cpu()
        with Store.open(settings) as store:
            data = collect_view(store, workspace=None, since=None, progress=None)
        w1, c1 = time.perf_counter(), cpu()
        text = render_page(data)
        out = vault / ".memstore" / "bench-view.html"
        out.write_text(text, encoding="utf-8")
        w2, c2 = time.perf_counter(), cpu()
        collect.append((w1 - w0, c1 - c0))
        page.append((w2 - w0, c2 - c0))
        size = out.stat().st_size
    return {
        "collect_wall_s": [round(w, 2) for w, _ in collect],
        "collect_cpu_s": [round(c, 2) for _, c in collect],
        "build_wall_s": [round(w, 2) for w, _ in page],
        "build_cpu_s": [round(c, 2) for _, c in page],
        "file_mb": round(size / 1e6, 2),
        "changes": len(data.get("changes", [])),
        "sampled": data.get("vault", {}).get("sampled", {}),
        "graph": {
            "nodes": len(data.get("graph", {}).get("nodes", [])),
            "edges": len(data.get("graph", {}).get("edges", [])),
        },
    }


def measure_cli(vault: Path) -> float:
    exe = Path(sys.executable).parent / "memstore"
    env = {**os.environ, "MEMSTORE_NO_DAEMON": "1"}
    out = vault / ".memstore" / "bench-view.json"
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(exe), "view", "--json", "-o", str(out), "--vault", str(vault)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(done.stderr)
    return round(time.perf_counter() - t0, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="keep and reuse the built vaults here")
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-view-"))
    results = []
    try:
        for n in args.sizes:
            where = base / f"n{n}"
            built = build_vault(n, where, args.seed)
            figures = measure(where / "vault", args.runs)
            figures["cli_json_wall_s"] = measure_cli(where / "vault")
            result = {"n": n, "vault": built, **figures}
            results.append(result)
            print(json.dumps(result), flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
