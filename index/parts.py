"""The process pool: helper processes that index shares of a fresh build into parts."""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from .engine import Document, Part, write_part

MAX_HELPERS = 3  # processes that `share` an index build with this one, at most
PART_CODE = "from memstore.index.parts import serve_part; serve_part()"


def usable_cores() -> int:
    """Return how many cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


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
    count = min(usable_cores(), MAX_HELPERS + 1, len(docs) // max(minimum, 1))
    if count < 2:
        yield iter(docs), list
        return
    size = -(-len(docs) // count)
    own, *shares = [docs[i : i + size] for i in range(0, len(docs), size)]
    shutil.rmtree(folder, ignore_errors=True)  # what a build that crashed left there
    helpers = [PartWriter.start(folder / str(n), share) for n, share in enumerate(shares)]
    adopted: list[Part] = []

    def documents() -> Iterator[Document]:
        yield from own
        for share, helper in zip(shares, helpers, strict=True):
            part = helper.result() if helper is not None else None
            if part is None:
                yield from share  # it failed: this process indexes them
            else:
                adopted.append(part)

    try:
        yield documents(), lambda: adopted
    finally:
        for helper in helpers:
            if helper is not None:
                helper.stop()
        shutil.rmtree(folder, ignore_errors=True)


class PartWriter:
    """A helper process indexing a list of documents into a part of its own (`write_part`,
    run by `serve_part`); pickles over pipes, the documents fed by a thread."""

    def __init__(self, process: subprocess.Popen[bytes], folder: Path, keys: tuple[str, ...]):
        self._process = process
        self.folder = folder
        self.keys = keys

    @classmethod
    def start(cls, folder: Path, docs: list[Document]) -> PartWriter | None:
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", PART_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        except OSError:
            return None
        job = (str(folder), _part_limitmb(len(docs)), os.getpid(), docs)
        threading.Thread(target=_send, args=(process, job), daemon=True).start()
        return cls(process, folder, tuple(doc.key for doc in docs))

    def result(self) -> Part | None:
        """Wait for the helper; return its part, or None if it failed."""
        try:
            segment = pickle.load(self._process.stdout)  # type: ignore[arg-type]
        except (OSError, EOFError, ValueError, pickle.UnpicklingError):
            segment = None
        finally:
            if self._process.wait() != 0:
                segment = None
            with contextlib.suppress(OSError):
                self._process.stdout.close()  # type: ignore[union-attr]
        return None if segment is None else Part(self.folder, segment, self.keys)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()  # done, or left behind by a failure
        self._process.wait()
        with contextlib.suppress(OSError):
            self._process.stdout.close()  # type: ignore[union-attr]


def _send(process: subprocess.Popen[bytes], message: object) -> None:
    """Write one message to a helper's stdin, then close it (a thread of its own)."""
    try:
        pickle.dump(message, process.stdin)  # type: ignore[arg-type]
    except (OSError, ValueError):
        pass  # it is gone: result() says so
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


def serve_part() -> None:
    """Run as a helper process: index the documents on stdin into a part, answer its segment."""
    with as_helper():
        folder, limitmb, parent, docs = pickle.load(sys.stdin.buffer)

        def documents() -> Iterator[Document]:
            for done, doc in enumerate(docs, 1):
                if done % 1000 == 0 and os.getppid() != parent:
                    raise SystemExit(1)  # the build it was part of is gone
                yield doc

        segment = write_part(Path(folder), documents(), limitmb)
        pickle.dump(segment, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def _part_limitmb(documents: int) -> int:
    return 256 if documents <= 10_000 else 1024
