"""A rebuild's work per file, in one process, CPU time by part (issue 39, reindex).

Reads N memory files of a vault (spread over it), makes their search documents and entities,
and writes one segment of all of them (`write_part`), timing each part with
`time.process_time`. No scan, manifest or entity table: the part of a rebuild that grows with
its files. Run it on two versions of the code by `PYTHONPATH`, alternating:

    PYTHONPATH=/tmp/main-src python tests/benchmarks/bench_rebuild_parts.py /tmp/v100k 100000
    PYTHONPATH=$PWD python tests/benchmarks/bench_rebuild_parts.py /tmp/v100k 100000

(run it from outside the checkout, or `python -m`/the script's folder comes first on sys.path).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import memstore
from memstore.catalog.reading import document_for
from memstore.index import document_entities, write_part
from memstore.vault.files import Vault


def arguments() -> argparse.Namespace:
    """Read the command line (`--help` prints the module's text)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("vault", type=Path, help="a vault (bench_scale.py builds one)")
    parser.add_argument("count", type=int, help="how many of its memory files to read")
    return parser.parse_args()


def main() -> None:
    args = arguments()
    root, count = args.vault, args.count
    vault = Vault(root)
    paths = []
    for workspace in sorted(os.listdir(root)):
        if workspace.startswith("."):
            continue
        for folder, _, files in os.walk(root / workspace):
            paths += [
                os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".md")
            ]
    paths = sorted(paths)[:: max(1, len(paths) // count)][:count]
    t = time.process_time()
    memories = [vault.read(p) for p in paths]
    read = time.process_time() - t
    t = time.process_time()
    docs = [document_for(p, m) for p, m in zip(paths, memories, strict=True)]
    made = time.process_time() - t
    t = time.process_time()
    for doc in docs:
        document_entities(doc)
    entities = time.process_time() - t
    folder = Path(tempfile.mkdtemp(prefix="rebuild-parts-"))
    t = time.process_time()
    write_part(folder / "part", docs, 1024)
    index = time.process_time() - t
    shutil.rmtree(folder)
    total = read + made + entities + index
    print(
        f"{Path(memstore.__file__).parent.parent}: {len(paths)} files, CPU s: read+parse {read:.2f}"
        f" document {made:.2f} entities {entities:.2f} index {index:.2f} total {total:.2f}"
    )


if __name__ == "__main__":
    main()
