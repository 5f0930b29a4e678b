#!/usr/bin/env python
"""LoCoMo evidence retrieval: memstore's recall path beside SQLite FTS5 (OR + porter).

A standalone script, not a pytest module:

    python tests/benchmarks/bench_locomo.py [--data ../shared/data/locomo10.json] [--json out.json]

The data set (Maharana et al. 2024, CC BY-NC 4.0) is read from shared/data and never copied
into the repository. Each dialogue turn is one memory ("Speaker: text", the session's date,
and the image caption where there is one); each conversation is its own vault. For every
question the relevant set is its evidence turns. Reported per split (conversations 0–5 are
where memstore was tuned, 6–9 are held out) and per category group (1–4, and 5 =
adversarial): recall@1/5/10/20 (share of evidence turns in the top k, averaged), any-hit@10
and MRR (reciprocal rank of the first evidence turn, over the top 20).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memstore.core.codec import derive_id, render_memory
from memstore.core.config import Settings
from memstore.core.model import Memory
from memstore.service.store import Store, init_vault
from memstore.vault.git import GitRepo, Trailers

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo10.json"
KS = (1, 5, 10, 20)
DEV, TEST = range(0, 6), range(6, 10)
_ID = re.compile(r"^D(\d+):(\d+)$")


def turns(conversation: dict[str, Any]) -> list[tuple[str, str]]:
    """Return (dia_id, memory text) for every turn of one conversation."""
    return [(dia_id, text) for dia_id, text, _ in written(conversation)]


def written(conversation: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Return (dia_id, memory text, when it was said) for every turn of one conversation:
    its session's date and time, a minute a turn (as an agent's adds are stamped)."""
    out = []
    sessions = sorted(
        (int(key.split("_")[1]), key) for key in conversation if re.fullmatch(r"session_\d+", key)
    )
    for number, key in sessions:
        date = conversation.get(f"session_{number}_date_time", "")
        start = datetime.strptime(date, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
        for place, turn in enumerate(conversation[key]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            said = (start + timedelta(minutes=place)).strftime("%Y-%m-%dT%H:%M:%SZ")
            out.append((turn["dia_id"], f"{text}\n({date})\n", said))
    return out


def clean_evidence(raw: Sequence[str], known: set[str]) -> tuple[list[str], int]:
    """Split, repair ('D:11:26' → 'D11:26', 'D8:6; D9:17') and drop what does not exist."""
    kept, dropped = [], 0
    for item in raw:
        for part in str(item).replace(",", ";").split(";"):
            part = part.strip().replace("D:", "D").replace(" ", "")
            if _ID.match(part) and part in known:
                kept.append(part)
            elif part:
                dropped += 1
    return list(dict.fromkeys(kept)), dropped


def build_vault(
    root: Path, items: list[tuple[str, str]], said: dict[str, str] | None = None
) -> dict[str, str]:
    """Write one memory file per turn, commit once, index; return memory id → dia_id.

    With `said` (dia_id → when: `written`), each turn records its conversation session
    (`session: s3` for D3:7) and when it was said, as an agent's adds during a session do;
    without it, no session and one date for every turn (the figures before the eighth
    session)."""
    settings = Settings(vault=root, source="locomo", session="locomo", host="bench")
    init_vault(root, settings)
    by_id, paths = {}, []
    for dia_id, text in items:
        memory_id = derive_id("conv", f"{dia_id} {text}")
        memory = Memory(
            id=memory_id,
            workspace="conv",
            body=text,
            source="locomo",
            session=f"s{dia_id[1:].split(':')[0]}" if said else "",
            created=said[dia_id] if said else "2023-01-01T00:00:00Z",
        )
        path = f"conv/{dia_id.replace(':', '-').lower()}-{memory_id}.md"
        (root / "conv").mkdir(exist_ok=True)
        (root / path).write_text(render_memory(memory), encoding="utf-8")
        by_id[memory_id] = dia_id
        paths.append(path)
    GitRepo.open(root).commit(
        "import locomo", Trailers("locomo", "locomo", "bench"), add=tuple(paths)
    )
    return by_id


def fts_index(items: list[tuple[str, str]]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(dia, body, tokenize='porter unicode61')")
    db.executemany("INSERT INTO t VALUES (?, ?)", items)
    return db


def fts_search(db: sqlite3.Connection, question: str, k: int) -> list[str]:
    words = re.findall(r"\w+", question.lower())
    if not words:
        return []
    match = " OR ".join(f'"{w}"' for w in words)
    rows = db.execute("SELECT dia FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", [match, k])
    return [row[0] for row in rows]


def measure(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    scores = {f"r@{k}": len(set(ranked[:k]) & set(relevant)) / len(relevant) for k in KS}
    scores["any@10"] = float(bool(set(ranked[:10]) & set(relevant)))
    first = next((n for n, item in enumerate(ranked[:20], 1) if item in relevant), None)
    scores["mrr"] = 1 / first if first else 0.0
    return scores


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]} if rows else {}


def run(data_path: Path) -> dict[str, Any]:
    data = json.loads(data_path.read_text(encoding="utf-8"))
    rows: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    dropped = empty = 0
    timing = {"memstore_query_s": 0.0, "fts5_query_s": 0.0, "queries": 0}
    tmp = Path(tempfile.mkdtemp(prefix="memstore-locomo-"))
    try:
        for index, sample in enumerate(data):
            items = turns(sample["conversation"])
            known = {dia for dia, _ in items}
            root = tmp / f"conv{index}"
            said = {dia: when for dia, _, when in written(sample["conversation"])}
            by_id = build_vault(root, items, said)
            db = fts_index(items)
            split = "dev 0-5" if index in DEV else "test 6-9"
            settings = Settings(vault=root, source="locomo", session="locomo", host="bench")
            with Store.open(settings) as store:
                store.reindex()
                for qa in sample["qa"]:
                    relevant, lost = clean_evidence(qa.get("evidence", []), known)
                    dropped += lost
                    if not relevant:
                        empty += 1
                        continue
                    group = "cat 5" if qa["category"] == 5 else "cat 1-4"
                    started = time.perf_counter()
                    hits = store.search(qa["question"], workspace=None, k=20, catch_up=False).hits
                    timing["memstore_query_s"] += time.perf_counter() - started
                    started = time.perf_counter()
                    baseline = fts_search(db, qa["question"], 20)
                    timing["fts5_query_s"] += time.perf_counter() - started
                    timing["queries"] += 1
                    ranked = [by_id[h.id] for h in hits]
                    for system, result in (("memstore", ranked), ("fts5", baseline)):
                        for scope in (split, "all"):
                            rows.setdefault((system, scope, group), []).append(
                                measure(result, relevant)
                            )
            print(f"conversation {index} done", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results = {
        f"{s}|{scope}|{g}": {**mean(r), "n": len(r)} for (s, scope, g), r in sorted(rows.items())
    }
    return {
        "results": results,
        "evidence_dropped": dropped,
        "questions_without_evidence": empty,
        "timing": timing,
    }


def print_report(report: dict[str, Any]) -> None:
    print(
        f"evidence ids dropped (malformed or unknown): {report['evidence_dropped']}; "
        f"questions left without evidence: {report['questions_without_evidence']}"
    )
    header = f"{'system':9} {'split':9} {'group':8} {'n':>5} " + " ".join(
        f"{m:>7}" for m in ("r@1", "r@5", "r@10", "r@20", "any@10", "mrr")
    )
    print(header)
    for key, row in report["results"].items():
        system, scope, group = key.split("|")
        print(
            f"{system:9} {scope:9} {group:8} {row['n']:5d} "
            + " ".join(f"{row[m]:7.3f}" for m in ("r@1", "r@5", "r@10", "r@20", "any@10", "mrr"))
        )
    t = report["timing"]
    print(
        f"query time: memstore {1000 * t['memstore_query_s'] / t['queries']:.1f} ms/query, "
        f"FTS5 {1000 * t['fts5_query_s'] / t['queries']:.2f} ms/query ({t['queries']} queries)"
    )


def main(argv: list[str] | None = None, runner: Callable[[Path], dict[str, Any]] = run) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"no LoCoMo data at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    report = runner(args.data)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
