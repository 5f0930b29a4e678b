#!/usr/bin/env python
"""Code confidence benchmark: is a confident code hit the function asked about, and does an
off-corpus question stay silent?

A standalone script, not a pytest module:

    python tests/benchmarks/bench_code_confidence.py [--json out.json] [--vault DIR]

Ten trees are copied and ingested into one fresh vault, each into a workspace of its own:
Python's standard library (`sysconfig.get_paths()["stdlib"]`, without its installed
packages, its test folder included) as `stdlib`, the installed `click` package as `click`,
the installed `pip` package (its vendored libraries included) as `pip`, the installed
`rich` package as `rich`, the installed `starlette` package as `starlette`, the installed
`markdown_it` package as `markdown_it`, the installed `uvicorn` package as `uvicorn`, the
installed `watchdog` package as `watchdog`, the installed `tqdm` package as `tqdm` and the
installed `h11` package as `h11`. Eleven question sets are asked, each in its tree's
workspace, k=5:

  * tests/data/code-questions.json: questions written as people ask agents, each with the
    functions that answer it, plus off-corpus questions (code not in that tree, or not a
    question about code at all) that must get no confident hit;
  * bench_code.py's 60 standard-library questions (all answerable);
  * tests/data/code-questions-pip.json: the held-out check of issue 38, written after the
    ranking constants were chosen on the two sets above (30 answerable, 10 off-corpus);
  * tests/data/code-questions-rich.json: the seventh session's held-out check, written before
    any change of that session was tried (32 answerable, 10 off-corpus);
  * tests/data/code-questions-starlette.json: the eighth session's held-out check, written
    before any ranker ran on it (40 answerable, 10 off-corpus);
  * tests/data/code-questions-markdown.json: the ninth session's held-out check over
    markdown-it-py, committed before any ranker ran on it (36 answerable, 10 off-corpus);
  * tests/data/code-questions-uvicorn.json: the tenth session's held-out check over uvicorn,
    committed before any ranker ran on it (46 answerable, 12 off-corpus);
  * tests/data/code-questions-watchdog.json: the twelfth session's held-out check over
    watchdog, committed before any ranker ran on it (50 answerable, 12 off-corpus);
  * tests/data/code-questions-tqdm.json: the thirteenth session's held-out check over tqdm,
    committed before any change of that session (36 answerable, 10 off-corpus);
  * tests/data/code-questions-h11.json: the fifteenth session's held-out check over h11,
    committed before any ranker ran on it (35 answerable, 10 off-corpus);
  * tests/data/code-questions-named.json: 20 questions that name a definition as code
    (`inspect.getsourcelines`, `Context.ensure_object`) over the standard library and click,
    written with the change that reads such names (a demonstration, not held out).

A hit answers when it is in an answer's file and its lines overlap the answer's definition
as the `ast` module finds it (bench_code's rule). Reported per set: R@1, R@5, MRR; the
confident rate (answerable questions whose first code hit is not weak), the precision of
confident hits (confident hits that answer), off-corpus silence (questions with no
confident hit), where the answer ranks among the hits shown (`answer_ranks`), and the CPU
time of a search (time.process_time: the machine is shared).

`--vault DIR` keeps the ingested vault in DIR and reuses it on the next run (ingesting the
standard library takes a minute or two); `--rows` prints every question's first hit;
`--wrong` prints every confident first hit that does not answer, with whether the answer is
in the same file and where it ranks among the hits shown (`wrong_confident` in the JSON);
`--semantic` searches with the semantic view on (the `semantic` extra: weak code hits
ordered again by code_semantic.py; the model loads before the first search is timed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_code as bc
import bench_foundation as bf

from memstore.core.config import SEMANTIC_ON, Settings
from memstore.core.model import Hit
from memstore.service.store import Store

QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "code-questions.json"
HELD_OUT = QUESTIONS.with_name("code-questions-pip.json")  # issue 38's held-out check
HELD_OUT_RICH = QUESTIONS.with_name("code-questions-rich.json")  # the seventh session's
HELD_OUT_STARLETTE = QUESTIONS.with_name("code-questions-starlette.json")  # the eighth's
HELD_OUT_MARKDOWN = QUESTIONS.with_name("code-questions-markdown.json")  # the ninth's
HELD_OUT_UVICORN = QUESTIONS.with_name("code-questions-uvicorn.json")  # the tenth's
HELD_OUT_WATCHDOG = QUESTIONS.with_name("code-questions-watchdog.json")  # the twelfth's
HELD_OUT_TQDM = QUESTIONS.with_name("code-questions-tqdm.json")  # the thirteenth's
HELD_OUT_H11 = QUESTIONS.with_name("code-questions-h11.json")  # the fifteenth's
NAMED = QUESTIONS.with_name("code-questions-named.json")  # names spelled as code
SETS = (
    "own",
    "bench_code",
    "pip",
    "rich",
    "starlette",
    "markdown",
    "uvicorn",
    "watchdog",
    "tqdm",
    "h11",
    "named",
)
K = 5


def trees() -> dict[str, Path]:
    """The trees asked about: workspace → source folder."""
    import click
    import h11
    import markdown_it
    import pip
    import rich
    import starlette
    import tqdm
    import uvicorn
    import watchdog

    return {
        "stdlib": Path(sysconfig.get_paths()["stdlib"]),
        "click": Path(click.__file__).resolve().parent,
        "pip": Path(pip.__file__).resolve().parent,
        "rich": Path(rich.__file__).resolve().parent,
        "starlette": Path(starlette.__file__).resolve().parent,
        "markdown_it": Path(markdown_it.__file__).resolve().parent,
        "uvicorn": Path(uvicorn.__file__).resolve().parent,
        "watchdog": Path(watchdog.__file__).resolve().parent,
        "tqdm": Path(tqdm.__file__).resolve().parent,
        "h11": Path(h11.__file__).resolve().parent,
    }


def build_vault(vault: Path) -> dict[str, Any]:
    """Copy the trees beside `vault`, `memstore init` it and ingest each (timed); a kept
    vault gets the trees it lacks."""
    exe = bf.memstore_command()
    env = bf.subprocess_env(vault.parent)
    env["MEMSTORE_NO_DAEMON"] = "1"
    kept = (vault / ".git").is_dir()
    if not kept:
        subprocess.run([exe, "init", str(vault)], env=env, check=True, capture_output=True)
    figures: dict[str, Any] = {}
    for workspace, source in trees().items():
        copy = vault.parent / f"tree-{workspace}"
        done_mark = vault.parent / f"tree-{workspace}.ingested"
        if done_mark.exists() or (kept and workspace in ("stdlib", "click")):
            continue  # a kept vault has it (one kept from before pip was added: stdlib, click)
        if copy.exists():
            shutil.rmtree(copy)
        if workspace == "stdlib":
            bc.copy_stdlib(source, copy)
        else:
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
        bf.log(f"[confidence] ingesting {workspace} ({source})")
        done = subprocess.run(
            [exe, "ingest", str(copy), "-w", workspace, "--json", "--vault", str(vault)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        summary = json.loads(done.stdout)
        figures[workspace] = {"chunks": summary["created"], "seconds": summary["seconds"]}
        done_mark.touch()
    return figures


def load_questions() -> list[dict[str, Any]]:
    own = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    held_out = json.loads(HELD_OUT.read_text(encoding="utf-8"))["questions"]
    rich = json.loads(HELD_OUT_RICH.read_text(encoding="utf-8"))["questions"]
    starlette = json.loads(HELD_OUT_STARLETTE.read_text(encoding="utf-8"))["questions"]
    markdown = json.loads(HELD_OUT_MARKDOWN.read_text(encoding="utf-8"))["questions"]
    uvicorn = json.loads(HELD_OUT_UVICORN.read_text(encoding="utf-8"))["questions"]
    watchdog = json.loads(HELD_OUT_WATCHDOG.read_text(encoding="utf-8"))["questions"]
    tqdm = json.loads(HELD_OUT_TQDM.read_text(encoding="utf-8"))["questions"]
    h11 = json.loads(HELD_OUT_H11.read_text(encoding="utf-8"))["questions"]
    named = json.loads(NAMED.read_text(encoding="utf-8"))["questions"]
    return (
        [{**q, "set": "own"} for q in own]
        + [
            {"set": "bench_code", "workspace": "stdlib", "question": text, "answers": [[p, n]]}
            for text, p, n in bc.STDLIB_QUERIES
        ]
        + [{**q, "set": "pip"} for q in held_out]
        + [{**q, "set": "rich"} for q in rich]
        + [{**q, "set": "starlette"} for q in starlette]
        + [{**q, "set": "markdown"} for q in markdown]
        + [{**q, "set": "uvicorn"} for q in uvicorn]
        + [{**q, "set": "watchdog"} for q in watchdog]
        + [{**q, "set": "tqdm"} for q in tqdm]
        + [{**q, "set": "h11"} for q in h11]
        + [{**q, "set": "named"} for q in named]
    )


def spans_of(root: Path, answers: Sequence[Sequence[str]]) -> dict[str, list[tuple[int, int]]]:
    """Each answer file's definition spans (empty when off-corpus)."""
    found: dict[str, list[tuple[int, int]]] = {}
    for path, name in answers:
        found.setdefault(path, []).extend(bc.target_spans(root, path, name))
    return {path: spans for path, spans in found.items() if spans}


