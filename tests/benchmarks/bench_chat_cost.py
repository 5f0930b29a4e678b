"""CPU per recall and per prompt-hook search (a chat query) at a bench_read_path.py vault.

The hook's search weighs a prompt's everyday words by the English word-frequency prior
(catalog/english_prior.py, `Query.of(text, chat=True)`); `memory_recall` does not. This
times both on the eval fixture's and the hook benchmark's texts (CPU ms, p50 / p95, after
one warm-up pass), for the code first on PYTHONPATH: run it once with main's code and once
with the branch's, alternating, and compare in the same run.

Run:  python tests/benchmarks/bench_read_path.py build /tmp/v10k 10000
      python tests/benchmarks/bench_read_path.py reindex /tmp/v10k
      PYTHONPATH=CODE python tests/benchmarks/bench_chat_cost.py /tmp/v10k --label main
      [--prompts tests/data/prompts-heldout5.json: its pasted logs and pages too]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_hook

from memstore.cli.evaluation import load_fixture
from memstore.core.config import Settings
from memstore.index import Query
from memstore.service.store import Store

FIXTURE = Path(__file__).resolve().parents[2] / "memstore" / "fixtures" / "recall-eval.json"


def chat(text: str) -> Any:
    """The hook's query of `text`: a pasted log read as its question and error lines
    (catalog/pasted.py), on code without it a chat query, on code without those the text."""
    try:
        from memstore.catalog.pasted import chat_query
    except ImportError:
        fields = getattr(Query, "__dataclass_fields__", {})
        return Query.of(text, chat=True) if "chat" in fields else text
    return chat_query(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path, help="a vault of bench_read_path.py build|reindex")
    parser.add_argument("--label", default="code", help="the name printed on each row")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--prompts", type=Path, action="append", default=[], help="more prompt sets to time"
    )
    args = parser.parse_args(argv)
    texts = [q["text"] for q in load_fixture(FIXTURE)["queries"]]
    for prompts in [bench_hook.PROMPTS, *args.prompts]:
        texts += [p.text for p in bench_hook.load_prompts(prompts)]
    settings = Settings(vault=args.vault, source="bench", session="bench", host="bench")
    with Store.open(settings) as store:
        calls: dict[str, Callable[[str], object]] = {
            "recall": lambda t: store.recall(t, workspace=None, k=5, catch_up=False),
            "hook-search": lambda t: store.search(chat(t), workspace=None, k=5, catch_up=False),
        }
        for name, call in calls.items():
            for text in texts:  # warm the caches once
                call(text)
            times: list[float] = []
            for _ in range(args.rounds):
                for text in texts:
                    started = time.process_time()
                    call(text)
                    times.append(1000 * (time.process_time() - started))
            times.sort()
            print(
                f"{args.label:<8} {name:<12} n={len(times)} CPU p50 {times[len(times) // 2]:.2f}"
                f" ms, p95 {times[int(0.95 * len(times))]:.2f} ms",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
