#!/usr/bin/env python
"""A/B of two memstore checkouts: bench_scale.py at 10k and bench_code.py, old beside new, in one run.

A standalone script, not a pytest module:

    python tests/benchmarks/bench_ab.py --old /path/to/old/checkout --new /path/to/new/checkout \
        [--rounds 2] [--json out.json] [--quick]

    python tests/benchmarks/bench_ab.py --old ../base --new . --quick   # smoke run, ~2 min

Each checkout is measured with its own code only: its own venv (CHECKOUT/.venv, brought up
to date first with `make .venv/.installed` in it, a no-op when it is) runs its own
`tests/benchmarks/bench_scale.py --sizes 10000` and `tests/benchmarks/bench_code.py`, each
with `--json`. Nothing here imports memstore or the bench scripts, so a checkout may lay its
modules out as it likes; the figures are read from the JSON the scripts write. "At 10k" for
bench_code is its generated monorepo at `--code-files 1130` files, ~10,000 chunks (its
default, 2,500 files, is ~22,000); its standard-library phase has no size knob and runs on
the whole library (~50,000 chunks; `--no-stdlib` skips it).

The runs alternate so that load from other processes hits both sides alike: round 1 runs
scale old, scale new, code old, code new; round 2 the same with new first (ABBA), and so
on for `--rounds`. With more than one round each figure is the median of its rounds, and
the spread column gives the widest (max - min) / median of the two sides.

The table gives each figure's old and new value, new/old, and "WORSE" where the new is worse
by more than 10% (times, latencies and RSS: new > 1.1 × old; throughput and recall: new <
0.9 × old). It ends with "N figures, M worse by >10%". The exit status is 0 unless a run
failed (the table is for people: one noisy figure does not fail it). `--quick` passes the
scripts' own `--quick` (300 memories; a 200-file monorepo and a slice of the library).
The scripts' outputs and logs go to a temporary folder, kept (and named) when a run fails
or with `--keep`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

SIDES = ("old", "new")
BENCHES = ("scale", "code")
SCRIPTS = {"scale": "tests/benchmarks/bench_scale.py", "code": "tests/benchmarks/bench_code.py"}
THRESHOLD = 0.10
BUSY_CORES = 0.3  # other processes' load (cores) past which a run's times are not comparable
# variables that would make a checkout's python run other code than its own
SCRUBBED_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
SCRUBBED_PREFIX = "MEMSTORE_BENCH_"

Better = Literal["lower", "higher"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- the figures ---------------------------------------------------------------------------


def get(data: Any, *path: str) -> Any:
    """The value at `path` in nested dicts, or None."""
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(frozen=True)
class Figure:
    """One row: where the value is in a bench's `results`, its unit, and which way is better."""

    bench: str
    label: str
    value: Callable[[Any], Any]
    unit: str
    better: Better = "lower"

    def read(self, results: Any) -> float | None:
        try:
            return number(self.value(results))
        except (TypeError, ValueError, KeyError, IndexError):
            return None


def scale_result(results: Any) -> dict[str, Any]:
    """bench_scale's `results` is one entry per size; ours ran one size (10,000 or --quick's)."""
    return results[-1] if isinstance(results, list) and results else {}


def s(label: str, *path: str, unit: str = "ms", better: Better = "lower") -> Figure:
    return Figure("scale", label, lambda r: get(scale_result(r), *path), unit, better)


def c(label: str, *path: str, unit: str = "ms", better: Better = "lower") -> Figure:
    return Figure("code", label, lambda r: get(r, *path), unit, better)


def _serve_pss_max(r: Any) -> Any:
    each = get(scale_result(r), "serve_memory_daemon", "each") or []
    pss = [number(x.get("pss_mib")) for x in each if isinstance(x, dict)]
    return max((p for p in pss if p is not None), default=None)


def _serve_sum(key: str) -> Callable[[Any], Any]:
    def value(r: Any) -> Any:
        res = scale_result(r)
        serve = get(res, "serve_memory_daemon", key) or get(res, "serve_memory_serve", key)
        daemon = get(res, "serve_memory_daemon", "daemon", key)
        return None if serve is None else serve + (daemon or 0)

    return value


def _mcp_p95(r: Any) -> Any:
    res = scale_result(r)
    return get(res, "mcp_recall_daemon", "p95") or get(res, "mcp_recall_serve", "p95")


