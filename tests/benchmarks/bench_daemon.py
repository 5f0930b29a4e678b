"""Repeat rebuilds, the daemon's memory and first recalls, a session's first CLI call (issue 39).

Every figure beside its reference from the same run, on one synced vault (bench_scale.py
builds it the way a user gets it: `memstore init` + `remote add` + `sync`):

- reindex: `memstore reindex` three times in a row on the same vault (wall and CPU of the
  process tree, peak RSS), beside an FTS5 table built from the same files in this process;
- the first CLI call of a session: `memstore search` with no daemon running, beside
  `python -c pass` and a python process asking FTS5 the same query;
- the daemon: its RSS when it first answers, the first 100 recalls' latencies (from its
  first answer, no warm-up), a working session (recalls, CLI searches, adds, hook prompts),
  then the steady state's latencies, its RSS and peak RSS, and its CPU time.

    python tests/benchmarks/bench_daemon.py --vault /tmp/v100k --cache /tmp/daemon-remotes
    python tests/benchmarks/bench_daemon.py --vault /tmp/v100k --busy   # a core kept busy

`--vault` is reused when it exists (made with `--size` memories otherwise); `--phases`
picks some of reindex, first, daemon.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_foundation as bf
import bench_scale as bs

TIME_FORMAT = "%e %U %S %M"  # wall, user, system (s), peak RSS (KiB) of the process tree
PHASES = ("reindex", "first", "daemon")


def timed(argv: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> dict:
    """Run a process under GNU time: wall ms, CPU ms (user + system, children included),
    peak RSS MiB, its output."""
    with tempfile.NamedTemporaryFile(prefix="time-", dir=cwd) as out:
        t0 = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", TIME_FORMAT, "-o", out.name, *argv],
            env=env,
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
        )
        wall = (time.perf_counter() - t0) * 1000
        _e, user, system, rss = Path(out.name).read_text(encoding="utf-8").split()[-4:]
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{argv[1:3]} failed ({done.returncode}): {done.stderr[-600:]}")
    cpu = (float(user) + float(system)) * 1000
    return {"wall_ms": wall, "cpu_ms": cpu, "rss_mib": int(rss) / 1024, "out": done.stdout}


def medians(runs: Sequence[dict]) -> dict[str, float]:
    return {
        key: round(statistics.median(r[key] for r in runs), 1)
        for key in ("wall_ms", "cpu_ms", "rss_mib")
    }


@contextlib.contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """Keep one core busy (another user's job) while the phases run."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def reindex_phase(s: bs.Sized, res: dict[str, Any], runs: int) -> None:
    memories = sum(1 for _ in bs.Vault(s.root).scan())
    rebuilds = []
    for n in range(runs):
        s.log(f"memstore reindex #{n + 1} …")
        r = timed([s.exe, "reindex", "--vault", str(s.root), "--quiet"], s.env_nd, s.tmp)
        r.pop("out")
        r["per_s"] = round(memories / (r["wall_ms"] / 1000))
        r["cpu_us_per_memory"] = round(r["cpu_ms"] * 1000 / memories, 1)
        rebuilds.append(r)
    res["reindex"] = {"memories": memories, "runs": rebuilds}
    s.log("FTS5 build on the same files …")
    db = s.tmp / "fts.sqlite"
    db.unlink(missing_ok=True)
    view = s.tmp / "fts-view"
    if not view.exists():
        bs.flat_view(s.root, view)
    cpu0, t0 = time.process_time(), time.perf_counter()
    built = bf.fts_build(view, db)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    res["fts5_build"] = {**built, "per_s": round(built["docs"] / wall), "cpu_ms": cpu * 1000}


def first_phase(s: bs.Sized, res: dict[str, Any], count: int) -> None:
    """`memstore search` with no daemon (MEMSTORE_NO_DAEMON: the path of a session's first
    call, which then starts the daemon), beside `python -c pass` and an FTS5 process."""
    db = s.tmp / "fts.sqlite"
    if not db.exists():
        bs.flat_view(s.root, s.tmp / "fts-view") if not (s.tmp / "fts-view").exists() else None
        bf.fts_build(s.tmp / "fts-view", db)
    argvs = s.search_argvs()[:count]
    py = sys.executable
    for argv in argvs[:2]:  # the page cache: every run reads the same files
        timed(argv, s.env_nd, s.tmp)
    s.log(f"first CLI call (no daemon) ×{len(argvs)}, beside python -c pass and FTS5 …")
    ours, floor, fts = [], [], []
    for argv, q in zip(argvs, s.cli_queries, strict=False):  # interleaved: same machine state
        ours.append(timed(argv, s.env_nd, s.tmp))
        floor.append(timed([py, "-c", "pass"], s.env_nd, s.tmp))
        fts.append(timed([py, "-c", bf.FTS_COLD, str(db), bf.fts_match(q.text)], s.env, s.tmp))
    res["first_call"] = {
        "memstore_search_nodaemon": medians(ours),
        "python_pass": medians(floor),
        "fts5_process": medians(fts),
        "n": len(ours),
    }
    # The real thing: no daemon running, one allowed (it starts one after answering).
    client = importlib.import_module("memstore.ops.client")
    real = []
    for argv in argvs[:3]:
        # a client starts no daemon moments after it started one (memstore/ops/client.py)
        bf.wait_for(lambda: not client._spawned_lately(s.root), 120, "the spawn mark", 0.1)
        real.append(timed(argv, s.env, s.tmp))
        bf.wait_for(lambda: client.status(s.root) is not None, 300, "the daemon", 0.05)
        stop_daemon(s.root)
    res["first_call"]["memstore_search_starting_daemon"] = medians(real)


def stop_daemon(root: Path) -> None:
    client = importlib.import_module("memstore.ops.client")
    status = client.status(root)
    pid = bs.daemon_pid(root, dict(status.data)) if status is not None else None
    client.stop(root)
    bs.wait_gone(pid, 120.0)


def anon_and_file(pid: int) -> dict[str, float]:
    """The daemon's RSS split: its own memory, and the pages of files it maps (the index)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def mappings(pid: int, top: int = 8) -> dict[str, float]:
    """The daemon's resident memory by mapping (MiB, /proc/PID/smaps): malloc's main heap,
    the other anonymous mappings (threads' malloc arenas, large arrays, stacks), and the
    files mapped, largest first."""
    sizes: dict[str, float] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text(encoding="utf-8").splitlines():
        head = line.split()
        if head and "-" in head[0] and not line.endswith(":") and ":" not in head[0]:
            name = head[5] if len(head) > 5 else "[anonymous]"
        elif head and head[0] == "Rss:":
            sizes[name] = sizes.get(name, 0.0) + int(head[1]) / 1024
    ranked = sorted(sizes.items(), key=lambda kv: -kv[1])[:top]
    return {Path(k).name if k.startswith("/") else k: round(v, 1) for k, v in ranked}


def run_ns(pid: int) -> int:
    """Nanoseconds the process's threads have run on a CPU (/proc/PID/task/*/schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total


def proc_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def wait_warmed(root: Path, pid: int, patience: float = 300.0) -> float:
    """Wait until the daemon says its read-ahead is done (`warmed` in its status; code
    without it: until it uses under 20 ms of CPU in 2 s). Return the seconds waited."""
    client = importlib.import_module("memstore.ops.client")
    t0 = time.perf_counter()
    if "warmed" in dict(client.status(root).data):
        bf.wait_for(lambda: dict(client.status(root).data)["warmed"], patience, "the warm-up", 0.1)
    else:
        last = -(10**12)
        while run_ns(pid) - last > 20_000_000:  # its watcher and main loop wake now and then
            last = run_ns(pid)
            time.sleep(2.0)
    return round(time.perf_counter() - t0, 2)


def daemon_phase(
    s: bs.Sized, res: dict[str, Any], fresh: Sequence[str] = (), after_warm: bool = False
) -> None:
    """The daemon from its first answer: the first 100 recalls, a working session, the
    session's recalls asked again (`steady`) and recalls never asked before (`steady_fresh`:
    a repeated query finds its words' lists, stand-ins and rows cached)."""
    client = importlib.import_module("memstore.ops.client")
    tools = importlib.import_module("memstore.ops.tools")
    if client.status(s.root) is not None:
        stop_daemon(s.root)
    s.log("starting the daemon (a first search) …")
    bf.wait_for(lambda: not client._spawned_lately(s.root), 120, "the spawn mark", 0.1)
    t0 = time.perf_counter()
    timed(s.search_argvs()[0], s.env, s.tmp)
    bf.wait_for(lambda: client.status(s.root) is not None, 300, "the daemon", 0.005)
    started = time.perf_counter() - t0
    pid = bs.daemon_pid(s.root, dict(client.status(s.root).data))
    assert pid is not None
    d: dict[str, Any] = {"answers_after_s": round(started, 2), "at_first_answer": bs.resident(pid)}
    if after_warm:  # the first recalls once the read-ahead is done (not at its first answer)
        d["warm_wait_s"] = wait_warmed(s.root, pid)
    env = {**s.env, "MEMSTORE_VAULT": str(s.root)}

    cpu: list[float] = []  # the daemon's CPU time per recall (robust to a busy machine)

    def recall(text: str) -> float:
        payload = tools.call_payload(
            {"query": text, "workspace": "all"},
            vault=s.root,
            workspace="",
            source="bench",
            session="bench",
        )
        request = client.Request("tool", ["memory_recall"], str(s.tmp), env, payload)
        before = run_ns(pid)
        t = time.perf_counter()
        reply = client.ask(s.root, request, start=False)
        if reply is None or reply.status not in (0, 1):
            raise RuntimeError(f"the daemon did not answer: {reply}")
        wall = (time.perf_counter() - t) * 1000
        cpu.append((run_ns(pid) - before) / 1e6)
        return wall

    queries = [q.text for q in s.queries]
    d["first_100"] = bf.summary([recall(q) for q in queries[:100]])
    d["first_100_cpu"] = bf.summary(cpu)
    d["after_first_100"] = bs.resident(pid)
    s.log("a working session: recalls, CLI searches, adds, hook prompts …")
    session = [recall(q) for q in queries[100:]]
    for argv in s.search_argvs():
        timed(argv, s.env, s.tmp)
    for argv in bf.add_argvs(s.exe, s.root, s.take_fresh(20)):
        timed(argv, s.env, s.tmp)
    for q in s.cli_queries:
        hook = json.dumps({"prompt": q.text, "cwd": str(s.tmp), "session_id": "bench"})
        timed([s.exe, "hook", "prompt"], env, s.tmp, stdin=hook)
    d["session_recalls"] = bf.summary(session)
    cpu.clear()
    d["steady"] = bf.summary([recall(q) for q in queries])
    d["steady_cpu"] = bf.summary(cpu)
    if fresh:
        cpu.clear()
        d["steady_fresh"] = bf.summary([recall(q) for q in fresh])
        d["steady_fresh_cpu"] = bf.summary(cpu)
    d["after_session"] = bs.resident(pid)
    time.sleep(3.0)  # idle: the daemon collects, freezes and unmaps what it read (SETTLE_AFTER_S)
    d["after_idle"] = bs.resident(pid)
    d["rss_anon_file_mib"] = anon_and_file(pid)
    d["mappings_mib"] = mappings(pid)
    d["cpu_ms"] = proc_cpu_ms(pid)
    res["daemon"] = d
    stop_daemon(s.root)


def report(res: dict[str, Any]) -> None:
    print(f"\nbench_daemon — {res['meta']}")
    if "reindex" in res:
        r, f = res["reindex"], res["fts5_build"]
        print(
            f"\nreindex of {r['memories']:,} memories (FTS5 build of the same files: "
            f"{f['per_s']:,}/s, {f['total_ms'] / 1000:.1f} s, CPU {f['cpu_ms'] / 1000:.1f} s)"
        )
        for n, run in enumerate(r["runs"], 1):
            print(
                f"  #{n}: {run['wall_ms'] / 1000:.1f} s = {run['per_s']:,}/s; CPU "
                f"{run['cpu_ms'] / 1000:.1f} s ({run['cpu_us_per_memory']} µs a memory); "
                f"peak RSS {run['rss_mib']:.0f} MiB"
            )
    if "first_call" in res:
        fc = res["first_call"]
        print(f"\nfirst CLI call of a session, medians of {fc['n']} (wall / CPU ms / peak RSS):")
        for key in (
            "memstore_search_nodaemon",
            "memstore_search_starting_daemon",
            "python_pass",
            "fts5_process",
        ):
            m = fc[key]
            print(f"  {key:34} {m['wall_ms']:7.1f} / {m['cpu_ms']:7.1f} / {m['rss_mib']:5.1f} MiB")
    if "daemon" in res:
        d = res["daemon"]
        print(
            f"\ndaemon: answers {d['answers_after_s']} s after the first search"
            f"{'; warm-up waited ' + str(d['warm_wait_s']) + ' s' if 'warm_wait_s' in d else ''}; "
            f"CPU {d['cpu_ms'] / 1000:.1f} s in all"
        )
        for key in ("at_first_answer", "after_first_100", "after_session", "after_idle"):
            print(f"  RSS {key:16} {d.get(key)}")
        print(f"  after idle: {d.get('rss_anon_file_mib')}")
        print(f"  by mapping: {d.get('mappings_mib')}")
        for key in (
            "first_100",
            "first_100_cpu",
            "session_recalls",
            "steady",
            "steady_cpu",
            "steady_fresh",
            "steady_fresh_cpu",
        ):
            if key not in d:
                continue
            x = d[key]
            print(
                f"  recall {key:16} n={x['n']} p50 {x['p50']:.1f} p95 {x['p95']:.1f} "
                f"max {x['max']:.1f} ms"
            )


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--vault", type=Path, required=True, help="the synced vault (made if missing)")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--cache", type=Path, help="bench_scale's remotes, kept between runs")
    p.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    p.add_argument("--reindex-runs", type=int, default=3)
    p.add_argument("--first-runs", type=int, default=15)
    p.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")
    p.add_argument("--json", type=Path)
    p.add_argument("--from-git", metavar="REV", help="measure the sources committed at REV")
    p.add_argument("--no-snapshot", action="store_true")
    p.add_argument("--keep", action="store_true")
    p.add_argument(
        "--first-after-warm",
        action="store_true",
        help="start the first 100 recalls once the daemon's warm-up is done",
    )
    args = p.parse_args(raw)
    bs.enter_sources(args, raw, __file__)  # one version of the code for every process
    work = args.vault.parent / f"{args.vault.name}-bench"
    work.mkdir(parents=True, exist_ok=True)
    scale_args = bs.parse_args(["--sizes", str(args.size)])
    s = bs.sized(args.size, scale_args, Path(tempfile.mkdtemp(prefix="bench-daemon-", dir=work)))
    s.root = args.vault
    if not args.vault.exists():
        items = bs.make_vault(s, args.cache)
    else:
        items = [g for g, _ in bs.generate(args.size, bf.SEED + args.size)]
    s.queries = bf.make_queries(items, 400, bf.SEED * 7 + args.size)
    asked = {q.text for q in s.queries}
    more = bf.make_queries(items, 200, bf.SEED * 7 + args.size + 1)
    fresh = list(dict.fromkeys(q.text for q in more if q.text not in asked))[:100]
    hits = [q for q in s.queries if bf.fts_match(q.text)]
    s.cli_queries = hits[:: max(1, len(hits) // 30)][:30]
    s.fresh = bs.fresh_memories(items, args.size, 40)
    s.tmp = work
    mark = bf.cpu_mark()
    res: dict[str, Any] = {}
    with busy_core(args.busy):
        if "reindex" in args.phases:
            reindex_phase(s, res, args.reindex_runs)
        if "first" in args.phases:
            first_phase(s, res, args.first_runs)
        if "daemon" in args.phases:
            daemon_phase(s, res, fresh, args.first_after_warm)
    load = bf.foreign_load(mark)
    res["meta"] = (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, git {bs.git_head()}, "
        f"{args.size:,} memories, {'a core kept busy, ' if args.busy else ''}other processes "
        f"{load['cores']:.2f} cores"
    )
    report(res)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
