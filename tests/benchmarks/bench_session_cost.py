#!/usr/bin/env python
"""What recall's session step costs: the same recalls with SESSION_BOOST off and on, alternated.

A standalone script, not a pytest module (docs/benchmarks.md, "Eighth session: LoCoMo"):

    python tests/benchmarks/bench_session_cost.py /tmp/v10k [--rounds 4]

The vault is one of bench_read_path.py's (`build V 10000 --session 20`, then `reindex V`).
The texts are the eval fixture's and the prompt-hook benchmark's, as bench_concepts.py
--timing runs them (k = 5, CPU time, after one warm-up pass); in one process, so the two
settings share the index, its caches and the machine's load.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_hook

from memstore.catalog import sessions
from memstore.cli.evaluation import DEFAULT_FIXTURE, load_fixture
from memstore.core.config import Settings
from memstore.service.store import Store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    texts = [q["text"] for q in load_fixture(DEFAULT_FIXTURE)["queries"]]
    texts += [p.text for p in bench_hook.load_prompts()]
    settings = Settings(vault=args.vault, source="bench", session="bench", host="bench")
    boost = sessions.SESSION_BOOST
    times: dict[float, list[float]] = {0.0: [], boost: []}
    with Store.open(settings) as store:
        for text in texts:  # warm the caches once
            store.recall(text, workspace=None, k=5, catch_up=False)
        for _ in range(args.rounds):
            for value, kept in times.items():
                sessions.SESSION_BOOST = value
                for text in texts:
                    started = time.process_time()
                    store.recall(text, workspace=None, k=5, catch_up=False)
                    kept.append(1000 * (time.process_time() - started))
    for value, kept in times.items():
        kept.sort()
        print(
            f"SESSION_BOOST {value}: {len(kept)} recalls, CPU p50 {kept[len(kept) // 2]:.2f} "
            f"ms, p95 {kept[int(0.95 * len(kept))]:.2f} ms, mean {sum(kept) / len(kept):.2f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
