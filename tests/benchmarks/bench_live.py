#!/usr/bin/env python
"""Live-indexing benchmark for memstore: how soon a change on disk is searchable.

A standalone script, not a pytest module:

    python tests/benchmarks/bench_live.py [--size 10000] [--json out.json]

On a vault of N generated memories (the generator of bench_foundation.py) it measures:

  * watcher idle CPU: `memstore watch` as a subprocess, idle for 60 s; CPU time
    (utime + stime from /proc/<pid>/stat) before and after;
  * save → searchable latency over 200 edits of six kinds (in-place write, temp file +
    rename, new file, delete, rename, move to another workspace folder) while
    `memstore watch` runs. "Searchable" is checked by an independent
    `memstore.catalog.indexer.Indexer.open(Vault(V))` in this process, which never catches up
    itself: its `search.search(token)` must return the expected file(s);
  * a burst of 1,000 new files written as fast as Python can: seconds until all are
    searchable;
  * catch-up after a `git pull` that brings 1,000 changed memories: a bare remote and
    two clones (A, B) of the vault; A changes 1,000 files, commits and pushes with the
    git CLI; B runs `git pull`, then `Store.catch_up()` is timed (no watcher); a second
    round does the same with `memstore watch` running on B and times pull end → all
    1,000 searchable.

Like bench_foundation.py, it runs from a copy of the sources taken at start
(`--no-snapshot` turns that off), and removes its temporary folders at the end.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_foundation as bf

from memstore.catalog.indexer import Indexer
from memstore.core.codec import derive_id, render_memory
from memstore.core.config import Settings
from memstore.core.model import Memory
from memstore.service.store import Store
from memstore.vault.files import Vault

TARGETS = {
    "save_to_searchable_p95_ms": 1000.0,  # <=
    "pull_catch_up_s": 3.0,  # <=
    "idle_cpu_percent": 1.0,  # <
}
KINDS = ("write", "atomic", "new", "delete", "rename", "move")
EDIT_TIMEOUT_S = 10.0


# --- helpers ----------------------------------------------------------------------------


class Tokens:
    """Unique lowercase nonsense words: one term each, after any analysis."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.used: set[str] = set()

    def new(self, prefix: str = "lv") -> str:
        while True:
            word = prefix + "".join(self.rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(9))
            if word not in self.used:
                self.used.add(word)
                return word


def keys_for(probe: Indexer, token: str, limit: int = 10) -> list[str]:
    return [h.document.key for h in probe.search.search(token, limit=limit)]


def poll(condition: Callable[[], bool], timeout: float, interval: float) -> float | None:
    """Poll until `condition` holds; return the perf_counter time it did, None on timeout."""
    deadline = time.perf_counter() + timeout
    while True:
        if condition():
            return time.perf_counter()
        if time.perf_counter() > deadline:
            return None
        time.sleep(interval)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw.rsplit(")", 1)[1].split()  # fields from 3 (state) on
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def git(cwd: Path, *args: str, env: dict[str, str]) -> float:
    """Run the git CLI; return its wall time in seconds."""
    t0 = time.perf_counter()
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()[:400]}")
    return time.perf_counter() - t0


def append_marker(path: Path, words: str) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rstrip("\n") + f"\nMarker: {words}\n", encoding="utf-8")


def memory_file(g: bf.Generated, extra: str) -> str:
    body = g.body.rstrip("\n") + f" {extra}\n"
    memory = Memory(
        id=derive_id(g.workspace, body, 10),
        workspace=g.workspace,
        body=body,
        kind=g.kind,
        keywords=g.keywords,
        source="bench",
        created="2026-11-29T12:00:00Z",
    )
    return render_memory(memory)


# --- the phases -------------------------------------------------------------------------


def idle_cpu(watch: bf.WatchProcess, seconds: float) -> dict[str, Any]:
    time.sleep(3.0)  # let the watcher's start-up settle scan pass
    pid = watch.proc.pid
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    c1, t1 = cpu_seconds(pid), time.perf_counter()
    wall = t1 - t0
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(c1 - c0, 3),
        "percent_of_one_core": round((c1 - c0) / wall * 100, 3),
        "clock_ticks_per_s": os.sysconf("SC_CLK_TCK"),
    }