FIGURES: tuple[Figure, ...] = (
    # bench_scale at one size: the rows of its own table, with the same sources
    s("cold `memstore search` median, daemon", "cli_search_daemon", "median"),
    s("  `python -c pass` (interpreter floor)", "python_floor", "median"),
    s("cold `memstore hook prompt` median, daemon", "cli_hook_daemon", "median"),
    s("warm recall p50, through the client", "client_recall_warm", "p50"),
    s("warm recall p95, through the client", "client_recall_warm", "p95"),
    s("client peak RSS (cold search)", "cli_search_daemon", "peak_rss_mib", unit="MiB"),
    s("daemon start", "daemon_start_s", unit="s"),
    s("daemon RSS", "daemon_memory", "rss_mib", unit="MiB"),
    s("CLI `memstore add` median, daemon", "cli_add_daemon", "median"),
    Figure("scale", "MCP `memory_recall` p95 (stdio)", _mcp_p95, "ms"),
    s("daemon: `client.stop` → process gone", "steps_s", "stopping the daemon", unit="s"),
    Figure("scale", "largest PSS of 3 `serve`s", _serve_pss_max, "MiB"),
    Figure("scale", "RSS of 3 `serve` + daemon", _serve_sum("rss_mib"), "MiB"),
    Figure("scale", "PSS of 3 `serve` + daemon", _serve_sum("pss_mib"), "MiB"),
    s("warm in-process search p50, no daemon", "search_warm_nodaemon", "p50"),
    s("warm in-process search p95, no daemon", "search_warm_nodaemon", "p95"),
    s("cold `memstore search` median, no daemon", "cli_search_nodaemon", "median"),
    s("peak RSS of a search process, no daemon", "cli_search_nodaemon", "peak_rss_mib", unit="MiB"),
    s("in-process `Store.add` p50", "add_inprocess", "p50"),
    s("in-process `Store.add` p95", "add_inprocess", "p95"),
    s("CLI `memstore add` median, no daemon", "cli_add_nodaemon", "median"),
    s("`memstore reindex`", "reindex", "per_s", unit="mem/s", better="higher"),
    s("`memstore reindex` peak RSS", "reindex", "peak_rss_mib", unit="MiB"),
    s("`memstore audit`", "audit", "s", unit="s"),
    s("`memstore dedupe --list`", "dedupe", "s", unit="s"),
    s("sync bringing the vault in", "clone", "sync_s", unit="s"),
    s("sync bringing the vault in, peak RSS", "clone", "sync_peak_rss_mib", unit="MiB"),
    s("whole size, wall", "bench_wall_s", unit="s"),
    # bench_code: the generated monorepo, then the standard library
    c("cold ingest", "monorepo", "cold_ingest", "chunks_per_s", unit="chunks/s", better="higher"),
    c("cold ingest, peak RSS", "monorepo", "cold_ingest", "peak_rss_mib", unit="MiB"),
    c("the CLI's floor (`ingest --help`) median", "monorepo", "cli_floor", "median"),
    c("no-op re-ingest, CLI median", "monorepo", "noop_reingest", "median"),
    c("no-op re-ingest, in-process median", "monorepo", "noop_reingest", "seconds", "median"),
    c("one function edited, CLI median", "monorepo", "edit_one_function", "median"),
    c(
        "one function edited, in-process median",
        "monorepo",
        "edit_one_function",
        "seconds",
        "median",
    ),
    c("a helper inserted, CLI median", "monorepo", "move_function", "median"),
    c("a file deleted, CLI median", "monorepo", "delete_file", "median"),
    c("no-op re-ingest, daemon, CLI median", "monorepo", "daemon", "noop_reingest", "median"),
    c(
        "one function edited, daemon, CLI median",
        "monorepo",
        "daemon",
        "edit_one_function",
        "median",
    ),
    c("recall through the daemon p50", "monorepo", "daemon", "recall_through_client", "p50"),
    c("recall through the daemon p95", "monorepo", "daemon", "recall_through_client", "p95"),
    c("recall in-process p50", "monorepo", "recall_latency", "p50"),
    c("recall in-process p95", "monorepo", "recall_latency", "p95"),
    c("cold CLI `memstore search` median, no daemon", "monorepo", "cli_search_cold", "median"),
    c(
        "cold CLI `memstore search` peak RSS",
        "monorepo",
        "cli_search_cold",
        "peak_rss_mib",
        unit="MiB",
    ),
    c(
        "CLI search answered by `memstore watch` median",
        "monorepo",
        "live",
        "cli_search_via_watch",
        "median",
    ),
    c("live: save → searchable p50", "monorepo", "live", "save_to_searchable_ms", "p50"),
    c("live: save → searchable p95", "monorepo", "live", "save_to_searchable_ms", "p95"),
    c("isolation leaks", "monorepo", "isolation", "leaks", unit="leaks"),
    c("stdlib ingest", "stdlib", "ingest", "chunks_per_s", unit="chunks/s", better="higher"),
    c("stdlib ingest, peak RSS", "stdlib", "ingest", "peak_rss_mib", unit="MiB"),
    c("stdlib recall@1", "stdlib", "memstore", "recall_at_1", unit="", better="higher"),
    c("stdlib recall@5", "stdlib", "memstore", "recall_at_5", unit="", better="higher"),
    c("stdlib MRR", "stdlib", "memstore", "mrr", unit="", better="higher"),
    c("stdlib query latency p50", "stdlib", "query_latency_ms", "p50"),
    c("stdlib query latency p95", "stdlib", "query_latency_ms", "p95"),
)


