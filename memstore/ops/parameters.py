"""The typer parameters the shells share (--vault, --json, -w, ID) and the settings they read.

Each shell (cli, agents, daemon, mcp) declares its commands in its own package; what they
have in common lives here, below them all, so no shell imports another. A fast command's
options are built from memstore/ops/options.py with `option`, the table the lean path reads.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from memstore.core.config import Settings
from memstore.ops import options
from memstore.ops.lean import complete_id, complete_workspace
from memstore.ops.output import render_json


def option(table: tuple[options.Option, ...], key: str, **settings: Any) -> Any:
    """Return the typer option for `key` of a fast command's table: its names and help from
    the table (`settings` add typer's own: metavar, completion, bounds, a help of its own)."""
    declared = options.find(table, key)
    settings.setdefault("help", declared.help)
    return typer.Option(*declared.names, **settings)


def _vault_in_effect(ctx: typer.Context, vault: Path | None) -> Path | None:
    """Return the --vault a command acts on: its own, else the one given to a group above it
    (`memstore remote --vault V add URL`). Every --vault of the CLI goes through here.

    Raises:
        typer.BadParameter: the group and the command name different folders.
    """
    given = [vault] if vault is not None else []
    parent = ctx.parent
    while parent is not None:  # the groups above this command, already parsed
        if parent.params.get("vault") is not None:
            given.append(Path(parent.params["vault"]))
        parent = parent.parent
    if len({os.path.realpath(os.path.expanduser(path)) for path in given}) > 1:
        shown = " and ".join(str(path) for path in given)
        raise typer.BadParameter(f"names two folders ({shown}); give it once")
    return given[0] if given else None


def _named(workspace: str | None) -> str | None:
    """Refuse `-w ""`: it used to mean the default workspace without a word."""
    if workspace is not None and not workspace.strip():
        raise typer.BadParameter("is empty; name a workspace, e.g. -w my-project")
    return workspace


VaultOption = Annotated[
    Path | None,
    typer.Option(
        *options.VAULT.names,
        metavar="PATH",
        help=options.VAULT.help,
        show_default=False,
        callback=_vault_in_effect,
    ),
]
JsonOption = Annotated[bool, typer.Option(*options.JSON.names, help=options.JSON.help)]
QuietOption = Annotated[bool, typer.Option(*options.QUIET.names, help=options.QUIET.help)]
WorkspaceOption = Annotated[
    str | None,
    typer.Option(
        *options.WORKSPACE.names,
        help=options.WORKSPACE.help,
        show_default=False,
        autocompletion=complete_workspace,
        callback=_named,
    ),
]
# -w as a filter (audit, export, view): only that workspace; none given means every one.
WorkspaceFilter = Annotated[
    str | None,
    typer.Option(
        "-w",
        "--workspace",
        help="Only this workspace.",
        autocompletion=complete_workspace,
        show_default=False,
    ),
]
IdArgument = Annotated[
    str,
    typer.Argument(
        metavar="ID", help="A memory id or a unique prefix of one.", autocompletion=complete_id
    ),
]


def shell_settings(vault: Path | None) -> Settings:
    """Read the environment once, here in the shell (every typer command shares this)."""
    return Settings.from_env(os.environ, home=Path.home(), vault=vault)


def emit_json(data: Any) -> None:
    """Print `data` as the JSON every --json prints."""
    typer.echo(render_json(data))
