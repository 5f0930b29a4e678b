"""Measure the capture hook's redundancy threshold on the sample vault.

Prints the term containment of each sample memory with its most similar *other* memory
(distinct memories), and of light restatements of each memory with the original. The
threshold in memstore/ops/hooks.py must sit between the two.

Run:  python tests/benchmarks/bench_novelty.py
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from memstore.core.codec import parse_memory
from memstore.index import terms
from memstore.ops.hooks import NOVELTY_THRESHOLD

SAMPLE = Path(__file__).resolve().parents[2] / "sample-vault"


def containment(text: str, other: str) -> float:
    wanted = terms(text)
    return len(wanted & terms(other)) / len(wanted) if wanted else 1.0


def arguments() -> argparse.Namespace:
    """Read the command line (`--help` prints the module's text)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser.parse_args()


def main() -> None:
    arguments()
    bodies = [
        parse_memory(p.read_text(encoding="utf-8"), path=p.relative_to(SAMPLE).as_posix()).body
        for p in sorted(SAMPLE.glob("*/*.md"))
    ]
    distinct = sorted(max(containment(a, b) for b in bodies if b is not a) for a in bodies)
    restated = sorted(
        containment(variant, body)
        for body in bodies
        for variant in (
            body + " I verified this again today and it still holds.",
            " ".join(body.split()[: max(3, int(len(body.split()) * 0.8))]),
        )
    )
    print(f"memories: {len(bodies)}; threshold in use: {NOVELTY_THRESHOLD}")
    print(
        f"distinct pairs   max {distinct[-1]:.2f}  p95 {distinct[int(len(distinct) * 0.95)]:.2f}  median {statistics.median(distinct):.2f}"
    )
    print(
        f"restatements     min {restated[0]:.2f}  p5 {restated[int(len(restated) * 0.05)]:.2f}  median {statistics.median(restated):.2f}"
    )
    skipped = sum(r >= NOVELTY_THRESHOLD for r in restated) / len(restated)
    kept = sum(d < NOVELTY_THRESHOLD for d in distinct) / len(distinct)
    print(
        f"at {NOVELTY_THRESHOLD}: {kept:.0%} of distinct memories kept, {skipped:.0%} of restatements skipped"
    )


if __name__ == "__main__":
    main()
