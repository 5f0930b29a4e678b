"""tests/benchmarks/bench_ab.py: which way each figure is better, medians, and the runs, on stub checkouts."""

from __future__ import annotations

import importlib.util
import json
import stat
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent / "benchmarks" / "bench_ab.py"


def load_bench_ab() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ab", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_ab"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


ab = load_bench_ab()


def figure(label: str):
    return next(f for f in ab.FIGURES if f.label.strip() == label)


def row(label: str, old: list[float], new: list[float]):
    r = ab.Row(figure(label))
    r.values = {"old": old, "new": new}
    return r


def test_a_latency_more_than_ten_percent_higher_is_worse():
    assert row("recall in-process p95", [10.0], [11.1]).is_worse()
    assert not row("recall in-process p95", [10.0], [10.9]).is_worse()
    assert not row("recall in-process p95", [10.0], [5.0]).is_worse()


def test_a_throughput_more_than_ten_percent_lower_is_worse():
    assert figure("cold ingest").better == "higher"
    assert row("cold ingest", [1000.0], [890.0]).is_worse()
    assert not row("cold ingest", [1000.0], [910.0]).is_worse()
    assert not row("cold ingest", [1000.0], [2000.0]).is_worse()


def test_rss_and_recall_go_the_right_way():
    assert row("daemon RSS", [100.0], [120.0]).is_worse()
    assert row("stdlib recall@5", [0.72], [0.60]).is_worse()
    assert not row("stdlib recall@5", [0.72], [0.80]).is_worse()


def test_a_figure_that_was_zero_is_worse_only_when_it_grows():
    assert row("isolation leaks", [0.0], [0.0]).ratio() == 1.0
    assert not row("isolation leaks", [0.0], [0.0]).is_worse()
    assert row("isolation leaks", [0.0], [2.0]).is_worse()
    assert row("isolation leaks", [0.0], [2.0]).ratio() is None


def test_rounds_are_compared_by_their_medians():
    r = row("recall in-process p50", [10.0, 30.0, 11.0], [12.0, 11.0, 50.0])
    assert (r.median("old"), r.median("new")) == (11.0, 12.0)
    assert not r.is_worse()
    assert r.spread() == pytest.approx(39.0 / 12.0)


def test_rounds_alternate_which_side_runs_first():
    order = [(rnd, side) for rnd, bench, side in ab.schedule(3, ["scale"])]
    assert order == [(1, "old"), (1, "new"), (2, "new"), (2, "old"), (3, "old"), (3, "new")]


# --- stub checkouts: their bench scripts write the JSON a real run would ---------------------

STUB = """\
import json, sys
from pathlib import Path
root = Path(__file__).resolve().parents[2]
argv = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write(json.dumps([root.name, Path(__file__).name, argv]) + "\\n")
if (root / "fail").exists():
    sys.exit(3)
values = json.loads((root / "values.json").read_text())
results = values[{bench!r}]
load = values.get("load", 0.1)
meta = {{"code": {{"sha256": "stub-" + root.name}}, "other_processes": {{"cores": load}}}}
out = Path(argv[argv.index("--json") + 1])
out.write_text(json.dumps({{"meta": meta, "results": results}}))
"""


def stub_checkout(base: Path, name: str, calls: Path, values: dict) -> Path:
    root = base / name
    (root / "tests" / "benchmarks").mkdir(parents=True)
    (root / "memstore").mkdir()
    (root / "memstore" / "__init__.py").write_text("")
    for bench in ("scale", "code"):
        script = root / "tests" / "benchmarks" / f"bench_{bench}.py"
        script.write_text(STUB.format(calls=str(calls), bench=bench) + '\n# "--files"\n')
    (root / "values.json").write_text(json.dumps(values))
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return root


def values(recall_p95: float, chunks_per_s: float) -> dict:
    return {
        "scale": [{"n": 10000, "search_warm_nodaemon": {"p50": 5.0, "p95": 8.0}}],
        "code": {
            "monorepo": {
                "cold_ingest": {"chunks_per_s": chunks_per_s},
                "recall_latency": {"p50": 3.0, "p95": recall_p95},
            }
        },
    }