def plan_edits(count: int, rng: random.Random) -> list[str]:
    plan = [KINDS[i % len(KINDS)] for i in range(count)]
    rng.shuffle(plan)
    return plan


def prepare_targets(
    root: Path, plan: list[str], rng: random.Random, tokens: Tokens
) -> dict[int, tuple[str, str]]:
    """Give each existing file an edit will touch a unique marker word (before watching)."""
    paths = sorted(Vault(root).scan())
    needing = [i for i, kind in enumerate(plan) if kind != "new"]
    chosen = rng.sample(paths, len(needing))
    targets = {}
    for i, rel in zip(needing, chosen, strict=True):
        token = tokens.new()
        append_marker(root / rel, token)
        targets[i] = (rel, token)
    return targets


def live_edits(
    root: Path,
    probe: Indexer,
    plan: list[str],
    targets: dict[int, tuple[str, str]],
    rng: random.Random,
    tokens: Tokens,
    poll_s: float,
) -> dict[str, Any]:
    corpus = bf.Corpus(bf.SEED + 99)
    records: list[dict[str, Any]] = []
    for i, kind in enumerate(plan):
        time.sleep(rng.uniform(0.02, 0.2))  # edits arrive at varied moments (some mid-settle)
        if kind == "new":
            g = corpus.make()
            token = tokens.new()
            rel = f"{g.workspace}/live-{i:03d}-{token}.md"
            text = memory_file(g, f"Marker: {token}")
            expect: Callable[[list[str]], bool] = lambda keys, rel=rel: keys == [rel]  # noqa: E731
            (root / rel).parent.mkdir(exist_ok=True)
            with open(root / rel, "w", encoding="utf-8") as handle:
                handle.write(text)
            t0 = time.perf_counter()
        else:
            rel, token = targets[i]
            path = root / rel
            if kind in ("write", "atomic"):
                new = tokens.new()
                text = path.read_text(encoding="utf-8").replace(token, new)
                token = new
                expect = lambda keys, rel=rel: keys == [rel]  # noqa: E731
                if kind == "write":
                    with open(path, "w", encoding="utf-8") as handle:
                        handle.write(text)
                else:
                    tmp = path.with_name(f".{path.name}.tmp")
                    with open(tmp, "w", encoding="utf-8") as handle:
                        handle.write(text)
                    os.replace(tmp, path)
            elif kind == "delete":
                expect = lambda keys: keys == []  # noqa: E731
                path.unlink()
            elif kind == "rename":
                dest = f"{rel.split('/')[0]}/renamed-{i:03d}-{path.name}"
                expect = lambda keys, dest=dest: keys == [dest]  # noqa: E731
                os.rename(path, root / dest)
            else:  # move to another workspace folder
                here = rel.split("/")[0]
                there = rng.choice([w for w in bf.WORKSPACES if w != here])
                dest = f"{there}/{path.name}"
                expect = lambda keys, dest=dest: keys == [dest]  # noqa: E731
                (root / there).mkdir(exist_ok=True)
                os.rename(path, root / dest)
            t0 = time.perf_counter()
        found = poll(lambda t=token, e=expect: e(keys_for(probe, t)), EDIT_TIMEOUT_S, poll_s)
        latency = None if found is None else (found - t0) * 1000
        records.append({"i": i, "kind": kind, "ms": latency})
    timeouts = [r for r in records if r["ms"] is None]
    # A timed-out edit counts as the timeout (never silently dropped from the percentiles).
    values = [r["ms"] if r["ms"] is not None else EDIT_TIMEOUT_S * 1000 for r in records]
    by_kind = {
        k: bf.summary(
            [
                r["ms"] if r["ms"] is not None else EDIT_TIMEOUT_S * 1000
                for r in records
                if r["kind"] == k
            ]
        )
        for k in KINDS
    }
    return {
        "all": bf.summary(values),
        "by_kind": by_kind,
        "timeouts": len(timeouts),
        "timeout_edits": timeouts,
    }


def probe_cost(probe: Indexer, tokens: list[str]) -> dict[str, float]:
    """What one probe query costs when nothing changed (the polling resolution)."""
    times = [bf.timed_ms(lambda t=t: keys_for(probe, t))[0] for t in tokens]
    return bf.summary(times)


