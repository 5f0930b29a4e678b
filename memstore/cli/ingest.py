"""`memstore ingest`: chunk a source tree into the index so recall finds code beside memories.

A thin typer shell over Store.ingest (memstore/catalog/codebase.py does the work). A re-ingest of
a registered folder goes to the vault's daemon when one runs (memstore/ops/lean.py), printing
the same; an ingest done here starts the daemon after it, unless daemons are turned off.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from memstore.cli.terminal import progress_bar
from memstore.core.errors import InvalidInputError
from memstore.core.model import GLOBAL, to_workspace_name
from memstore.core.repo_name import detect_workspace
from memstore.ops import client, options
from memstore.ops.lean import complete_workspace
from memstore.ops.output import count, ingest_text, printable, render_json
from memstore.ops.parameters import (
    JsonOption,
    QuietOption,
    VaultOption,
    option,
    shell_settings,
    valid_workspace,
)
from memstore.service.store import Store

HELP = """Chunk a source tree by function and class into the index, so search and recall find code.

The code stays where it is: chunks are derived, kept under the vault's .memstore/ (never
committed), and brought up to date by running ingest again (only what changed is read).
A git repository's files are what git lists (its .gitignore honoured); binaries, files
over 1 MB, .git and node_modules are skipped. Hits show as path:start-end kind name.

\b
Examples:  memstore ingest ~/src/webshop -w webshop
           memstore ingest . --dry-run
           memstore ingest --list
           memstore ingest --remove ~/src/webshop
"""


commands = typer.Typer()


@commands.command(help=HELP)
def ingest(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="The folder to ingest (a repository, or any folder).", show_default=False
        ),
    ] = None,
    workspace: Annotated[
        str | None,
        option(
            options.INGEST,
            "workspace",
            autocompletion=complete_workspace,
            show_default=False,
            callback=valid_workspace,
        ),
    ] = None,
    dry_run: Annotated[bool, option(options.INGEST, "dry_run")] = False,
    list_roots: Annotated[bool, option(options.INGEST, "list")] = False,
    remove: Annotated[Path | None, option(options.INGEST, "remove", show_default=False)] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    chosen = [
        name
        for name, given in (("PATH", path), ("--list", list_roots), ("--remove", remove))
        if given
    ]
    if len(chosen) != 1:
        raise InvalidInputError(
            "give one of PATH, --list or --remove PATH"
            + (f" (got {' and '.join(chosen)})" if chosen else "")
            + "; e.g. memstore ingest ~/src/webshop"
        )
    settings = shell_settings(vault)
    with Store.open(settings) as store:
        if list_roots:
            _print_roots(store, as_json)
            return
        if remove is not None:
            root, dropped = store.forget_source(remove.expanduser())
            if as_json:
                typer.echo(render_json({"removed": root.path, "chunks_removed": dropped}))
            elif not quiet:
                typer.echo(printable(f"removed {root.path}: {count(dropped, 'chunk')} dropped"))
            return
        assert path is not None
        target = path.expanduser().resolve()
        registered = next((r for r, _ in store.source_roots() if r.path == str(target)), None)
        name = workspace or (registered.workspace if registered else _workspace_of(target))
        with progress_bar("chunking", quiet=quiet or as_json) as step:
            summary = store.ingest(target, name, dry_run=dry_run, progress=step)
    typer.echo(ingest_text(summary, as_json=as_json, quiet=quiet), nl=False)
    if not dry_run and client.daemon_allowed(os.environ):
        # As after an in-process search or add: from now on the daemon keeps the chunks
        # fresh as files are saved, and the next re-ingest is its work.
        client.start_daemon(settings.vault, os.environ)


def _workspace_of(folder: Path) -> str:
    detected = detect_workspace(folder)
    if detected is None:
        return to_workspace_name(folder.name) or GLOBAL
    return to_workspace_name(detected) or GLOBAL


def _print_roots(store: Store, as_json: bool) -> None:
    roots = store.source_roots()
    if as_json:
        typer.echo(
            render_json(
                [
                    {"path": r.path, "workspace": r.workspace, "added": r.added, "chunks": n}
                    for r, n in roots
                ]
            )
        )
        return
    if not roots:
        typer.echo("No source tree ingested; add one with: memstore ingest PATH")
        return
    for root, chunks in roots:
        gone = "" if Path(root.path).is_dir() else "  (folder gone)"
        typer.echo(printable(f"{root.path}  {root.workspace} · {count(chunks, 'chunk')}{gone}"))
