"""`memstore import`, `export` and `restore`: memories in from instruction files, out as JSON, back.

A thin typer shell over memstore.service.transfer.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from memstore.cli.terminal import progress_bar, say, working_folder
from memstore.core.model import summary
from memstore.ops.lean import unknown_workspace
from memstore.ops.output import count
from memstore.ops.parameters import (
    JsonOption,
    QuietOption,
    VaultOption,
    WorkspaceFilter,
    emit_json,
    shell_settings,
    valid_workspace,
)
from memstore.service.store import Store

commands = typer.Typer()


@commands.command("import")
def import_command(
    paths: Annotated[
        list[Path],
        typer.Argument(help="CLAUDE.md, AGENTS.md, .cursor/rules/*.mdc, .kiro/steering/*.md …"),
    ],
    workspace: Annotated[
        str | None,
        typer.Option(
            "-w",
            "--workspace",
            help="Workspace (default: detected from the file's repository).",
            callback=valid_workspace,
        ),
    ] = None,
    whole_file: Annotated[
        bool,
        typer.Option("--whole-file", help="One memory per file instead of one per bullet."),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be created.")] = False,
    vault: VaultOption = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Turn instruction files into memories of kind `imported` (the files are never edited).

    Example:  memstore import CLAUDE.md --dry-run
    """
    from memstore.ops.lean import add_workspace
    from memstore.service.importing import MIN_CHARS, import_files

    settings = shell_settings(vault)
    chosen = add_workspace(settings.vault, working_folder(), workspace)
    bar = progress_bar("importing", quiet=quiet or dry_run or as_json)
    with Store.open(settings, create=True) as store, bar as step:
        report = import_files(
            store,
            paths,
            workspace=chosen,
            whole_file=whole_file,
            dry_run=dry_run,
            progress=step,
        )
    if as_json:
        ids, texts = ([], report.created) if dry_run else (report.created, [])
        emit_json(
            {
                "workspace": chosen,
                "dry_run": dry_run,
                "created": ids,
                "would_create": texts,
                "unchanged": report.unchanged,
                "refused": [{"text": text, "reason": why} for text, why in report.refused],
                "too_short": report.short,
            }
        )
        return
    if report.short:  # a line a person wrote is never left out unsaid
        shown = ", ".join(repr(summary(text, 30)) for text in report.short[:3])
        more = f" and {len(report.short) - 3} more" if len(report.short) > 3 else ""
        say(
            f"left out {count(len(report.short), 'piece', 'pieces')} under {MIN_CHARS} "
            f"characters (headings, not memories?): {shown}{more}; memstore add keeps one",
            err=True,
        )
    if dry_run:
        say(f"would create {count(len(report.created), 'memory', 'memories')} in {chosen}:")
        for text in report.created:
            say(f"  - {summary(text, 90)}")
        return
    if not quiet:
        say(
            f"created {count(len(report.created), 'memory', 'memories')} in {chosen}; "
            f"{report.unchanged} already there"
        )
    for text, reason in report.refused:
        say(f"  refused {text!r}: {reason}", err=True)


@commands.command()
def export(
    workspace: WorkspaceFilter = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write to this file (default: stdout)."),
    ] = None,
    vault: VaultOption = None,
) -> None:
    """Write every memory (id, front matter, body) as JSON.

    Example:  memstore export -o memory.json
    """
    from memstore.service.transfer import export_holding_back, held_back_message, write_export

    with Store.open(shell_settings(vault)) as store:
        data, held = export_holding_back(store, workspace)
        for path, kind in sorted(held.items()):
            say(held_back_message(path, kind), err=True)
        # a typo should not pass for an empty export (docs/cli.md: a workspace it lacks)
        typer.echo(unknown_workspace(store, workspace, "exported nothing"), err=True, nl=False)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if output:
        write_export(output, text)
        say(
            f"exported {count(len(data['memories']), 'memory', 'memories')} to {output}",
            err=True,
        )
    else:
        typer.echo(text, nl=False)


@commands.command()
def restore(
    file: Annotated[Path, typer.Argument(help="A file written by memstore export.")],
    vault: VaultOption = None,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
    allow_secret: Annotated[
        bool,
        typer.Option(
            "--allow-secret",
            help="Restore entries that look like they hold a credential anyway "
            "(memories kept with add --allow-secret).",
        ),
    ] = False,
) -> None:
    """Merge an export into the vault, all or nothing (ids kept, so supersede links survive).

    Example:  memstore restore memory.json
    """
    from memstore.service.transfer import read_export
    from memstore.service.transfer import restore as run_restore

    files = read_export(file)  # checked whole before the vault is opened or created
    bar = progress_bar("restoring", quiet=quiet or as_json)
    with Store.open(shell_settings(vault), create=True) as store, bar as step:
        report = run_restore(store, files, step, allow_secret=allow_secret)
    if as_json:
        kept_as_was = [{"path": path, "reason": why} for path, why in report.kept]
        emit_json({**asdict(report), "kept": kept_as_was})
        return
    kept = f", {len(report.kept)} kept as they were" if report.kept else ""
    if not quiet:
        say(
            f"restored: {report.added} added, {report.merged} merged, "
            f"{report.unchanged} unchanged{kept}"
        )
    for path, reason in report.kept:
        say(f"  kept {path}: {reason}", err=True)
