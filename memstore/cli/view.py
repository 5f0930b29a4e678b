"""`memstore view`: one self-contained, private HTML page of the vault's history, health and links.

A thin typer shell over memstore.service.view_data (the data) and memstore.ops.view_page (the
page). The page is a file, never a server: nothing listens, and a browser opens only with --open.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import webbrowser
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from memstore.cli.terminal import progress_bar, say, working_folder
from memstore.core.errors import InvalidInputError
from memstore.ops.lean import unknown_workspace
from memstore.ops.output import render_json
from memstore.ops.parameters import (
    JsonOption,
    QuietOption,
    VaultOption,
    WorkspaceFilter,
    shell_settings,
)
from memstore.ops.view_page import render_page
from memstore.service.history import parse_date, parse_since
from memstore.service.store import Store
from memstore.service.view_data import collect_view

commands = typer.Typer()

# Where the page goes unless -o says otherwise: beside the index, outside git (.memstore/
# is ignored), readable by its owner only, rewritten by each `memstore view`.
DEFAULT_PAGE = Path(".memstore") / "view.html"


def open_in_browser(path: Path) -> bool:
    """Hand the page to the desktop's browser (tests replace this to see it asked for)."""
    return webbrowser.open(path.resolve().as_uri())


@commands.command()
def view(
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="FILE",
            help="Write the page here (default: .memstore/view.html in the vault).",
            show_default=False,
        ),
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the page in the desktop's browser.")
    ] = False,
    workspace: WorkspaceFilter = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DATE",
            help="Only changes since a date or age (2026-11-01, 7d, 12h, 30m).",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Write one self-contained HTML page of what the vault remembers, and print its path.

    The page shows every change (by session, agent and machine, with its diff and the
    command that undoes a session), each memory's history and links, the health queues of
    audit with the command that settles each item, and a picture of the vault. It makes no
    network request, is readable by you only (0600) and has credentials masked. Nothing
    opens unless you pass --open. With --json the data is written instead (to stdout
    unless -o names a file).

    Example:  memstore view --since 7d --open
    """
    if since is not None:
        _check_since(since)
    settings = shell_settings(vault)
    with Store.open(settings) as store, progress_bar("building the view", quiet=quiet) as step:
        data = collect_view(
            store,
            workspace=workspace,
            since=since,
            progress=step,
            vault_option=str(settings.vault) if vault else None,
            cwd=working_folder(),
        )
        # a typo should not pass for an empty page (docs/cli.md: a workspace it lacks)
        typer.echo(unknown_workspace(store, workspace, "shows nothing"), err=True, nl=False)
    if as_json and output is None:
        typer.echo(render_json(data))
        return
    target = output or settings.vault / DEFAULT_PAGE
    write_private(target, render_json(data) if as_json else render_page(data))
    say(str(target))
    if open_page and not open_in_browser(target):
        say(f"no browser to open; open {target} in one", err=True)


def _check_since(since: str) -> None:
    """A --since that is neither a date nor an age is a usage error (exit 2), as a bad
    option's value is, before the vault is opened."""
    try:
        parse_date(parse_since(since, datetime.now(UTC)), end_of_day=False)
    except InvalidInputError as err:
        raise typer.BadParameter(str(err)) from err


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner only (0600), atomically (temp + rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o600)  # an existing temp file keeps its mode under O_CREAT
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if not path.parent.exists():  # the folder is what is missing, not the file
            raise InvalidInputError(
                f"cannot write {path}: there is no folder {path.parent}; create it "
                f"(mkdir -p {shlex.quote(str(path.parent))}) or choose another file with -o"
            ) from err
        raise InvalidInputError(
            f"cannot write {path}: {err.strerror or err}; choose another file with -o"
        ) from err