def burst(root: Path, probe: Indexer, count: int, tokens: Tokens) -> dict[str, Any]:
    corpus = bf.Corpus(bf.SEED + 77)
    common = tokens.new("bu")
    files = []
    for i in range(count):
        g = corpus.make()
        files.append((f"{g.workspace}/burst-{i:04d}.md", memory_file(g, f"Burst: {common}")))
    t0 = time.perf_counter()
    for rel, text in files:
        with open(root / rel, "w", encoding="utf-8") as handle:
            handle.write(text)
    t_written = time.perf_counter()
    first: list[float] = []

    def all_found() -> bool:
        n = len(probe.search.search(common, limit=count + 10))
        if n and not first:
            first.append(time.perf_counter())
        return n >= count

    done = poll(all_found, 120.0, 0.02)
    if done is None:
        raise RuntimeError(f"burst: not all {count} files searchable within 120 s")
    return {
        "files": count,
        "write_s": round(t_written - t0, 3),
        "first_searchable_after_start_s": round(first[0] - t0, 3),
        "all_searchable_after_start_s": round(done - t0, 3),
        "all_searchable_after_last_write_s": round(done - t_written, 3),
    }


def change_and_push(
    clone_a: Path, paths: list[str], common: str, tokens: Tokens, env: dict[str, str]
) -> dict[str, float]:
    for rel in paths:
        append_marker(clone_a / rel, f"{common} {tokens.new('pu')}")
    t_commit = git(clone_a, "commit", "-q", "-a", "-m", f"edit {len(paths)} memories", env=env)
    t_push = git(clone_a, "push", "-q", env=env)
    return {"commit_s": round(t_commit, 3), "push_s": round(t_push, 3)}


