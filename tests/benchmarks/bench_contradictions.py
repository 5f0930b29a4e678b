#!/usr/bin/env python
"""How well memstore.core.contradictions tells disagreeing memories from agreeing ones, and how fast.

A standalone script (nothing here is named test_*):

    python tests/benchmarks/bench_contradictions.py [--json out.json] [--split dev|test]

Reads the labelled pairs in tests/data/contradictions.jsonl (each `a`, `b`, `label`
contradiction | agree | unrelated, `lang`, `split` dev | test, `kind` for contradictions)
and asks `disagreement(new=b, old=a)` of each. A contradiction is a positive; agree and
unrelated pairs are negatives. Prints precision, recall and F1 per split and per language,
recall per labelled kind, false alarms per reported kind, every miss and false alarm, the
pairs whose answer changes when the sides swap, and the time per pair: *cold* (both texts
read afresh: the reading cache emptied before each pair, while the terms of words already
seen stay remembered, as in a running process) and *warm* (both texts already read, as a
vault's memories are during an audit). Times are CPU microseconds of this process, the
median of several rounds over all pairs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memstore.core import contradictions
from memstore.core.contradictions import disagreement

DATA = Path(__file__).resolve().parents[1] / "data" / "contradictions.jsonl"
ROUNDS = 7


def load(path: Path = DATA) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def scores(rows: Iterable[dict[str, Any]]) -> dict[str, float | int]:
    """Precision, recall and F1 of rows carrying `label` and `found` (a kind or None)."""
    rows = list(rows)
    tp = sum(r["label"] == "contradiction" and r["found"] is not None for r in rows)
    fp = sum(r["label"] != "contradiction" and r["found"] is not None for r in rows)
    fn = sum(r["label"] == "contradiction" and r["found"] is None for r in rows)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "pairs": len(rows),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
    }


def judge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    judged = []
    for row in rows:
        found = disagreement(row["b"], row["a"])
        swapped = disagreement(row["a"], row["b"])
        judged.append(
            {
                **row,
                "found": found.kind if found else None,
                "detail": found.detail if found else None,
                "swapped": swapped.kind if swapped else None,
            }
        )
    return judged


def microseconds_per_pair(rows: list[dict[str, Any]], *, cold: bool) -> float:
    rounds = []
    for _ in range(ROUNDS):
        spent = 0.0
        for row in rows:
            if cold:
                contradictions._read.cache_clear()  # each text read afresh (its words known)
            start = time.process_time()
            disagreement(row["b"], row["a"])
            spent += time.process_time() - start
        rounds.append(spent / len(rows) * 1e6)
    return statistics.median(rounds)


def report(judged: list[dict[str, Any]], split: str | None) -> dict[str, Any]:
    chosen = [r for r in judged if split is None or r["split"] == split]
    by_split = {name: scores(r for r in chosen if r["split"] == name) for name in ("dev", "test")}
    by_split["all"] = scores(chosen)
    languages = sorted({r["lang"] for r in chosen})
    by_lang = {lang: scores(r for r in chosen if r["lang"] == lang) for lang in languages}
    kinds: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in chosen:
        if r["label"] == "contradiction":
            kinds[r.get("kind", "?")][0] += r["found"] is not None
            kinds[r.get("kind", "?")][1] += 1
    alarms: defaultdict[str, int] = defaultdict(int)
    for r in chosen:
        if r["label"] != "contradiction" and r["found"] is not None:
            alarms[r["found"]] += 1
    misses = [r for r in chosen if r["label"] == "contradiction" and r["found"] is None]
    false_alarms = [r for r in chosen if r["label"] != "contradiction" and r["found"] is not None]
    asymmetric = [r for r in chosen if (r["found"] is None) != (r["swapped"] is None)]
    return {
        "by_split": by_split,
        "by_lang": by_lang,
        "recall_by_kind": {k: {"found": f, "of": n} for k, (f, n) in sorted(kinds.items())},
        "false_alarms_by_kind": dict(sorted(alarms.items())),
        "misses": [_brief(r) for r in misses],
        "false_alarms": [_brief(r) for r in false_alarms],
        "asymmetric": [_brief(r) for r in asymmetric],
    }


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("split", "lang", "label", "kind", "a", "b", "found", "detail", "swapped", "why")
    return {k: row.get(k) for k in keys}


def show(results: dict[str, Any], timing: dict[str, float]) -> None:
    def line(name: str, s: dict[str, Any]) -> str:
        return (
            f"  {name:5s} pairs {s['pairs']:3d}  P {s['precision']:.3f}  R {s['recall']:.3f}"
            f"  F1 {s['f1']:.3f}  (tp {s['tp']}, fp {s['fp']}, fn {s['fn']})"
        )

    print("by split")
    for name, s in results["by_split"].items():
        print(line(name, s))
    print("by language")
    for name, s in results["by_lang"].items():
        print(line(name, s))
    print("recall by labelled kind")
    for kind, c in results["recall_by_kind"].items():
        print(f"  {kind:9s} {c['found']:2d} / {c['of']:2d}")
    print("false alarms by reported kind:", results["false_alarms_by_kind"] or "none")
    for title in ("misses", "false_alarms", "asymmetric"):
        print(f"{title.replace('_', ' ')} ({len(results[title])})")
        for r in results[title]:
            said = f"  → {r['found']}: {r['detail']}" if r["found"] else ""
            print(f"  [{r['split']} {r['lang']} {r['label']}] {r['a']!r} | {r['b']!r}{said}")
            if title == "asymmetric":
                print(f"      swapped sides → {r['swapped']}")
    print(
        f"time per pair: cold {timing['cold_us']:.0f} µs, warm {timing['warm_us']:.0f} µs"
        f" (CPU, median of {ROUNDS} rounds over {timing['pairs']} pairs)"
    )


def parse_args(raw: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--split", choices=("dev", "test"), help="only this split (default both)")
    return parser.parse_args(raw)


def main(raw: list[str] | None = None) -> None:
    args = parse_args(raw)
    rows = load()
    judged = judge(rows)
    results = report(judged, args.split)
    chosen = [r for r in rows if args.split is None or r["split"] == args.split]
    timing = {
        "pairs": len(chosen),
        "cold_us": round(microseconds_per_pair(chosen, cold=True), 1),
        "warm_us": round(microseconds_per_pair(chosen, cold=False), 1),
    }
    show(results, timing)
    if args.json:
        meta = {"data": str(DATA.relative_to(DATA.parents[2])), "split": args.split or "both"}
        args.json.write_text(
            json.dumps({"meta": meta, "results": results, "timing": timing}, indent=2) + "\n",
            encoding="utf-8",
        )
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
