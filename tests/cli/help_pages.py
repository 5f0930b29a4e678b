"""Every command's `--help` as typer renders it, rendered once per test process.

Rendering one page costs ~0.15 s of CPU (typer builds the click command again for each
invoke, then rich lays the page out): a walk over every command and group costs seconds,
and four tests walk them all. They share one rendering per process, and the xdist group
keeps them in one process (`make test` runs `--dist loadgroup`; without it each process
renders what its tests ask, as before). Imported as `tests.cli.help_pages` by both test
files, so they share one module and its cache.
"""

from __future__ import annotations

import functools

import pytest
from typer.testing import CliRunner

from memstore.launcher import typer_app

app = typer_app()  # every shell's commands, as the executable has them

EVERY_HELP = pytest.mark.xdist_group("every_help")


@functools.cache
def help_of(words: tuple[str, ...], width: int | None = None) -> tuple[int, str]:
    """`memstore WORDS --help` (at `width` columns): its exit code and output."""
    result = CliRunner().invoke(app, [*words, "--help"], terminal_width=width)
    return result.exit_code, result.output
