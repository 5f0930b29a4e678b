"""Time the secret scan of a 4 MB image held as base64 (wrapped at 76, and a one-line data URI),
and print what it finds (issue: the trial's 4 MB data URI was held back as a private key).

    PYTHONPATH=/tmp/main-copy python tests/benchmarks/bench_secret_blob.py main
    python tests/benchmarks/bench_secret_blob.py branch
"""

from __future__ import annotations

import base64
import random
import sys
import textwrap
import time

from memstore.core.secrets import find_secrets

rng = random.Random(4)
png = b"\x89PNG\r\n\x1a\n" + rng.randbytes(3_000_000)
b = base64.b64encode(png).decode()
TEXTS = (
    ("4 MB wrapped", "the logo:\n" + "\n".join(textwrap.wrap(b, 76))),
    ("4 MB data URI", f"![logo](data:image/png;base64,{b})"),
)
for name, text in TEXTS:
    t = time.process_time()
    found = find_secrets(text)
    print(sys.argv[1:2] or ["?"], name, found, f"{time.process_time() - t:.2f} s CPU")
