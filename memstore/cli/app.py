"""The root of the command line: the typer app the launcher composes every shell's commands into.

Each command group lives in its own module (cli/memories.py, upkeep.py, history.py, …; the
daemon's, the MCP server's and the agents' commands in their own packages); the launcher
(memstore/launcher.py) puts them under this root in the order `memstore --help` lists them.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from memstore import __version__
from memstore.core.errors import MemstoreError
from memstore.ops.cli_help import tidy_parameters
from memstore.ops.options import meant
from memstore.ops.output import printable

# click's exceptions where typer has them: typer 0.29 vendors click (typer._click), an older
# typer uses click itself; typer.BadParameter is click's own class in both.
_CLICK_ERRORS = sys.modules[typer.BadParameter.__module__]

HELP = """Local-first memory for coding agents: markdown files in git, searched with BM25.

Example:  memstore add "use pnpm, not npm, in this repo" -K pnpm ; memstore search pnpm

The vault is $MEMSTORE_VAULT or ~/memstore (`memstore init` makes one); --vault PATH, after
a command or before it, names another. `memstore COMMAND --help` shows a command's options.
"""


class CommandList(typer.core.TyperGroup):
    """`memstore --help` lists each command with the whole first paragraph of its help
    (click's short help stops at the first '.', such as the one in 'e.g.'); every
    command's parameters read plainly in --help and errors (memstore/ops/cli_help.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in [self, *self.commands.values()]:
            tidy_parameters(command)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _CLICK_ERRORS.NoSuchOption as err:  # `--at` where the command has --as-of: say so
            params = err.ctx.command.params if err.ctx else []
            option = meant(err.option_name, {name for param in params for name in param.opts})
            if not option:
                raise
            message = f"No such option: {err.option_name}. Did you mean {option}?"
            raise _CLICK_ERRORS.UsageError(message, err.ctx) from None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                first = (command.short_help or command.help or "").split("\n\n")[0]
                rows.append((name, " ".join(first.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"memstore {__version__}")
        raise typer.Exit()


def main_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """memstore keeps what agents and people learn as markdown files in a git repository.

    Example:  memstore add "use pnpm, not npm, in this repo" -K pnpm
    """


def new_app() -> typer.Typer:
    """Return the root app, without commands: `memstore --version` and the help's frame."""
    app = typer.Typer(
        cls=CommandList,
        help=HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        # Plain click help: typer's rich help shows "<bool>" beside every flag (--all, --help),
        # as if it took a value; click reflows a docstring paragraph the same way.
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(main_options)
    return app


def run(app: typer.Typer) -> None:
    """Run the CLI; an expected failure is one line on stderr and exit status 1."""
    try:
        app()
    except MemstoreError as err:
        typer.echo(printable(f"Error: {err}"), err=True)
        sys.exit(1)