def test_a_run_compares_the_two_checkouts_side_by_side(tmp_path, capsys):
    calls = tmp_path / "calls.jsonl"
    old = stub_checkout(tmp_path, "old", calls, values(recall_p95=10.0, chunks_per_s=1000.0))
    new = stub_checkout(tmp_path, "new", calls, values(recall_p95=10.5, chunks_per_s=800.0))
    out = tmp_path / "ab.json"

    status = ab.main(["--old", str(old), "--new", str(new), "--rounds", "2", "--json", str(out)])

    assert status == 0
    ran = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [(side, script) for side, script, _ in ran] == [
        ("old", "bench_scale.py"),
        ("new", "bench_scale.py"),
        ("old", "bench_code.py"),
        ("new", "bench_code.py"),
        ("new", "bench_scale.py"),
        ("old", "bench_scale.py"),
        ("new", "bench_code.py"),
        ("old", "bench_code.py"),
    ]
    assert ran[0][2][:2] == ["--sizes", "10000"]
    assert ran[2][2][:2] == ["--files", "1130"]
    printed = capsys.readouterr().out
    assert "5 figures, 1 worse by >10%" in printed
    worse = [line for line in printed.splitlines() if "WORSE" in line]
    assert len(worse) == 1 and "cold ingest" in worse[0] and "0.80" in worse[0]
    saved = json.loads(out.read_text())
    p95 = next(f for f in saved["figures"] if f["figure"] == "recall in-process p95")
    assert (p95["old"], p95["new"], p95["worse"]) == ([10.0, 10.0], [10.5, 10.5], False)


def test_quick_passes_the_benches_own_quick_mode(tmp_path, capsys):
    calls = tmp_path / "calls.jsonl"
    old = stub_checkout(tmp_path, "old", calls, values(10.0, 1000.0))
    new = stub_checkout(tmp_path, "new", calls, values(10.0, 1000.0))

    assert ab.main(["--old", str(old), "--new", str(new), "--rounds", "1", "--quick"]) == 0

    ran = [json.loads(line) for line in calls.read_text().splitlines()]
    assert all(argv[0] == "--quick" and "--sizes" not in argv for _, _, argv in ran)
    printed = capsys.readouterr().out
    assert "5 figures, 0 worse by >10%" in printed
    assert "rerun on a quiet machine" not in printed


def test_a_busy_machine_is_named_beside_the_table(tmp_path, capsys):
    calls = tmp_path / "calls.jsonl"
    old = stub_checkout(tmp_path, "old", calls, values(10.0, 1000.0))
    new = stub_checkout(tmp_path, "new", calls, {**values(10.0, 1000.0), "load": 1.6})

    assert ab.main(["--old", str(old), "--new", str(new), "--rounds", "1"]) == 0

    assert "other processes used up to 1.60 cores" in capsys.readouterr().out


def test_a_failed_run_fails_the_comparison(tmp_path, capsys):
    calls = tmp_path / "calls.jsonl"
    old = stub_checkout(tmp_path, "old", calls, values(10.0, 1000.0))
    new = stub_checkout(tmp_path, "new", calls, values(10.0, 1000.0))
    (new / "fail").touch()

    assert ab.main(["--old", str(old), "--new", str(new), "--rounds", "1"]) == 1

    printed = capsys.readouterr().out
    assert "2 run(s) failed" in printed
    assert "measured on one side only" in printed


def test_a_checkout_without_a_venv_is_refused_with_the_fix(tmp_path, capsys):
    calls = tmp_path / "calls.jsonl"
    old = stub_checkout(tmp_path, "old", calls, values(10.0, 1000.0))
    new = stub_checkout(tmp_path, "new", calls, values(10.0, 1000.0))
    (new / ".venv" / "bin" / "python").unlink()

    assert ab.main(["--old", str(old), "--new", str(new)]) == 2

    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make .venv/.installed" in err[0] and not calls.exists()
