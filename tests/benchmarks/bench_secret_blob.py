"""Time the secret scan of a 4 MB image held as base64 (wrapped at 76, and a one-line data URI),
and print what it finds (issue: the trial's 4 MB data URI was held back as a private key).

    PYTHONPATH=/tmp/main-copy python tests/benchmarks/bench_secret_blob.py main
    python tests/benchmarks/bench_secret_blob.py branch
"""

from __future__ import annotations

import argparse
import base64
import random
import textwrap
import time

from memstore.core.secrets import find_secrets


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("label", nargs="?", default="?", help="printed on each line (main, branch)")
    label = parser.parse_args().label
    rng = random.Random(4)
    png = b"\x89PNG\r\n\x1a\n" + rng.randbytes(3_000_000)
    b = base64.b64encode(png).decode()
    texts = (
        ("4 MB wrapped", "the logo:\n" + "\n".join(textwrap.wrap(b, 76))),
        ("4 MB data URI", f"![logo](data:image/png;base64,{b})"),
    )
    for name, text in texts:
        t = time.process_time()
        found = find_secrets(text)
        print([label], name, found, f"{time.process_time() - t:.2f} s CPU")


if __name__ == "__main__":
    main()
