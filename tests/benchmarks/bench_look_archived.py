#!/usr/bin/env python
"""CPU of `look_archived` (ops/lean.py: the archived count after an empty search) beside the
empty search itself, warm, in-process, on a COPY of a vault (the store writes its index).

    python tests/benchmarks/bench_look_archived.py /tmp/copy-of-a-10k-vault
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from memstore.core.config import Settings
from memstore.ops.lean import look_archived
from memstore.service.store import Store


def main() -> None:
    parser = argparse.ArgumentParser(
        description="CPU of look_archived beside the empty search itself, on a copy of a vault.",
        epilog="example: python tests/benchmarks/bench_look_archived.py /tmp/copy-of-a-10k-vault",
    )
    parser.add_argument("vault", type=Path, help="a COPY of a vault (the store writes its index)")
    vault = parser.parse_args().vault
    rng = random.Random(3)
    consonants = "bcdfghjklmnpqrstvwxz"
    queries = ["".join(rng.choice(consonants) for _ in range(7)) + " deploy" for _ in range(3)]
    queries += ["".join(rng.choice(consonants) for _ in range(8)) for _ in range(17)]
    with Store.open(Settings(vault=vault, source="bench", session="b", host="h")) as store:
        folders = (p.name for p in vault.iterdir() if p.is_dir() and not p.name.startswith("."))
        workspace = sorted(folders)[0]
        store.search("warm up nginx", workspace=workspace)
        search_s = archived_s = 0.0
        empty = 0
        for query in queries:
            start = time.process_time()
            result = store.search(query, workspace=workspace)
            searched = time.process_time()
            look_archived(store, result, query, workspace, vault=None)
            looked = time.process_time()
            if not result.hits:
                empty += 1
                search_s += searched - start
                archived_s += looked - searched
    print(
        f"{vault.name}: {empty} empty searches; the search {1000 * search_s / empty:.1f} ms "
        f"CPU each, look_archived {1000 * archived_s / empty:.1f} ms CPU each"
    )


if __name__ == "__main__":
    main()
