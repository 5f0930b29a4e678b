"""The CLI at a terminal: messages for a person, questions, progress bars on stderr."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from memstore.core.errors import InvalidInputError
from memstore.ops.output import printable


def now() -> datetime:
    return datetime.now(UTC)


def working_folder() -> Path:
    """Return the folder the command runs in: its repository's citations are checked."""
    return Path.cwd()


def say(text: str, err: bool = False) -> None:
    """Print one message for a person: memory text never reaches the terminal raw."""
    typer.echo(printable(text), err=err)


def ask(question: str, yes: bool, *, err: bool = False) -> None:
    """Confirm with the person at the terminal; without one, only --yes may proceed. `err`:
    ask on stderr (--json keeps stdout for the JSON alone)."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise InvalidInputError(
            "no terminal to ask for confirmation; rerun with --yes (or --dry-run to see what would happen)"
        )
    typer.confirm(question, abort=True, err=err)


PROGRESS_DELAY_S = 1.0  # work shorter than this shows no bar at all


def _no_progress(_done: int, _total: int) -> None:
    """Ignore progress: a pipe, a file, --quiet or --json."""


def _progress_delay() -> float:
    """Seconds of work before a bar appears: $MEMSTORE_PROGRESS_DELAY, else 1."""
    try:
        return max(0.0, float(os.environ.get("MEMSTORE_PROGRESS_DELAY") or PROGRESS_DELAY_S))
    except ValueError:
        return PROGRESS_DELAY_S


@contextlib.contextmanager
def progress_bar(label: str, *, quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    """A bar with counts on stderr, moved by the (done, total) calls of long work.

    Only on a terminal, never with --quiet, and only once the work has run for
    PROGRESS_DELAY_S: a quick run, a pipe or a file gets nothing.
    """
    if quiet or not sys.stderr.isatty():
        yield _no_progress
        return
    start, delay = time.monotonic(), _progress_delay()
    with contextlib.ExitStack() as stack:
        bar: Any = None

        def step(done: int, total: int) -> None:
            nonlocal bar
            if bar is None:
                if time.monotonic() - start < delay:
                    return
                bar = stack.enter_context(
                    typer.progressbar(
                        length=max(total, 1),
                        label=label,
                        file=sys.stderr,
                        show_pos=True,
                        show_percent=True,
                    )
                )
            bar.length = max(total, 1)  # a total may grow: restore reads, then writes
            bar.update(done - bar.pos)

        yield step
