"""A rebuild as `memstore reindex` runs it (helper processes and all), timed by phase.

Prints the wall time and this process's and its children's CPU (`getrusage`) when the
listing, the wait for each helper's part, the writing of a segment's terms, the entity
table and the manifest start and end: what the parent does while a helper works, and
what it does alone after (issue 39, reindex; docs/benchmarks.md "seventh session").
Run it from outside the checkout, with the code to measure on PYTHONPATH:

    cd /tmp && PYTHONPATH=$CHECKOUT python $CHECKOUT/tests/benchmarks/bench_rebuild_phases.py V
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import memstore.catalog.memory_manifest as manifest
import memstore.catalog.reading as reading
import memstore.catalog.updater as updater
import memstore.index.entity_table as entity_table
from memstore.catalog.indexer import rebuild
from memstore.index import bulk
from memstore.vault.files import Vault

STARTED = time.perf_counter()


def cpu() -> str:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (
        f"wall {time.perf_counter() - STARTED:7.2f} s, this process {own.ru_utime + own.ru_stime:6.2f} s,"
        f" children {children.ru_utime + children.ru_stime:6.2f} s"
    )


def timed(owner: Any, name: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        print(f"{label:14s} starts: {cpu()}", file=sys.stderr)
        result = inner(*args, **kwargs)
        print(f"{label:14s} ends:   {cpu()}", file=sys.stderr)
        return result

    setattr(owner, name, wrapper)


def arguments() -> argparse.Namespace:
    """Read the command line (`--help` prints the module's text)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("vault", type=Path, help="the vault whose index is rebuilt")
    return parser.parse_args()


def main() -> None:
    vault = arguments().vault
    timed(updater, "compare_all", "listing")
    timed(reading._PartHelper, "result", "helper's part")
    timed(bulk.TermWriter, "_flush_segment", "terms written")
    timed(entity_table.EntityTable, "write", "entity table")
    timed(manifest.MemoryManifest, "write", "manifest")
    rebuild(Vault(vault))[0].close()
    print(f"{'done':14s}         {cpu()}", file=sys.stderr)


if __name__ == "__main__":
    main()
