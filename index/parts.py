"""The process pool: helper processes that take a share of a build, and the split rule.

One mechanism for every share of work given to another process: a `Helper` is a Python
process started with a line of code, fed pickled messages by a thread of its own (the
pipes' buffers pace it; neither side waits on the other's write), answering pickled
messages on its stdout. Its side of the pipes is `serve`. A helper that fails, exits
early or never starts answers None, and its share is the caller's to do itself.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .schema import Document, Part
from .writer import write_part

MAX_HELPERS = 3  # processes that share a build with this one, at most
EXIT_WAIT_S = 60.0  # a helper that answered (or closed its output) exits within this
PART_CODE = f"from {__name__} import serve_part; serve_part()"  # whatever name imports it
T = TypeVar("T")


def usable_cores() -> int:
    """Return how many cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def share_count(items: int, minimum: int, cores: int | None = None) -> int:
    """Return how many processes (this one included) a build of `items` is split among:
    one per core, at most MAX_HELPERS + 1, each with at least `minimum` (1: not split)."""
    cores = usable_cores() if cores is None else cores
    return max(1, min(cores, MAX_HELPERS + 1, items // max(minimum, 1)))


def split(items: Sequence[T], count: int, own_weight: float = 1.0) -> list[list[T]]:
    """Split `items` in order into `count` shares, the first (this process's) `own_weight`
    times the size of each other one."""
    if count < 2:
        return [list(items)]
    unit = len(items) / (count - 1 + own_weight)
    ends = [round(own_weight * unit + n * unit) for n in range(count - 1)] + [len(items)]
    return [list(items[start:end]) for start, end in zip([0, *ends], ends, strict=False)]


@contextlib.contextmanager
def parts_folder(folder: Path, used: bool) -> Iterator[Path]:
    """Hold the folder helpers write their parts into: emptied of what a build that crashed
    left there, and removed on leaving (when `used`)."""
    if used:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        yield folder
    finally:
        if used:
            shutil.rmtree(folder, ignore_errors=True)


class Helper:
    """One helper process: pickled messages in (by a thread), pickled answers out."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    @classmethod
    def start(cls, code: str, messages: list[object]) -> Helper | None:
        """Start `python -c code` and feed it `messages`; None if it cannot start."""
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        except OSError:
            return None
        threading.Thread(target=_feed, args=(process, messages), daemon=True).start()
        return cls(process)

    def receive(self) -> Any | None:
        """Wait for the helper's next answer; None if it failed (or has no more)."""
        try:
            return pickle.load(self._process.stdout)  # type: ignore[arg-type]
        except (OSError, EOFError, ValueError, pickle.UnpicklingError):
            return None

    def succeeded(self) -> bool:
        """Wait for the helper to exit (it has answered, or closed its output); say whether
        it finished its work. One that lingers past EXIT_WAIT_S is killed: it failed."""
        try:
            return self._process.wait(timeout=EXIT_WAIT_S) == 0
        except subprocess.TimeoutExpired:
            self.stop()
            return False

    def kill(self) -> None:
        """Kill it if it still runs, without waiting (its caller's stop reaps it)."""
        if self._process.poll() is None:
            with contextlib.suppress(OSError):
                self._process.kill()

    def stop(self) -> None:
        """Kill it if it still runs (done, or left behind by a failure), and reap it."""
        self.kill()
        self._process.wait()
        with contextlib.suppress(OSError):
            self._process.stdout.close()  # type: ignore[union-attr]


class Stopper:
    """Stops, from another thread, the helper processes started under it (a background
    merge's, when its store closes): each running is killed, and one started later at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[Helper] = set()
        self._stopped = False

    @property
    def is_stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        """Kill the helpers running under it (their callers see them fail), and any to come."""
        with self._lock:  # held while killing: a helper left here is not reaped yet
            self._stopped = True
            for helper in self._running:
                helper.kill()

    @contextlib.contextmanager
    def running(self, helper: Helper) -> Iterator[Helper]:
        """Hold `helper` under this stopper while it works (killed at once if stopped)."""
        with self._lock:
            self._running.add(helper)
            stopped = self._stopped
        if stopped:
            helper.kill()
        try:
            yield helper
        finally:
            with self._lock:
                self._running.discard(helper)


def _feed(process: subprocess.Popen[bytes], messages: list[object]) -> None:
    """Write every message to a helper's stdin, then close it (a thread of its own)."""
    try:
        for message in messages:
            pickle.dump(message, process.stdin)  # type: ignore[arg-type]
    except (OSError, ValueError):
        pass  # it is gone or was stopped: receive() says so
    finally:
        with contextlib.suppress(OSError, ValueError):
            process.stdin.close()  # type: ignore[union-attr]


@contextlib.contextmanager
def as_helper() -> Iterator[None]:
    """Run a helper process's work: Ctrl-C is its parent's to handle (which stops its
    helpers), and a parent gone (a broken pipe) ends the helper without a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    except BrokenPipeError:
        os._exit(1)  # nobody is listening: exit without flushing into the broken pipe


def serve(work: Callable[[Callable[[], Any], Callable[[object], None]], None]) -> None:
    """Run as a helper process: `work(receive, answer)` reads the messages on stdin
    (`receive` raises EOFError after the last) and answers on stdout."""
    out = sys.stdout.buffer

    def answer(message: object) -> None:
        pickle.dump(message, out)
        out.flush()

    with as_helper():
        work(lambda: pickle.load(sys.stdin.buffer), answer)


@contextlib.contextmanager
def shared(
    docs: list[Document], folder: Path, minimum: int
) -> Iterator[tuple[Iterator[Document], Callable[[], list[Part]]]]:
    """Split many documents new to an index between this process and helper processes
    (up to one per core, each with at least `minimum`), which index theirs into parts
    under `folder` meanwhile: give `apply` the documents this process indexes and the
    parts. A helper that fails leaves its documents to this process; on leaving, every
    helper is stopped and `folder` removed.
    """
    count = share_count(len(docs), minimum)
    if count < 2:
        yield iter(docs), list
        return
    own, *shares = split(docs, count)
    adopted: list[Part] = []
    with parts_folder(folder, used=True):
        helpers = [
            Helper.start(PART_CODE, [(str(folder / str(n)), _part_limitmb(len(share)), share)])
            for n, share in enumerate(shares)
        ]

        def documents() -> Iterator[Document]:
            yield from own
            for n, (share, helper) in enumerate(zip(shares, helpers, strict=True)):
                segment = helper.receive() if helper is not None else None
                if helper is None or not helper.succeeded() or segment is None:
                    yield from share  # it failed: this process indexes them
                else:
                    adopted.append(Part(folder / str(n), segment, tuple(d.key for d in share)))

        try:
            yield documents(), lambda: adopted
        finally:
            for helper in helpers:
                if helper is not None:
                    helper.stop()


def serve_part() -> None:
    """Run as a helper process: index the documents on stdin into a part, answer its segment."""

    def work(receive: Callable[[], Any], answer: Callable[[object], None]) -> None:
        folder, limitmb, docs = receive()
        answer(write_part(Path(folder), while_parent_lives(docs), limitmb))

    serve(work)


def while_parent_lives(items: Iterable[T], every: int = 1000) -> Iterator[T]:
    """Yield `items`; a helper whose parent is gone (the build it was part of) exits."""
    parent = os.getppid()
    for done, item in enumerate(items, 1):
        if done % every == 0 and os.getppid() != parent:
            raise SystemExit(1)
        yield item


def _part_limitmb(documents: int) -> int:
    return 256 if documents <= 10_000 else 1024