def pull_rounds(
    tmp: Path,
    root: Path,
    changes: int,
    tokens: Tokens,
    rng: random.Random,
    memstore_exe: str,
    env: dict[str, str],
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    genv = {
        **env,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    remote, clone_a, clone_b = tmp / "remote.git", tmp / "clone-a", tmp / "clone-b"
    bf.log("  clones …")
    git(tmp, "clone", "-q", "--bare", str(root), str(remote), env=genv)
    git(tmp, "clone", "-q", str(remote), str(clone_a), env=genv)
    git(tmp, "clone", "-q", str(remote), str(clone_b), env=genv)
    settings_b = Settings(vault=clone_b, source="bench", session="bench", host="bench")
    bf.log("  indexing clone B …")
    with Store(settings_b, Vault(clone_b)) as store:
        t, cu = bf.timed_ms(store.reindex)
        res["clone_b_reindex_s"] = round(t / 1000, 2)
        res["clone_b_memories"] = len(cu.updated)
    paths = sorted(Vault(clone_a).scan())
    sample = rng.sample(paths, 2 * changes)
    round1, round2 = sorted(sample[:changes]), sorted(sample[changes:])
    probe = Indexer.open(Vault(clone_b))

    # Round 1: no watcher. git pull, then one Store.catch_up() in a fresh Store.
    bf.log(f"  round 1: pull {changes} changes, then Store.catch_up() …")
    common1 = tokens.new("pa")
    res["round1_push"] = change_and_push(clone_a, round1, common1, tokens, genv)
    res["round1_pull_s"] = round(git(clone_b, "pull", "-q", env=genv), 3)
    store = Store(settings_b, Vault(clone_b))
    try:
        t_open, _ = bf.timed_ms(lambda: store.indexer)  # open the index
        t_cu, cu = bf.timed_ms(store.catch_up)
    finally:
        store.close()
    res["round1_open_index_ms"] = round(t_open, 1)
    res["round1_catch_up_ms"] = round(t_cu, 1)
    res["round1_catch_up_updated"] = len(cu.updated)
    res["round1_catch_up_removed"] = len(cu.removed)
    res["round1_searchable"] = len(probe.search.search(common1, limit=changes + 10))

    # Round 2: `memstore watch` runs on B; time from the pull's end until all are searchable.
    bf.log(f"  round 2: pull {changes} changes with memstore watch running …")
    common2 = tokens.new("pb")
    res["round2_push"] = change_and_push(clone_a, round2, common2, tokens, genv)
    with bf.WatchProcess(memstore_exe, clone_b, env, tmp) as watch:
        res["round2_watch_ready_s"] = round(watch.ready_s, 2)
        time.sleep(1.0)  # idle watcher, as it would be before a pull
        t0 = time.perf_counter()
        git(clone_b, "pull", "-q", env=genv)
        t1 = time.perf_counter()
        first: list[float] = []

        def all_found() -> bool:
            n = len(probe.search.search(common2, limit=changes + 10))
            if n and not first:
                first.append(time.perf_counter())
            return n >= changes

        done = poll(all_found, 120.0, 0.02)
        if done is None:
            raise RuntimeError("round 2: not all changes searchable within 120 s")
    probe.close()
    res["round2_pull_s"] = round(t1 - t0, 3)
    res["round2_first_searchable_after_pull_start_s"] = round(first[0] - t0, 3)
    res["round2_all_searchable_after_pull_end_s"] = round(done - t1, 3)
    res["round2_all_searchable_after_pull_start_s"] = round(done - t0, 3)
    return res


# --- driver -----------------------------------------------------------------------------


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    n = args.size
    res: dict[str, Any] = {"n": n}
    home = tmp / "home"
    home.mkdir()
    root = tmp / "vault"
    settings = Settings(vault=root, source="bench", session="bench", host="bench")
    memstore_exe = bf.memstore_command()
    env = bf.subprocess_env(home)
    rng = random.Random(bf.SEED + 5)
    tokens = Tokens(bf.SEED + 6)

    bf.log(f"[N={n}] generating vault …")
    t, _ = bf.timed_ms(lambda: bf.write_vault(root, n, bf.Corpus(bf.SEED + n), settings))
    res["setup_generate_commit_s"] = round(t / 1000, 1)
    bf.log(f"[N={n}] indexing …")
    with Store(settings, Vault(root)) as store:
        t, _ = bf.timed_ms(store.reindex)
    res["setup_reindex_s"] = round(t / 1000, 2)

    plan = plan_edits(args.edits, rng)
    targets = prepare_targets(
        root, plan, rng, tokens
    )  # before watching: the watcher's start indexes them

    bf.log(f"[N={n}] starting memstore watch …")
    with bf.WatchProcess(memstore_exe, root, env, tmp) as watch:
        res["watch_ready_s"] = round(watch.ready_s, 2)
        probe = Indexer.open(Vault(root))
        missing = [rel for rel, tok in targets.values() if keys_for(probe, tok) != [rel]]
        if missing:
            raise RuntimeError(f"{len(missing)} prepared targets are not searchable: {missing[:3]}")
        res["probe_query_ms"] = probe_cost(probe, [tok for _, tok in targets.values()])

        if args.idle_s > 0:
            bf.log(f"[N={n}] watcher idle CPU over {args.idle_s:.0f} s …")
            res["idle_cpu"] = idle_cpu(watch, args.idle_s)

        bf.log(f"[N={n}] {len(plan)} live edits …")
        res["edits"] = live_edits(root, probe, plan, targets, rng, tokens, args.poll_ms / 1000)

        time.sleep(1.0)
        bf.log(f"[N={n}] burst of {args.burst} new files …")
        res["burst"] = burst(root, probe, args.burst, tokens)
        probe.close()
        time.sleep(1.0)
    res["watch_exit_code"] = watch.proc.returncode
    res["watch_stderr_lines"] = len(watch.stderr_text().splitlines())

    with Store(settings, Vault(root)) as check:
        check.catch_up()
        res["final_drift_clean"] = check.indexer.drift().is_clean

    bf.log(f"[N={n}] git pull of {args.pull_changes} changed memories …")
    res["pull"] = pull_rounds(tmp, root, args.pull_changes, tokens, rng, memstore_exe, env)
    return res


def status(ok: bool) -> str:
    return "met" if ok else "MISSED"


def print_report(r: dict[str, Any], meta: dict[str, Any]) -> None:
    e, b, p = r["edits"], r["burst"], r["pull"]
    pull_cu_s = (p["round1_open_index_ms"] + p["round1_catch_up_ms"]) / 1000
    rows = [
        (
            "save → searchable, 6 kinds",
            f"p50 {e['all']['p50']:.0f} / p95 {e['all']['p95']:.0f} / max {e['all']['max']:.0f} ms"
            f" ({e['timeouts']} timeouts of {e['all']['n']})",
            "p95 <= 1 s",
            status(e["all"]["p95"] <= TARGETS["save_to_searchable_p95_ms"] and not e["timeouts"]),
        ),
        (
            f"burst of {b['files']:,} new files → all searchable",
            f"{b['all_searchable_after_start_s']:.2f} s after the first write "
            f"(writing took {b['write_s']:.2f} s; first hit at {b['first_searchable_after_start_s']:.2f} s)",
            "",
            "",
        ),
        (
            f"git pull of {p['round1_catch_up_updated']:,} changes, then Store.catch_up()",
            f"{pull_cu_s:.2f} s (open index {p['round1_open_index_ms']:.0f} ms + catch-up "
            f"{p['round1_catch_up_ms']:.0f} ms); pull {p['round1_pull_s']:.2f} s",
            "<= 3 s",
            status(pull_cu_s <= TARGETS["pull_catch_up_s"]),
        ),
        (
            "git pull with memstore watch running",
            f"all searchable {p['round2_all_searchable_after_pull_end_s']:.2f} s after the pull "
            f"ended (pull {p['round2_pull_s']:.2f} s; first hit "
            f"{p['round2_first_searchable_after_pull_start_s']:.2f} s after it started)",
            "",
            "",
        ),
    ]
    if "idle_cpu" in r:
        c = r["idle_cpu"]
        rows.insert(
            0,
            (
                "memstore watch idle CPU",
                f"{c['percent_of_one_core']:.2f}% of one core ({c['cpu_s']:.2f} s CPU in "
                f"{c['wall_s']:.0f} s)",
                "< 1%",
                status(c["percent_of_one_core"] < TARGETS["idle_cpu_percent"]),
            ),
        )
    print()
    print(
        f"memstore live-indexing benchmark — {meta['date']} — {meta['python']} — "
        f"{meta['cpus']} CPUs — {meta['platform']} — code {meta['code']['sha256']} "
        f"(sources last changed {meta['code']['newest_source_change']}); other processes "
        f"used {meta['other_processes']['cores']:.2f} cores on average during the run"
    )
    print(f"\nN = {r['n']:,} memories")
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in [("figure", "memstore", "target", "verdict"), *rows]:
        print(
            "  "
            + "  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True))
            + "  "
            + row[3]
        )
    print(
        "  save → searchable by kind (p50/p95/max ms): "
        + ", ".join(
            f"{k} {v['p50']:.0f}/{v['p95']:.0f}/{v['max']:.0f}" for k, v in e["by_kind"].items()
        )
    )
    print(
        f"  probe query (nothing changed) p50 {r['probe_query_ms']['p50']:.2f} ms; "
        f"watcher ready after {r['watch_ready_s']:.2f} s; index consistent after the edits: "
        f"{r['final_drift_clean']}; clone B reindex {p['clone_b_reindex_s']:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--pull-changes", type=int, default=1000)
    parser.add_argument("--idle-s", type=float, default=60.0, help="0 skips the idle CPU check")
    parser.add_argument("--poll-ms", type=float, default=2.0, help="pause between probe queries")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    parser.add_argument("--no-snapshot", action="store_true")
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    if not args.no_snapshot and bf.SNAPSHOT_ENV not in os.environ:
        bf.exec_from_snapshot(raw, __file__)  # does not return
    snapshot = os.environ.get(bf.SNAPSHOT_ENV)
    if snapshot and not args.keep:  # also when the run fails
        atexit.register(shutil.rmtree, snapshot, ignore_errors=True)
    meta: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"Python {platform.python_version()}",
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "targets": TARGETS,
        "code": bf.code_fingerprint(bf.source_base()),
        "snapshot": bool(snapshot),
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
    }
    tmp = Path(tempfile.mkdtemp(prefix=f"memstore-live-{args.size}-"))
    started = time.perf_counter()
    mark = bf.cpu_mark()
    try:
        result = run(args, tmp)
    finally:
        if args.keep:
            bf.log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    meta["total_wall_s"] = round(time.perf_counter() - started, 1)
    meta["other_processes"] = bf.foreign_load(mark)
    live = Path(os.environ.get(bf.LIVE_ENV) or bf.source_base())
    meta["live_code_at_end"] = bf.code_fingerprint(live)
    if snapshot and not args.keep:
        shutil.rmtree(snapshot, ignore_errors=True)
    print_report(result, meta)
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "result": result}, indent=2) + "\n")
        bf.log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