@dataclass
class Row:
    """A figure's values over the rounds, per side, and how new compares with old."""

    figure: Figure
    values: dict[str, list[float]] = field(default_factory=lambda: {side: [] for side in SIDES})

    def median(self, side: str) -> float | None:
        vals = self.values[side]
        return statistics.median(vals) if vals else None

    def ratio(self) -> float | None:
        old, new = self.median("old"), self.median("new")
        if old is None or new is None:
            return None
        if old == 0:
            return 1.0 if new == 0 else None
        return new / old

    def is_worse(self) -> bool:
        """New worse than old by more than THRESHOLD, the right way round for this figure."""
        old, new = self.median("old"), self.median("new")
        if old is None or new is None:
            return False
        if self.figure.better == "lower":
            return new > old * (1 + THRESHOLD) if old else new > 0
        return new < old * (1 - THRESHOLD)

    def spread(self) -> float | None:
        """The widest (max - min) / median of the two sides over the rounds."""
        spreads = [
            (max(vals) - min(vals)) / abs(statistics.median(vals))
            for vals in self.values.values()
            if len(vals) > 1 and statistics.median(vals)
        ]
        return max(spreads) if spreads else None


def collect(outputs: dict[tuple[str, str], list[Any]]) -> list[Row]:
    """One row per figure from each side's `results` of each run (bench, side) → [results]."""
    rows = []
    for fig in FIGURES:
        row = Row(fig)
        for side in SIDES:
            for results in outputs.get((fig.bench, side), []):
                value = fig.read(results)
                if value is not None:
                    row.values[side].append(value)
        if row.values["old"] or row.values["new"]:
            rows.append(row)
    return rows


# --- the table ------------------------------------------------------------------------------


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit in ("", "leaks") and value < 10:
        return f"{value:.2f}" if unit == "" else f"{value:.0f}"
    if unit in ("ms", "MiB", "s") and value < 10:
        return f"{value:.2f} {unit}" if value < 1 else f"{value:.1f} {unit}"
    if unit == "s":
        return f"{value:.1f} s"
    return f"{value:,.0f} {unit}".rstrip()


def table(rows: Sequence[Row], rounds: int) -> list[str]:
    head = ["bench", "figure", "old", "new", "new/old", "worse?"]
    if rounds > 1:
        head.append("spread")
    cells = [head]
    for row in rows:
        ratio = row.ratio()
        line = [
            row.figure.bench,
            row.figure.label,
            fmt(row.median("old"), row.figure.unit),
            fmt(row.median("new"), row.figure.unit),
            "—" if ratio is None else f"{ratio:.2f}",
            "WORSE >10%" if row.is_worse() else "",
        ]
        if rounds > 1:
            spread = row.spread()
            line.append("—" if spread is None else f"{spread:.0%}")
        cells.append(line)
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    out = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells
    ]
    out.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
    return out


def summary(rows: Sequence[Row]) -> str:
    worse = sum(row.is_worse() for row in rows)
    line = f"{len(rows)} figures, {worse} worse by >10%"
    one_sided = [r.figure.label.strip() for r in rows if not (r.values["old"] and r.values["new"])]
    if one_sided:
        line += f" ({len(one_sided)} measured on one side only: {', '.join(one_sided)})"
    return line


# --- the checkouts and the runs ----------------------------------------------------------------


