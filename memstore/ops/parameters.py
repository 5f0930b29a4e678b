"""The typer parameters the shells share (--vault, --json, -w, ID) and the settings they read.

Each shell (cli, agents, daemon, mcp) declares its commands in its own package; what they
have in common lives here, below them all, so no shell imports another. A fast command's
options are built from memstore/ops/options.py with `option`, the table the lean path reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from memstore.core.config import Settings
from memstore.core.errors import InvalidInputError
from memstore.core.model import ALL, check_kind, check_workspace
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


def same_folder(one: Path, other: Path) -> bool:
    """Say whether two paths typed on the command line name the same folder."""
    return os.path.realpath(os.path.expanduser(one)) == os.path.realpath(os.path.expanduser(other))


T = TypeVar("T")


def usage_checked(check: Callable[[str], T], value: str, hint: str | None = None) -> T:
    """Return `check(value)`; an InvalidInputError it raises becomes a usage error (exit 2,
    with the usage line), as typer's own bad values are: a value the command line got wrong,
    not a failure of the vault. `hint`: the option, for a check run in a command's body."""
    try:
        return check(value)
    except InvalidInputError as err:
        raise typer.BadParameter(str(err), param_hint=hint) from err


def _named(workspace: str | None) -> str | None:
    """Refuse `-w ""` (it used to mean the default workspace without a word) and a name no
    workspace can have (`-w "my space"`)."""
    if workspace is not None and not workspace.strip():
        raise typer.BadParameter("is empty; name a workspace, e.g. -w my-project")
    return valid_workspace(workspace)


def valid_workspace(workspace: str | None) -> str | None:
    return None if workspace is None else usage_checked(check_workspace, workspace)


def workspace_filter(workspace: str | None) -> str | None:
    """A -w that filters (list, stats, audit, export, view, conflicts): `all` is every
    workspace, as for search (no workspace can be named so), else a valid name."""
    return None if workspace == ALL else valid_workspace(workspace)


def kind_option(allowed: tuple[str, ...]) -> Callable[[str | None], str | None]:
    """Return a --kind callback refusing a kind outside `allowed` as a usage error."""

    def checked(kind: str | None) -> str | None:
        if kind is None:
            return None
        return usage_checked(lambda value: check_kind(value, allowed=allowed), kind)

    return checked


def date_option(value: str | None) -> str | None:
    """Read an --as-of as --since reads it: a date (kept: History reads it as the end of that
    day), an age (7d, 12h, 30m: made the moment it names) or an ISO date-time; anything else
    is a usage error."""
    from memstore.service.history import parse_since  # the history module only when asked

    if value is None:
        return None
    now = datetime.now(UTC)
    return usage_checked(lambda text: parse_since(text, now, option="--as-of"), value)


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
        callback=workspace_filter,
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
