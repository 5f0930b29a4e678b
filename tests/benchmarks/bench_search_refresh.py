#!/usr/bin/env python
"""Per-search cost of an in-process `Store.search` with no watcher, beside a 3,000-file ingested tree.

    python tests/benchmarks/bench_search_refresh.py [--files 3000] [--rounds 5]

With no watcher, a search chunks code changed under the ingested trees itself; the walk
(git ls-files, a stat per file, the code index's lock and tables) costs ~40 ms at 3,000
files. "before" sets SOURCES_REFRESH_S to 0: every search walks, as before issue 36's
review; "after" is the shipped setting (a walk at the first search, then at most one every
SOURCES_REFRESH_S); "no catch-up" is `catch_up=False`, the search alone. The three are
interleaved in one process, so a busy machine slows them alike.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memstore.service import store as store_module
from memstore.service.store import Store, init_vault
from tests.conftest import settings_at


def make_tree(repo: Path, files: int) -> None:
    for i in range(files):
        path = repo / f"pkg{i // 100}" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def function_{i}(x):\n    '''Compute value {i}.'''\n    return x + {i}\n")
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault, repo = Path(tmp) / "vault", Path(tmp) / "tree"
        make_tree(repo, args.files)
        init_vault(vault, settings_at(vault))
        shipped = store_module.SOURCES_REFRESH_S
        modes = {"before (a walk per search)": 0.0, "after": shipped, "no catch-up": None}
        times: dict[str, list[float]] = {name: [] for name in modes}
        with Store.open(settings_at(vault)) as store:
            store.ingest(repo, "webshop")
            store.search("function_7 value")  # warm
            for _ in range(args.rounds):
                for name, every in modes.items():
                    store_module.SOURCES_REFRESH_S = shipped if every is None else every
                    for n in range(20):
                        started = time.perf_counter()
                        store.search(f"function_{n} value", catch_up=every is not None)
                        times[name].append((time.perf_counter() - started) * 1000)
        for name, taken in times.items():
            p90 = sorted(taken)[int(len(taken) * 0.9)]
            print(
                f"{name}: median {statistics.median(taken):.1f} ms, p90 {p90:.1f} ms "
                f"over {len(taken)} searches ({args.files} files ingested)"
            )


if __name__ == "__main__":
    main()