def answers(hit: Hit, spans: dict[str, list[tuple[int, int]]]) -> bool:
    path, start, end = bc.parse_ref(hit.path)
    return any(start <= b and a <= end for a, b in spans.get(path, ()))


def ask(store: Store, question: dict[str, Any], root: Path) -> dict[str, Any]:
    """Search one question; say where the answer ranks and whether the first hit is confident."""
    t0 = time.process_time()
    result = store.search(
        question["question"], workspace=question["workspace"], k=K, catch_up=False
    )
    cpu_ms = (time.process_time() - t0) * 1000
    hits = [h for h in result.hits if h.kind == "code"]
    spans = spans_of(root, question["answers"])
    right = [answers(h, spans) for h in hits]
    return {
        "set": question["set"],
        "question": question["question"],
        "answerable": bool(question["answers"]),
        "found_in_source": bool(spans),
        "rank": next((i for i, r in enumerate(right, 1) if r), 0),
        "confident": [not h.weak for h in hits],
        "right": right,
        "top": hits[0].content.partition("\n")[0] if hits else "",
        "same_file": bool(hits) and bc.parse_ref(hits[0].path)[0] in spans,
        "cpu_ms": cpu_ms,
    }


def figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """R@1, R@5, MRR, confident rate and precision over the answerable; off-corpus silence."""
    scored = [r for r in rows if r["answerable"] and r["found_in_source"]]
    off = [r for r in rows if not r["answerable"]]
    n = len(scored) or 1
    confident_hits = [
        ok for r in scored for c, ok in zip(r["confident"], r["right"], strict=True) if c
    ]
    first_confident = [r for r in scored if r["confident"][:1] == [True]]
    out: dict[str, Any] = {
        "answerable": len(scored),
        "recall_at_1": round(sum(r["rank"] == 1 for r in scored) / n, 3),
        "recall_at_5": round(sum(1 <= r["rank"] <= 5 for r in scored) / n, 3),
        "mrr": round(sum(1 / r["rank"] for r in scored if r["rank"]) / n, 3),
        # where the answer ranks among the hits shown (0: not shown)
        "answer_ranks": {
            "1": sum(r["rank"] == 1 for r in scored),
            "2": sum(r["rank"] == 2 for r in scored),
            "3-5": sum(3 <= r["rank"] <= 5 for r in scored),
            "not shown": sum(r["rank"] == 0 for r in scored),
        },
        "confident_rate": round(len(first_confident) / n, 3),
        "confident_right_rate": round(sum(r["right"][0] for r in first_confident) / n, 3),
        "confident_hits": len(confident_hits),
        "confident_precision": round(sum(confident_hits) / len(confident_hits), 3)
        if confident_hits
        else None,
    }
    if off:
        out["off_corpus"] = len(off)
        out["off_corpus_silent"] = round(sum(not any(r["confident"]) for r in off) / len(off), 3)
    cpu = [r["cpu_ms"] for r in rows]
    out["search_cpu_ms"] = {
        "median": round(statistics.median(cpu), 2),
        "p95": round(bf.pct(cpu, 95), 2),
    }
    return out


