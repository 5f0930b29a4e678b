"""Measure the secret scan on the generated corpus: forms stored, look-alikes refused, µs per memory.

Run: .venv/bin/python tests/benchmarks/bench_secrets.py [--seed N] [--show]
Targets (issue 36): at most 3% of the forms stored, at most 1% of the look-alikes refused.
`--scanner FILE` measures another copy of memstore/secrets.py (e.g. the one before a change,
`git show REV:memstore/secrets.py > /tmp/old.py`) on the same corpus.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.secrets_corpus import Sample, benign, forms  # noqa: E402

Scan = Callable[[str], list[str]]


def load_scanner(path: str | None) -> Scan:
    if path is None:
        from memstore.secrets import find_secrets

        return find_secrets
    spec = importlib.util.spec_from_file_location("scanner_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module.find_secrets  # type: ignore[no-any-return]


def rates(
    scan: Scan, secret: list[Sample], plain: list[Sample]
) -> tuple[list[Sample], list[Sample]]:
    """Return the forms the scan stores and the look-alikes it refuses."""
    stored = [s for s in secret if not scan(s.text)]
    refused = [s for s in plain if scan(s.text)]
    return stored, refused


def cost_us(scan: Scan, samples: list[Sample], rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for sample in samples:
            scan(sample.text)
        best = min(best, time.perf_counter() - started)
    return best / len(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--scanner", help="another copy of memstore/secrets.py to measure")
    parser.add_argument("--show", action="store_true", help="print each miss")
    args = parser.parse_args()
    scan = load_scanner(args.scanner)
    secret, plain = forms(args.seed), benign(args.seed)
    stored, refused = rates(scan, secret, plain)
    families = len({s.family for s in secret})
    print(
        f"forms: {len(stored)}/{len(secret)} stored ({len(stored) / len(secret):.1%}, "
        f"{families} families); look-alikes: {len(refused)}/{len(plain)} refused "
        f"({len(refused) / len(plain):.1%}); scan {cost_us(scan, secret + plain):.0f} µs per memory"
    )
    if args.show:
        for sample in stored:
            print(f"stored  [{sample.family}] {sample.text[:110]!r}")
        for sample in refused:
            print(f"refused {scan(sample.text)} {sample.text[:110]!r}")


if __name__ == "__main__":
    main()