@dataclass(frozen=True)
class Checkout:
    side: str
    root: Path

    @property
    def python(self) -> Path:
        return self.root / ".venv" / "bin" / "python"

    def env(self) -> dict[str, str]:
        """This environment, less what would point the checkout's python at other code."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in SCRUBBED_ENV and not k.startswith(SCRUBBED_PREFIX)
        }
        env["PATH"] = f"{self.python.parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        return env

    def script(self, bench: str) -> Path:
        return self.root / SCRIPTS[bench]

    def has_option(self, bench: str, option: str) -> bool:
        return f'"{option}"' in self.script(bench).read_text(encoding="utf-8")


def ensure_venv(co: Checkout) -> str | None:
    """Bring CHECKOUT/.venv up to date; the error, in one line, if it cannot be used."""
    for bench in BENCHES:
        if not co.script(bench).is_file():
            return f"{co.side}: {co.script(bench)} not found (is {co.root} a memstore checkout?)"
    if (co.root / "Makefile").is_file():
        done = subprocess.run(
            ["make", "-C", str(co.root), ".venv/.installed"],
            env=co.env(),
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            return f"{co.side}: `make .venv/.installed` failed in {co.root}: {' '.join(tail)}"
    if not co.python.exists():
        return f"{co.side}: no {co.python}; run `make .venv/.installed` in {co.root}"
    probe = subprocess.run(
        [str(co.python), "-c", "import memstore; print(memstore.__file__)"],
        cwd=co.root,
        env=co.env(),
        capture_output=True,
        text=True,
    )
    where = Path(probe.stdout.strip() or "?").resolve()
    if probe.returncode != 0 or not where.is_relative_to(co.root.resolve()):
        return (
            f"{co.side}: {co.python} imports memstore from {where}, not from {co.root}; "
            f"run `make .venv/.installed` in {co.root}"
        )
    return None


def git_head(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    )
    return (done.stdout.strip() or "?") + ("+" if dirty.stdout.strip() else "")


def bench_args(co: Checkout, bench: str, args: argparse.Namespace, work: Path) -> list[str]:
    """The command line for one run: the bench's own quick mode, or its 10k figures."""
    no_stdlib = ["--no-stdlib"] if bench == "code" and args.no_stdlib else []
    if args.quick:
        return ["--quick", *no_stdlib]
    if bench == "scale":
        extra = ["--sizes", "10000"]
        if co.has_option(bench, "--cache"):  # rounds > 1 reuse this side's generated remote
            extra += ["--cache", str(work / f"remotes-{co.side}")]
        return extra
    extra = ["--files", str(args.code_files)] if co.has_option(bench, "--files") else []
    return extra + no_stdlib


@dataclass
class Run:
    round: int
    bench: str
    side: str
    command: list[str]
    seconds: float = 0.0
    returncode: int | None = None
    results: Any = None
    meta: dict[str, Any] = field(default_factory=dict)
    log: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.results is not None

    def describe(self) -> str:
        load = get(self.meta, "other_processes", "cores")
        code = get(self.meta, "code", "sha256") or "?"
        state = f"{self.seconds:.0f} s" if self.ok else f"FAILED (exit {self.returncode})"
        busy = f", other processes {load:.2f} cores" if isinstance(load, int | float) else ""
        return f"round {self.round} {self.bench} {self.side}: {state}, code {code}{busy}"