def wrong_confident(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every answerable question whose first hit is confident and does not answer: where the
    answer is (the first hit's file or another) and its rank among the hits shown (0: none)."""
    return [
        {
            "set": r["set"],
            "question": r["question"],
            "top": r["top"],
            "answer": "same file" if r["same_file"] else "another file",
            "answer_rank": r["rank"],
        }
        for r in rows
        if r["answerable"] and r["found_in_source"]
        if r["confident"][:1] == [True] and not r["right"][0]
    ]


def run(
    vault: Path, show_rows: bool, semantic: bool = False, show_wrong: bool = False
) -> dict[str, Any]:
    roots = {ws: vault.parent / f"tree-{ws}" for ws in trees()}
    settings = Settings(
        vault=vault,
        source="bench",
        session="bench",
        host="bench",
        semantic=SEMANTIC_ON if semantic else "",
    )
    questions = load_questions()
    with Store.open(settings) as store:
        for q in questions[:5]:  # warm-up: the searcher, the analyser's caches
            store.search(q["question"], workspace=q["workspace"], k=K, catch_up=False)
        rows = [ask(store, q, roots[q["workspace"]]) for q in questions]
    if show_rows:
        for r in rows:
            mark = "C" if r["confident"][:1] == [True] else "-"
            print(
                f"{r['set'][:5]} {mark} rank={r['rank']} {r['question'][:60]!r:64} {r['top'][:70]}"
            )
    if show_wrong:
        for w in wrong_confident(rows):
            print(
                f"{w['set'][:5]} {w['question'][:60]!r:64} {w['top'][:60]} "
                f"(answer: {w['answer']}, rank {w['answer_rank'] or '>5'})"
            )
    return {
        **{name: figures([r for r in rows if r["set"] == name]) for name in SETS},
        "wrong_confident": wrong_confident(rows),
        "unanswerable": [
            r["question"] for r in rows if r["answerable"] and not r["found_in_source"]
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, help="keep the ingested vault here, reuse it")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--rows", action="store_true", help="print each question's first hit")
    parser.add_argument("--semantic", action="store_true", help="with the semantic view on")
    parser.add_argument(
        "--wrong", action="store_true", help="print each confident first hit that is wrong"
    )
    args = parser.parse_args(argv)
    tmp = None
    if args.vault is None:
        tmp = Path(tempfile.mkdtemp(prefix="bench-code-confidence-"))
        vault = tmp / "vault"
    else:
        vault = args.vault.resolve()
    try:
        built = build_vault(vault)  # the trees a kept vault lacks
        result = {"ingest": built, **run(vault, args.rows, args.semantic, args.wrong)}
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
