"""The daemon's threads allocate from one malloc arena (issue 39: the daemon's memory): each
thread of its own would keep the pages it freed in an arena of its own."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

PROGRAM = """
import ctypes, sys, threading
from memstore.daemon import heap
if sys.argv[1] == "one":
    heap.one_arena()
def work():
    kept = [bytearray(4000) for _ in range(200)]  # past Python's small objects: malloc's
    del kept
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ctypes.CDLL(None).malloc_stats()  # glibc: one "Arena N:" paragraph an arena, on stderr
"""


def _arenas(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True
    )
    return sum(1 for line in done.stderr.splitlines() if line.startswith("Arena "))


@pytest.mark.skipif(
    not hasattr(ctypes.CDLL(None), "malloc_stats") or not sys.platform.startswith("linux"),
    reason="glibc's malloc only",
)
def test_threads_share_one_arena_once_asked():
    assert _arenas("default") > 1  # a thread of its own, an arena of its own
    assert _arenas("one") == 1
