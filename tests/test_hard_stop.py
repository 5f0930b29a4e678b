"""A test that no Python handler can stop does not stall the run: past its pytest-timeout
bound (and `hard_stop_after`), faulthandler prints every thread's stack and ends the worker;
xdist reports the test as crashed and the other tests still run (tests/conftest.py).

CI once stopped at 96% when its 90 minutes ran out, with no word of where: pytest-timeout's
signal cannot reach a hang inside C code holding the interpreter's lock, and xdist's
controller waits for a silent worker for ever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, exit_status_or_stacks, run_bounded

# SIGALRM blocked: pytest-timeout's signal never arrives, as for a hang holding the GIL.
STUCK = """
import signal, threading

def test_stuck_where_no_handler_reaches():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    threading.Event().wait()

def test_after_it():
    pass
"""


def test_a_test_no_handler_can_stop_ends_its_worker_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "test_stuck.py").write_text(STUCK, encoding="utf-8")
    done = run_bounded(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-n", "1", "--timeout=1", "-o", "hard_stop_after=1", "test_stuck.py"],
        240,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "HOME": str(tmp_path)},
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert (
        "worker 'gw0' crashed while running 'test_stuck.py::test_stuck_where_no_handler_reaches'"
        in out
    )
    assert "1 failed, 1 passed" in out, out
    assert 'File "' in done.stderr and 'test_stuck.py", line 6 in test_stuck_where' in done.stderr


def test_a_child_that_does_not_exit_is_failed_with_its_stacks() -> None:
    stuck = "import threading\ndef stuck_here():\n    threading.Event().wait()\nstuck_here()\n"
    process = subprocess.Popen(
        [sys.executable, "-c", stuck],
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    with pytest.raises(AssertionError, match="did not exit within 1 s") as failed:
        exit_status_or_stacks(process, 1)
    assert "in stuck_here" in str(failed.value)
    assert process.poll() is not None