def run_one(co: Checkout, bench: str, rnd: int, args: argparse.Namespace, work: Path) -> Run:
    out = work / f"{bench}-{co.side}-{rnd}.json"
    cmd = [str(co.python), str(co.script(bench)), *bench_args(co, bench, args, work)]
    cmd += ["--json", str(out)]
    run = Run(rnd, bench, co.side, cmd, log=str(work / f"{bench}-{co.side}-{rnd}.log"))
    log(f"[round {rnd}] {bench} {co.side}: {' '.join(cmd[1:])} …")
    t0 = time.perf_counter()
    with open(run.log, "w", encoding="utf-8") as sink:
        done = subprocess.run(
            cmd, cwd=co.root, env=co.env(), stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
    run.seconds, run.returncode = time.perf_counter() - t0, done.returncode
    if out.is_file():
        try:
            saved = json.loads(out.read_text(encoding="utf-8"))
            run.results, run.meta = saved.get("results"), saved.get("meta") or {}
        except (json.JSONDecodeError, AttributeError):
            run.results = None
    log(f"  {run.describe()}")
    if not run.ok:
        lines = Path(run.log).read_text(encoding="utf-8", errors="replace").splitlines()
        for line in lines[-15:]:
            log(f"  | {line}")
    return run


def schedule(rounds: int, benches: Sequence[str]) -> list[tuple[int, str, str]]:
    """(round, bench, side) in ABBA order: old first in odd rounds, new first in even ones."""
    order = []
    for rnd in range(1, rounds + 1):
        sides = SIDES if rnd % 2 else SIDES[::-1]
        order += [(rnd, bench, side) for bench in benches for side in sides]
    return order


# --- main ----------------------------------------------------------------------------------------


def parse_args(raw: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the checkout before the change")
    parser.add_argument("--new", type=Path, required=True, help="the checkout after it")
    parser.add_argument("--rounds", type=int, default=2, help="old/new alternations (default 2)")
    parser.add_argument("--json", type=Path, help="also write the comparison as JSON here")
    parser.add_argument("--quick", action="store_true", help="the benches' own smoke runs")
    parser.add_argument("--only", choices=BENCHES, help="run one of the two benches")
    parser.add_argument(
        "--code-files", type=int, default=1130, help="bench_code monorepo files (~10k chunks)"
    )
    parser.add_argument("--no-stdlib", action="store_true", help="skip bench_code's stdlib phase")
    parser.add_argument("--keep", action="store_true", help="keep the runs' JSON and logs")
    args = parser.parse_args(raw)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    checkouts = {side: Checkout(side, getattr(args, side).resolve()) for side in SIDES}
    for co in checkouts.values():
        problem = ensure_venv(co)
        if problem:
            print(f"bench_ab.py: {problem}", file=sys.stderr)
            return 2
    benches = [args.only] if args.only else list(BENCHES)
    work = Path(tempfile.mkdtemp(prefix="memstore-bench-ab-"))
    started = time.perf_counter()
    heads = {side: git_head(co.root) for side, co in checkouts.items()}
    runs = [
        run_one(checkouts[side], bench, rnd, args, work)
        for rnd, bench, side in schedule(args.rounds, benches)
    ]
    wall = time.perf_counter() - started
    outputs: dict[tuple[str, str], list[Any]] = {}
    for run in runs:
        if run.ok:
            outputs.setdefault((run.bench, run.side), []).append(run.results)
    rows = collect(outputs)
    failed = [run for run in runs if not run.ok]

    print()
    print(
        f"memstore A/B — {datetime.now(UTC):%Y-%m-%d %H:%M UTC} — old {checkouts['old'].root} "
        f"(git {heads['old']}) — new {checkouts['new'].root} (git {heads['new']}) — "
        f"{'quick' if args.quick else 'scale at 10,000 memories, code at ' + str(args.code_files) + ' files'}"
        f" — {args.rounds} round(s), {wall / 60:.1f} min"
    )
    for run in runs:
        print(f"  {run.describe()}")
    busiest = max((number(get(r.meta, "other_processes", "cores")) or 0.0 for r in runs), default=0)
    if busiest > BUSY_CORES:
        print(
            f"  other processes used up to {busiest:.2f} cores during a run: time figures "
            "carry that load unevenly; rerun on a quiet machine, or with more --rounds"
        )
    codes = {get(r.meta, "code", "sha256") for r in runs if r.ok}
    if len(codes) == 1:
        print("  (old and new measured the same sources: the ratios show the noise)")
    print()
    print("\n".join(table(rows, args.rounds)))
    print()
    print(summary(rows))
    if failed:
        print(f"{len(failed)} run(s) failed; their logs are in {work}")
    elif args.keep:
        print(f"the runs' JSON and logs are in {work}")

    if args.json:
        report = {
            "meta": {
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "old": {"path": str(checkouts["old"].root), "git": heads["old"]},
                "new": {"path": str(checkouts["new"].root), "git": heads["new"]},
                "rounds": args.rounds,
                "quick": args.quick,
                "code_files": args.code_files,
                "wall_s": round(wall, 1),
                "threshold": THRESHOLD,
                "runs": [
                    {
                        "round": r.round,
                        "bench": r.bench,
                        "side": r.side,
                        "command": r.command,
                        "seconds": round(r.seconds, 1),
                        "ok": r.ok,
                        "code": get(r.meta, "code", "sha256"),
                        "other_processes": get(r.meta, "other_processes"),
                    }
                    for r in runs
                ],
            },
            "figures": [
                {
                    "bench": row.figure.bench,
                    "figure": row.figure.label.strip(),
                    "unit": row.figure.unit,
                    "better": row.figure.better,
                    "old": row.values["old"],
                    "new": row.values["new"],
                    "old_median": row.median("old"),
                    "new_median": row.median("new"),
                    "ratio": row.ratio(),
                    "worse": row.is_worse(),
                    "spread": row.spread(),
                }
                for row in rows
            ],
            "summary": summary(rows),
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        log(f"wrote {args.json}")
    if not failed and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
